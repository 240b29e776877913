"""``caldrix run MODEL [PROMPT]``: one model in the terminal.

The model is opened the way the pool opens a member — the same reference resolution (with a
download progress bar), precheck, memory fit and serving flags; a model on a server
(``openai+http://…#MODEL``) is prechecked there and needs no fit — then either answers one
prompt and exits (given after the model, after ``-p``, or on stdin with ``-p`` alone), or runs
a chat. The chat answers its own ``/commands`` (``/help`` lists them) and sends nothing else that
looks like one to the model. The chat keeps the conversation as segments and renders it
through the model's own template each turn; the engine's live rows hold the conversation so
far, so a turn computes only the new message (the generation loop resumes from the longest
common prefix of the live rows and the new prompt).
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from types import FrameType
from typing import TextIO, cast

from rich.console import Console

from caldrix.cli.exit_codes import EXIT_CANCELLED, EXIT_OK
from caldrix.cli.run_prompt import one_prompt
from caldrix.engine_seam import (
    Engine,
    GenerationCancelled,
    GenerationParams,
    GenerationResult,
    ServedModel,
    ServingFlags,
    StreamingModel,
)
from caldrix.engines.loader import open_engine
from caldrix.engines.openai_remote import open_remote
from caldrix.errors import ContextOverflow
from caldrix.generation.decoding import run_generation
from caldrix.generation.templates import render_context
from caldrix.models.fit import check_fit, default_memory_limit, estimate_footprint, window_for
from caldrix.models.references import ResolvedModel, is_remote_reference, resolve_model

#: Typed at the chat prompt to leave (Ctrl-D does the same).
EXIT_COMMANDS: tuple[str, ...] = ("/exit", "/quit")
#: Typed at the chat prompt to forget the conversation (the system message stays).
CLEAR_COMMAND = "/clear"
#: Typed at the chat prompt to list the chat's commands.
HELP_COMMANDS: tuple[str, ...] = ("/help", "/?")
_HELP_ROWS = (
    (", ".join(HELP_COMMANDS), "these commands"),
    (CLEAR_COMMAND, "forget the conversation (the system message stays)"),
    (", ".join(EXIT_COMMANDS), "leave (Ctrl-D does the same)"),
    ("Ctrl-C", "stop the answer being written"),
    ("//text", "send a message that starts with / (as /text)"),
)
CHAT_HELP = "\n".join(f"{keys:<14}{meaning}" for keys, meaning in _HELP_ROWS)
CLEARED_LINE = "(conversation cleared; the system message stays)"
#: A chat command: a slash and a word, alone (``/etc/hosts is…`` is a message, not a command).
_COMMAND = re.compile(r"^/[A-Za-z?]+$")


def run_command(args: argparse.Namespace, flags: ServingFlags) -> int:
    prompt = one_prompt(args.words, args.prompt)  # before the model opens: a usage error is quick
    engine: ServedModel
    if is_remote_reference(args.model):
        engine = open_remote(args.model, flags)
        title = f"{args.model.partition('#')[2]} on {args.model.partition('#')[0].removeprefix('openai+')}"
    else:
        resolved = resolve_model(args.model, progress=True)
        check_run_fit(resolved, flags, args.memory_limit)
        engine = _open(resolved, flags)
        title = f"{resolved.name} ({resolved.info.architecture or 'legacy GGML'})"
    try:
        params = GenerationParams(
            max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed
        )
        chat = Chat(engine, params, system=args.system)
        if prompt is not None:
            return _answer_once(chat, prompt)
        return _interactive(chat, title)
    finally:
        engine.close()


def check_run_fit(resolved: ResolvedModel, flags: ServingFlags, memory_limit: int | None) -> None:
    """The fit ``caldrix run`` applies: the model alone, with no prefix-store budget."""
    n_ctx = window_for(resolved.info, flags.ctx)
    footprint = estimate_footprint(resolved.info, n_ctx, flags.batch)
    limit = memory_limit if memory_limit is not None else default_memory_limit()
    check_fit(footprint, [], limit, budget_per_member=0)


def _open(resolved: ResolvedModel, flags: ServingFlags) -> Engine:
    if sys.stderr.isatty():
        with Console(stderr=True).status(f"loading {resolved.name}"):
            return open_engine(resolved.path, flags)
    return open_engine(resolved.path, flags)


@dataclass
class Chat:
    """A conversation with one engine, kept as segments."""

    engine: ServedModel
    params: GenerationParams
    system: str | None = None
    segments: list[dict[str, object]] = field(default_factory=list)
    turns: int = 0

    def __post_init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.segments = []
        if self.system:
            self.segments.append(_segment("system", "system", self.system))

    def ask(self, text: str, sink: TerminalSink) -> GenerationResult:
        """Answer ``text``; the answer (or what was streamed before a cancel) joins the
        conversation. When the conversation no longer fits the window, its oldest
        exchanges are dropped (the system message stays)."""
        self.turns += 1
        self.segments.append(_segment(f"u{self.turns}", "user", text))
        while True:
            rendered = render_context(self.engine, self.segments)
            try:
                result = self._generate(rendered.prompt_tokens, rendered.prompt_text, sink)
                break
            except ContextOverflow:
                if not self._drop_oldest_exchange():
                    self.segments.pop()
                    raise
            except GenerationCancelled as cancelled:
                result = cancelled.partial
                break
        self.segments.append(_segment(f"a{self.turns}", "assistant", result.text))
        return result

    def _generate(self, prompt: list[int], text: str, sink: TerminalSink) -> GenerationResult:
        if isinstance(self.engine, StreamingModel):
            return self.engine.stream_generation(prompt, self.params, sink, prompt_text=text)
        return run_generation(cast(Engine, self.engine), prompt, self.params, sink)

    def _drop_oldest_exchange(self) -> bool:
        first = 1 if self.system else 0
        if len(self.segments) - first <= 1:
            return False
        del self.segments[first : first + 2]
        return True


def _segment(segment_id: str, role: str, text: str) -> dict[str, object]:
    return {"id": segment_id, "role": role, "text": text, "pinned": False}


class TerminalSink:
    """Streams tokens to ``out``; Ctrl-C (while :meth:`interruptible`) cancels the generation."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._cancel = False

    def progress(self, done: int, total: int) -> None:
        if sys.stderr.isatty() and done < total:
            print(f"\r\x1b[2mreading the prompt: {done}/{total} tokens\x1b[0m", end="", file=sys.stderr)
        elif sys.stderr.isatty():
            print("\r\x1b[2K", end="", file=sys.stderr, flush=True)

    def token(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def cancelled(self) -> bool:
        return self._cancel

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Within this block the first Ctrl-C cancels the generation instead of killing us."""
        self._cancel = False

        def on_interrupt(_signum: int, _frame: FrameType | None) -> None:
            self._cancel = True

        previous = signal.signal(signal.SIGINT, on_interrupt)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def _answer_once(chat: Chat, prompt: str) -> int:
    sink = TerminalSink(sys.stdout)
    with sink.interruptible():
        result = chat.ask(prompt, sink)
    sys.stdout.write("\n")
    sys.stdout.flush()
    if sink.cancelled():
        print("caldrix: cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    if result.finish == "length":  # on stderr: stdout holds the answer alone, for a pipe
        print(f"caldrix: {stopped_note(result)}", file=sys.stderr)
    return EXIT_OK


def stopped_note(result: GenerationResult) -> str:
    """What a cut answer says: it ended at the token limit, not because it was done."""
    return f"[stopped at {result.completion_tokens} tokens]"


def _interactive(chat: Chat, title: str) -> int:
    console = Console(highlight=False, soft_wrap=True)
    tty = sys.stdin.isatty()
    if tty:
        _enable_line_editing()
        console.print(
            f"[bold]{title}[/], window {chat.engine.n_ctx} tokens — "
            f"{EXIT_COMMANDS[0]} or Ctrl-D to leave, {CLEAR_COMMAND} to start over"
        )
    while True:
        try:
            line = console.input("[bold cyan]>[/] " if tty else "")
        except EOFError:
            if tty:  # Ctrl-D left the cursor after "> ": the shell's prompt gets its own line
                console.print()
            break
        except KeyboardInterrupt:
            console.print()
            continue
        text = line.strip()
        if text in EXIT_COMMANDS:
            break
        if _COMMAND.match(text):
            chat_command(chat, text, console)
        elif text:
            _chat_turn(chat, text.removeprefix("/") if text.startswith("//") else text, console)
    return EXIT_OK


def chat_command(chat: Chat, command: str, console: Console) -> None:
    """Answer one of the chat's own commands; an unknown one is refused, never sent."""
    if command in HELP_COMMANDS:
        console.print(CHAT_HELP, markup=False)
    elif command == CLEAR_COMMAND:
        chat.clear()
        console.print(CLEARED_LINE, style="dim", markup=False)
    else:
        console.print(
            f"unknown command {command}; {HELP_COMMANDS[0]} lists the chat's commands",
            style="yellow",
            markup=False,
        )


def _chat_turn(chat: Chat, text: str, console: Console) -> None:
    sink = TerminalSink(sys.stdout)
    try:
        with sink.interruptible():
            result = chat.ask(text, sink)
    except ContextOverflow as exc:
        console.print(exc.message, style="red", markup=False)
        return
    sys.stdout.write("\n")
    sys.stdout.flush()
    if sink.cancelled():
        console.print("(interrupted)", style="dim")
    elif result.finish == "length":
        console.print(stopped_note(result), style="dim", markup=False)
    sys.stdout.flush()


def _enable_line_editing() -> None:
    """Arrow keys and history at the prompt, where the platform has readline."""
    with suppress(ImportError):  # importing readline is what turns it on; not every Python has it
        import readline  # noqa: F401

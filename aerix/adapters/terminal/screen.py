"""The interactive screen: an inline prompt_toolkit application under a rich transcript.

The scrollback keeps what was printed (:mod:`.scrollback`); under it the live region
(:mod:`.live_region`) and the prompt editor: multi-line, the project's history, ``/`` completion,
paste. The screen queues what the user types and hands it to the conversation in order
(``next_input``); while a request runs, its events become transcript lines and figures; Esc
cancels it; the root's first plan of a request waits here (``review``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.key_binding import KeyPressEvent
from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from aerix.adapters.terminal.ansi import render_ansi
from aerix.adapters.terminal.editor import edit_in_editor, inline_application, prompt_buffer
from aerix.adapters.terminal.help import help_block
from aerix.adapters.terminal.keys import Mode, key_bindings
from aerix.adapters.terminal.live_lines import Activity
from aerix.adapters.terminal.live_region import LiveState, live_lines
from aerix.adapters.terminal.scrollback import Scrollback
from aerix.adapters.terminal.theme import DIM, EMBER, ERROR, THINKING_FRAME_SECS
from aerix.adapters.terminal.transcript import Transcript, plan_block, prompt_echo
from aerix.adapters.terminal.views import (
    finished_lines,
    opening_blocks,
    startup_failed_block,
)
from aerix.app.ports.diffs import DiffFigures
from aerix.app.ports.request import LiveProjection, PlanReview, RequestControls, RequestResult
from aerix.app.ports.screen import Command, Opening, Prompt, StatusFactory, UserInput
from aerix.app.ports.sessions import SessionSummary
from aerix.domain import events as ev
from aerix.domain.diffs import RequestDiff

#: Commands the screen answers itself, and those it hands to the conversation.
SCREEN_COMMANDS: Final = ("help", "exit")
SESSION_COMMANDS: Final = ("clear", "resume")
INTERRUPT_HINT: Final = "ctrl-c again to exit"


class TerminalScreen:
    """:class:`aerix.app.conversation.ConversationScreen` on the terminal."""

    def __init__(
        self, version: str, cwd: Path, history: Path, figures: StatusFactory, editor: str | None = None
    ) -> None:
        self.version = version
        self.cwd = cwd
        self.editor = editor
        self.mode: Mode = "prompt"
        self.skills: tuple[str, ...] = ()
        self.queue: list[UserInput] = []
        self._input_ready = asyncio.Event()
        self.exiting = False
        self.new_figures = figures
        self.figures = figures()
        self.transcript = Transcript()
        self.controls: RequestControls | None = None
        self.began = 0.0
        self.cancelling = False
        self.streaming = 0
        self.session_diff: DiffFigures | None = None
        self.hint = "starting: finding the pool and binding its members…"
        self.session_id: str | None = None  # the session the next prompt goes to
        self.session_written: str | None = None  # the last session a request was written to
        self.interrupt_armed = False
        self._shown_notes: set[str] = set()
        self._gate: asyncio.Future[PlanReview] | None = None
        self._gate_text = ""
        self._draft = ""
        self._picks: Sequence[SessionSummary] = ()
        self._pick_index = 0
        self._picked: asyncio.Future[str | None] | None = None
        read_only = Condition(lambda: self.mode in ("gate", "pick"))
        self.buffer = prompt_buffer(history, self._completions, read_only, self._disarm)
        self.app = inline_application(self.buffer, self._live_text, self._has_live, key_bindings(self))
        self.app.before_render += self._before_render
        self.scrollback = Scrollback(self.app.output, self._width)

    # -- the application ------------------------------------------------------------------

    def _width(self) -> int:
        return self.app.output.get_size().columns

    def _has_live(self) -> bool:
        return bool(live_lines(self._live_state(), self._width()))

    def _live_state(self) -> LiveState:
        running = self.controls is not None
        elapsed = time.monotonic() - self.began if running else 0.0
        activity = Activity(elapsed, len(self._queued_prompts()), self.cancelling, self.streaming)
        return LiveState(
            figures=self.figures,
            running=running,
            activity=activity,
            running_calls=self.transcript.running() if running else (),
            queued=self._queued_prompts(),
            session_diff=self.session_diff,
            gate=self.mode == "gate",
            gate_edit=self.mode == "gate-edit",
            picks=self._picks if self.mode == "pick" else (),
            pick_index=self._pick_index,
            hint=INTERRUPT_HINT if self.interrupt_armed else self.hint,
        )

    def _live_text(self) -> ANSI:
        width = self._width()
        return ANSI(render_ansi(Group(*live_lines(self._live_state(), width)), width).rstrip("\n"))

    def _queued_prompts(self) -> list[str]:
        return [item.text for item in self.queue if isinstance(item, Prompt)]

    def _before_render(self, _app: object) -> None:
        if self.scrollback.width_changed():
            self.app.create_background_task(self.scrollback.redraw())

    async def run(self, conversation: Callable[[], Awaitable[int]]) -> int:
        """Run the application while ``conversation`` runs; its exit code."""
        ticker = asyncio.ensure_future(self._tick())
        running = asyncio.Event()
        app_task = asyncio.ensure_future(self.app.run_async(pre_run=running.set))
        await running.wait()  # so that exiting below finds it running, however soon that is
        try:
            code = await conversation()
        finally:
            ticker.cancel()
            if self.app.is_running:
                self.app.exit(result=0)
            await app_task
        if self.session_written is not None:
            self.scrollback.print(
                Text(f"session {self.session_written} · aerix --resume {self.session_written}", style=DIM)
            )
        return code

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(THINKING_FRAME_SECS)
            if self.controls is not None:
                self.app.invalidate()

    def print(self, renderable: Any) -> None:
        self.scrollback.print(renderable)
        self.app.invalidate()

    # -- keys -----------------------------------------------------------------------------

    def enter(self, event: KeyPressEvent) -> None:
        if self.mode == "gate":
            self._decide(PlanReview("accept"))
            return
        if self.mode == "pick":
            self._pick(self._picks[self._pick_index].id if self._picks else None)
            return
        text = self.buffer.text
        if text.endswith("\\"):
            self.buffer.text = text[:-1] + "\n"
            self.buffer.cursor_position = len(self.buffer.text)
            return
        if self.mode == "gate-edit":
            edited = text
            self.mode = "prompt"
            self.buffer.set_document(Document(self._draft, len(self._draft)), bypass_readonly=True)
            self._decide(
                PlanReview("edit", edited)
                if edited.strip() != self._gate_text.strip()
                else PlanReview("accept")
            )
            return
        if not text.strip():
            return
        self.buffer.append_to_history()
        self.buffer.reset()
        self.submit(text)

    def submit(self, text: str) -> None:
        """What the user sent: a screen command, a session command, or a prompt for the queue."""
        stripped = text.strip()
        if stripped.startswith("/"):
            name, _, args = stripped[1:].partition(" ")
            if name == "help":
                self.show_help()
                return
            if name == "exit":
                self._exit()
                return
            if name in SESSION_COMMANDS:
                self.print(prompt_echo(stripped))
                self._enqueue(Command(name, args.strip()))
                return
            if name not in self.skills:
                self.print(
                    Text(f"/{name} is neither a command nor a skill; /help lists the commands", style=ERROR)
                )
                return
        self._enqueue(Prompt(text))

    def _enqueue(self, item: UserInput) -> None:
        self.queue.append(item)
        self._input_ready.set()
        self.app.invalidate()

    def escape(self) -> None:
        if self.mode == "gate":
            self._decide(PlanReview("abort"))
        elif self.mode == "gate-edit":
            self.mode = "gate"
            self.buffer.set_document(Document(self._draft, len(self._draft)), bypass_readonly=True)
        elif self.mode == "pick":
            self._pick(None)
        elif self.controls is not None and not self.cancelling:
            self.cancelling = True
            self.controls.cancel.set()
        self.app.invalidate()

    def interrupt(self, event: KeyPressEvent) -> None:
        if self.buffer.text and self.mode == "prompt":
            self.buffer.reset()
            return
        if self.interrupt_armed:
            self._exit()
            return
        self.interrupt_armed = True
        self.app.invalidate()

    def _disarm(self) -> None:
        self.interrupt_armed = False

    def end_of_input(self, event: KeyPressEvent) -> None:
        self._exit()

    def show_help(self) -> None:
        self.print(help_block())

    def _exit(self) -> None:
        self.exiting = True
        if self.controls is not None and not self.cancelling:
            self.cancelling = True
            self.controls.cancel.set()
        if self._gate is not None and not self._gate.done():
            self._gate.set_result(PlanReview("abort"))
        if self._picked is not None and not self._picked.done():
            self._picked.set_result(None)
        self._input_ready.set()
        self.app.invalidate()

    def _completions(self) -> Sequence[str]:
        return (*SCREEN_COMMANDS, *SESSION_COMMANDS, *self.skills)

    # -- the plan gate and the picker ------------------------------------------------------

    async def review(self, agent: str, text: str) -> PlanReview:
        self.print(plan_block(agent, text))
        if self.exiting:
            return PlanReview("abort")
        self._gate = asyncio.get_running_loop().create_future()
        self._gate_text = text
        self.mode = "gate"
        self.app.invalidate()
        try:
            review = await self._gate
        finally:
            self._gate = None
            self.mode = "prompt"
            self.app.invalidate()
        said = {"accept": "plan accepted", "edit": "plan edited", "abort": "plan aborted"}[review.decision]
        self.print(Text(said, style=EMBER if review.decision != "abort" else ERROR))
        if review.decision == "edit" and review.text:
            self.print(plan_block(agent, review.text, title="plan as edited"))
        return review

    def _decide(self, review: PlanReview) -> None:
        if self._gate is not None and not self._gate.done():
            self._gate.set_result(review)

    def gate_edit(self) -> None:
        if self.editor:
            self.app.create_background_task(self._edit_in_editor(self.editor))
            return
        self._draft = self.buffer.text
        self.mode = "gate-edit"
        self.buffer.set_document(Document(self._gate_text, len(self._gate_text)), bypass_readonly=True)
        self.app.invalidate()

    async def _edit_in_editor(self, editor: str) -> None:
        returncode, edited = await edit_in_editor(editor, self._gate_text)
        if returncode != 0:
            self.print(Text(f"the editor exited {returncode}; the plan still waits", style=ERROR))
            return
        changed = edited.strip() != self._gate_text.strip()
        self._decide(PlanReview("edit", edited) if changed and edited.strip() else PlanReview("accept"))

    async def pick_session(self, entries: Sequence[SessionSummary]) -> str | None:
        self._picks, self._pick_index = entries, 0
        self._picked = asyncio.get_running_loop().create_future()
        self.mode = "pick"
        self.app.invalidate()
        try:
            return await self._picked
        finally:
            self.mode, self._picks, self._picked = "prompt", (), None
            self.app.invalidate()

    def pick_move(self, step: int) -> None:
        shown = min(len(self._picks), 10)
        if shown:
            self._pick_index = (self._pick_index + step) % shown
        self.app.invalidate()

    def _pick(self, session_id: str | None) -> None:
        if self._picked is not None and not self._picked.done():
            self._picked.set_result(session_id)

    # -- the conversation's side -------------------------------------------------------------

    def opened(self, opening: Opening) -> None:
        self.skills = opening.skills
        self.hint = ""
        self._shown_notes = {note.text for note in opening.notes}
        self.session_id = opening.session_id
        for block in opening_blocks(opening, self.version, self._width()):
            self.print(block)

    def failed_to_open(self, line: str) -> None:
        self.hint = ""
        self.print(startup_failed_block(line))

    async def next_input(self) -> UserInput | None:
        while not self.queue:
            if self.exiting:
                return None
            self._input_ready.clear()
            await self._input_ready.wait()
        if self.exiting:
            return None
        item = self.queue.pop(0)
        self.app.invalidate()
        return item

    def request_started(self, prompt: str, controls: RequestControls) -> None:
        self.controls, self.cancelling, self.streaming = controls, False, 0
        self.began = time.monotonic()
        self.transcript = Transcript()
        self.print(Padding(prompt_echo(prompt), (1, 0, 0, 0)))

    def note(self, line: str) -> None:
        if line not in self._shown_notes:
            self._shown_notes.add(line)
            self.print(Text.assemble(("▲ ", EMBER), line))

    def projections(self) -> Mapping[str, LiveProjection]:
        return {"status figures": self.figures}

    def event(self, record: ev.EventBase) -> None:
        if isinstance(record, ev.Message) and record.agent == "a1" and record.role == "assistant":
            self.streaming = 0
        for line in self.transcript.lines(record):
            self.print(line)
        self.app.invalidate()

    def token(self, agent: str, text: str) -> None:
        if agent == "a1":
            self.streaming += 1

    def request_ended(self, result: RequestResult) -> None:
        self.controls = None
        self.session_written = result.session_id
        for block in finished_lines(result, self.figures):
            self.print(block)

    def request_failed(self, line: str) -> None:
        self.controls = None
        self.print(Text.assemble(("✗ ", ERROR), line))

    def session_diff_changed(self, diff: RequestDiff) -> None:
        self.session_diff = diff if diff.in_git else None

    def session_changed(self, session_id: str, resumed: bool) -> None:
        self.figures, self.session_diff, self.session_id = self.new_figures(), None, session_id
        state = "resumed" if resumed else "new"
        self.print(Text.assemble(("session ", "dim"), (session_id, "bold"), f" {state}"))

    def say(self, line: str) -> None:
        self.print(Text(line))

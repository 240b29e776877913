"""Command-line parsing for ``caldrix``. Each command parses its flags here and calls one
function elsewhere; nothing in this module does the work itself. It imports nothing heavy (no
pydantic, no protocol models): each command's module loads when the command runs."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from caldrix import __version__
from caldrix.cli.exit_codes import EXIT_FAILED, EXIT_USAGE
from caldrix.cli.run_prompt import STDIN_PROMPT
from caldrix.errors import CaldrixError, UsageError, one_line
from caldrix.limits import FLASH_ATTENTION_EXACT_ROWS, SHUTDOWN_GRACE_SECS
from caldrix.protocol.roles import DECISION_MEMBER, MAIN_MEMBER
from caldrix.protocol.transport import default_socket_path

if TYPE_CHECKING:
    from pydantic import ValidationError

    from caldrix.engine_seam import ServingFlags

#: The pool exits after this many seconds with no connection open (0 = never).
DEFAULT_IDLE_TIMEOUT_SECS = 1800


class _Parser(argparse.ArgumentParser):
    """argparse, but a refused command line exits with EXIT_USAGE (64, as aerix's), and a
    mistyped command or choice is answered with the nearest one."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is None or value in action.choices:
            return
        choices = [str(choice) for choice in action.choices]
        nearest = next(iter(difflib.get_close_matches(str(value), choices, n=1)), None)
        if nearest is not None:
            message = f"invalid choice {value!r}; did you mean {nearest!r}?"
        else:
            message = f"invalid choice {value!r} (choose from {', '.join(choices)})"
        raise argparse.ArgumentError(action, message)


def add_serving_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that shape how a model is served, shared by ``run`` and ``pool``."""
    group = parser.add_argument_group("serving flags")
    group.add_argument(
        "--ctx", type=int, metavar="N", help="context window in tokens (default: the model's, at most 8192)"
    )
    group.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="CPU threads for the engine (default: every CPU this process may run on)",
    )
    group.add_argument(
        "--batch", type=int, metavar="N", help="rows evaluated per prefill batch (default 256)"
    )
    group.add_argument(
        "--flash-attention",
        action="store_true",
        help="llama.cpp's flash attention: long prefills 1.2-1.4x faster; every resume then "
        f"recomputes at least {FLASH_ATTENTION_EXACT_ROWS} rows "
        f"(needs --batch {2 * FLASH_ATTENTION_EXACT_ROWS} or more)",
    )
    group.add_argument(
        "--max-batch", type=int, default=1, metavar="N", help="streams per member; only 1 is served"
    )
    group.add_argument(
        "--engine",
        choices=["auto", "llamacpp", "ctransformers", "scripted"],
        default="auto",
        help="which engine opens the file (default: by the file's magic; scripted is for tests)",
    )
    group.add_argument(
        "--script",
        metavar="FILE",
        help="with --engine scripted: a JSON file of completions, one per generation",
    )
    group.add_argument(
        "--script-prefill",
        action="store_true",
        help="with --engine scripted: load the weights and compute every row (real prefill cost)",
    )
    group.add_argument(
        "--chat-template",
        metavar="TEMPLATE",
        help="Jinja chat template or 'chatml', for model files that carry none",
    )
    group.add_argument(
        "--model-type", metavar="ARCH", help="architecture of a legacy GGML file (gpt2, llama, …)"
    )
    group.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="for an openai+http(s):// model: the environment variable holding the server's API key",
    )
    group.add_argument(
        "--memory-limit",
        type=int,
        metavar="BYTES",
        help="memory the loaded models may use (default: a share of available memory)",
    )


def serving_flags_from(args: argparse.Namespace) -> ServingFlags:
    # Here, not at the top: only run and pool (the daemon) serve a model, and pydantic's models
    # would cost every other command (--version, pool stop, pool status) most of its time.
    from pydantic import ValidationError

    from caldrix.engine_seam import ServingFlags

    values: dict[str, object] = {
        "ctx": args.ctx,
        "threads": args.threads,
        "max_batch": args.max_batch,
        "engine": args.engine,
        "chat_template": args.chat_template,
        "model_type": args.model_type,
        "script": args.script,
        "api_key_env": args.api_key_env,
        "script_prefill": args.script_prefill,
        "flash_attention": args.flash_attention,
    }
    if args.batch is not None:
        values["batch"] = args.batch
    try:
        return ServingFlags.model_validate(values)
    except ValidationError as exc:
        raise UsageError(_flag_problem(exc)) from None


def _flag_problem(exc: ValidationError) -> str:
    """A serving flag's validation error as the one line a person reads, naming the flag."""
    first = exc.errors()[0]
    flag = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "a serving flag"
    reason = str(first["msg"]).removeprefix("Value error, ")
    return f"{flag}: {reason[0].lower()}{reason[1:]}"


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = _Parser(
        prog="caldrix",
        description="caldrix serves local models: a pool daemon on a Unix socket, or one model in a shell.",
        epilog="Model references: a path to a .gguf file, an embedded name (smollm2-135m, "
        "qwen2.5-coder-0.5b, qwen2.5-coder-1.5b), "
        "an https:// URL, hf:owner/repo/file.gguf, or a model on an OpenAI-compatible server, "
        "openai+http://HOST:PORT/v1#MODEL. Downloads go to $XDG_CACHE_HOME/caldrix/models.",
    )
    parser.add_argument("--version", action="version", version=f"caldrix {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    _add_run(commands)
    _add_pool(commands)
    _add_serve(commands)
    models = commands.add_parser(
        "models",
        help="the model cache: list, pull, check",
        description="Manage the model cache in $XDG_CACHE_HOME/caldrix/models.",
    )
    model_commands = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    model_commands.add_parser("list", help="list cached models")
    pull = model_commands.add_parser("pull", help="download or copy a model into the cache")
    pull.add_argument("model", metavar="MODEL")
    check = model_commands.add_parser("check", help="precheck a model file and report its figures")
    check.add_argument("model", metavar="MODEL")
    check.add_argument("--ctx", type=int, metavar="N", help="window to size the footprint for")
    return parser


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help="chat with a model in the terminal, or answer one prompt",
        description="Open a model and chat with it, or answer one prompt and exit "
        '(caldrix run MODEL "PROMPT", or -p PROMPT; -p alone reads the prompt from stdin).',
    )
    run.add_argument(
        "model",
        metavar="MODEL",
        help="model reference (path, smollm2-135m, URL, hf:…, openai+http://…#MODEL)",
    )
    run.add_argument("words", nargs="?", metavar="PROMPT", help="answer this prompt and exit")
    run.add_argument(
        "-p",
        "--prompt",
        nargs="?",
        const=STDIN_PROMPT,
        metavar="PROMPT",
        help="answer this prompt and exit; without PROMPT, read it from stdin",
    )
    run.add_argument("--system", help="a system message to start the chat with")
    run.add_argument(
        "--max-new-tokens", type=int, default=512, metavar="N", help="tokens per answer (default 512)"
    )
    run.add_argument("--temperature", type=float, default=0.0, help="0 is greedy (default)")
    run.add_argument("--seed", type=int, help="sampling seed")
    add_serving_flags(run)


def _add_pool(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``caldrix pool [flags]`` runs the daemon; ``pool stop`` and ``pool status`` are their
    own subcommands, so their ``--help`` shows their two flags, not the daemon's serving flags."""
    pool = commands.add_parser(
        "pool",
        help="run the pool daemon, or stop it / ask its status",
        description="Run the model-pool daemon on a Unix socket (caldrix-protocol 2). "
        "It stays up until 'caldrix pool stop' or --idle-timeout with no connection open.",
    )
    socket_help = f"Unix socket path (default {default_socket_path()})"
    pool.add_argument("--socket", type=Path, default=None, metavar="PATH", help=socket_help)
    pool.add_argument(
        "--load",
        action="append",
        default=[],
        metavar="MODEL",
        help=f"load this model as a member before binding (repeatable; the first is '{MAIN_MEMBER}')",
    )
    pool.add_argument(
        "--decision", metavar="MODEL", help=f"load this model as the '{DECISION_MEMBER}' member"
    )
    pool.add_argument(
        "--frames", choices=["cbor", "json"], default="cbor", help="frame payload encoding (default cbor)"
    )
    pool.add_argument(
        "--context-budget",
        type=int,
        metavar="BYTES",
        help="prefix-store bytes per member "
        "(default: a quarter of the memory limit, at most 8 GiB; 0 keeps none)",
    )
    pool.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT_SECS,
        metavar="SECS",
        help="exit after this long with no connection open (default 1800; 0 = never)",
    )
    pool.add_argument(
        "--shutdown-grace",
        type=float,
        default=SHUTDOWN_GRACE_SECS,
        metavar="SECS",
        help="on SIGTERM or SIGINT, let running requests finish for up to this long (default 10; "
        "0 cancels them at once)",
    )
    pool.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="concurrent generations served (default 4)",
    )
    add_serving_flags(pool)
    pool.set_defaults(action=None)
    actions = pool.add_subparsers(dest="action", metavar="ACTION", title="or, to a running pool")
    # SUPPRESS: ``caldrix pool --socket P stop`` keeps P rather than the subcommand's default.
    stop = actions.add_parser("stop", help="ask the running pool to stop, and wait until it has")
    stop.add_argument("--socket", type=Path, default=argparse.SUPPRESS, metavar="PATH", help=socket_help)
    status = actions.add_parser("status", help="members, contexts, connections, prefix-store figures")
    status.add_argument("--socket", type=Path, default=argparse.SUPPRESS, metavar="PATH", help=socket_help)
    status.add_argument("--json", action="store_true", help="print the raw reply as JSON")


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``caldrix serve`` and ``caldrix launch claude``: the HTTP front, alone or with Claude Code.
    Their defaults are named in :mod:`caldrix.front.settings`, which imports nothing heavy."""
    from caldrix.front.settings import (
        DEFAULT_HOST,
        DEFAULT_MAX_OUTPUT_TOKENS,
        DEFAULT_PORT,
        DEFAULT_TOOL_TEXT,
        LAUNCH_MODEL,
        LAUNCH_POOL_FLAGS,
        LAUNCH_TOOL_TEXT,
    )

    serve = commands.add_parser(
        "serve",
        help="serve the pool over HTTP: Anthropic's Messages API and OpenAI's Chat Completions",
        description="An HTTP front on the pool (docs/http-front.md): POST /v1/messages, "
        "/v1/messages/count_tokens and /v1/chat/completions, on 127.0.0.1 unless --host says otherwise.",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument(
        "--api-key",
        metavar="KEY",
        help="serve only requests carrying KEY (x-api-key or Authorization: Bearer); "
        "required off loopback; also CALDRIX_SERVE_API_KEY",
    )
    serve.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="PATTERN=MEMBER",
        help="route request model names matching PATTERN (shell-style, claude-*haiku*) to MEMBER; "
        "repeatable, first match wins",
    )
    serve.add_argument(
        "--default-member",
        default=MAIN_MEMBER,
        metavar="MEMBER",
        help=f"the member a model name no route or member matches runs on (default {MAIN_MEMBER})",
    )
    serve.add_argument(
        "--max-output-tokens",
        action="append",
        default=[],
        metavar="[MEMBER=]N",
        help=f"most tokens one reply may decode (default {DEFAULT_MAX_OUTPUT_TOKENS}); "
        "MEMBER=N for one member",
    )
    serve.add_argument(
        "--tool-text",
        action="append",
        default=[],
        metavar="[MEMBER=]MODE",
        help=f"how a request's tools are written into its prompt (default {DEFAULT_TOOL_TEXT}): full, "
        "or brief (each description's first paragraph, the parameters' shape without their words; "
        "calls are still held to the full schema); MEMBER=MODE for one member",
    )
    serve.add_argument(
        "--log-requests",
        type=Path,
        metavar="DIR",
        help="write every request (headers, body) into DIR, numbered",
    )
    serve.add_argument("--max-body-bytes", type=int, metavar="N", help="largest request body read")
    serve.add_argument("--max-connections", type=int, metavar="N", help="HTTP connections served at once")
    serve.add_argument(
        "--ping-interval",
        type=float,
        metavar="SECS",
        help="seconds between a stream's ping events (default 3)",
    )
    serve.add_argument(
        "--resend-grace",
        type=float,
        metavar="SECS",
        help="seconds a generation goes on after its client left, for a resend of the same "
        "request to take over (default 60; 0 cancels it at once)",
    )
    _add_pool_finding(serve, load_default=None, flags_default=None)

    launch = commands.add_parser(
        "launch",
        help="run Claude Code on the pool: caldrix launch claude [-- ARGS]",
        description="Find or start the pool, start a front on a free local port, and run claude with "
        "ARGS (after --) and the environment it needs to use the front (docs/http-front.md, Launch).",
    )
    launch.add_argument("program", choices=["claude"], help="the program to run")
    launch.add_argument("--claude", metavar="PATH", help="the claude program (default: claude on PATH)")
    launch.add_argument(
        "--onboarded",
        action="store_true",
        help="set hasCompletedOnboarding in Claude Code's .claude.json ($CLAUDE_CONFIG_DIR or ~)",
    )
    launch.add_argument(
        "--serve-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="pass FLAG to the front (repeatable): --serve-flag=--log-requests=DIR; the front gets "
        f"--tool-text {LAUNCH_TOOL_TEXT} unless a FLAG sets --tool-text",
    )
    _add_pool_finding(launch, load_default=LAUNCH_MODEL, flags_default=LAUNCH_POOL_FLAGS)


def _add_pool_finding(
    parser: argparse.ArgumentParser, *, load_default: str | None, flags_default: str | None
) -> None:
    socket_help = f"the pool's Unix socket (default {default_socket_path()})"
    parser.add_argument("--socket", type=Path, default=None, metavar="PATH", help=socket_help)
    parser.add_argument(
        "--load",
        default=load_default,
        metavar="MODEL",
        help="when no pool answers, start one with this model"
        + (f" (default {load_default})" if load_default else " (default: start none)"),
    )
    parser.add_argument(
        "--pool-flags",
        default=flags_default,
        metavar="FLAGS",
        help="flags for a pool started so, as one string"
        + (f" (default '{flags_default}')" if flags_default else " ('--ctx 32768 --threads 2')"),
    )


def main(argv: Sequence[str] | None = None, ready: Callable[[], None] = lambda: None) -> int:
    """Run one command line. ``ready`` is called once the command's modules are imported, just
    before it runs (the console script hands Ctrl-C back to Python there)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    passed: list[str] = []
    if argv[:1] == ["launch"] and "--" in argv:
        # Everything after -- is the launched program's, never caldrix's.
        cut = argv.index("--")
        argv, passed = argv[:cut], argv[cut + 1 :]
    args, extra = parser.parse_known_args(argv)
    words = [word for word in extra if not word.startswith("-")]
    if args.command == "run" and words == extra and extra:
        # argparse takes MODEL and the optional PROMPT together, so a prompt given after
        # serving flags (caldrix run MODEL --ctx 512 "hi") comes back unmatched: it is the prompt.
        if args.words is not None or len(words) > 1:
            parser.error('the prompt is one argument: quote it (caldrix run MODEL "PROMPT")')
        args.words = words[0]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return 0
    try:
        command = _loaded_command(args, passed)
        ready()
        return command()
    except CaldrixError as exc:
        print(f"caldrix: {one_line(exc.message)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILED


def _loaded_command(args: argparse.Namespace, passed: list[str]) -> Callable[[], int]:
    """The chosen command, its module imported (and its serving flags checked), ready to run.
    Each command imports what it needs only when chosen: `caldrix pool stop` loads no engine."""
    if args.command == "run":
        from caldrix.cli.run import run_command

        flags = serving_flags_from(args)
        return lambda: run_command(args, flags)
    if args.command == "pool":
        if args.action is not None:
            from caldrix.cli.pool_control import pool_control

            return lambda: pool_control(args)
        from caldrix.cli.pool import pool_command

        flags = serving_flags_from(args)
        return lambda: pool_command(args, flags)
    if args.command in ("serve", "launch"):
        from caldrix.cli.serve import launch_command, serve_command

        return (
            (lambda: serve_command(args))
            if args.command == "serve"
            else (lambda: launch_command(args, passed))
        )
    from caldrix.cli.models import models_command

    return lambda: models_command(args)


if __name__ == "__main__":
    sys.exit(main())

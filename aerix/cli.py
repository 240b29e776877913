"""``aerix``: argument parsing only; each command calls one use case and renders its result.

The top level is where the agent's own flags go (``-p PROMPT``, ``--resume ID``,
``--continue``, ``--max-turns N``, ``--output-format``); subcommands are looked up in
``COMMANDS``-style handlers set with ``set_defaults(handler=...)``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from aerix import __version__
from aerix.adapters.output import OUTPUT_FORMATS, discard_closed_output
from aerix.adapters.profile_output import (
    StreamObserver,
    render_edit,
    render_log,
    render_show,
    render_sync,
    render_tune,
)
from aerix.adapters.session_render import render_list, render_replay
from aerix.adapters.settings_files import SettingsOverrides, parse_sources
from aerix.app.profiles.manage import LOG_LIMIT, EditOptions
from aerix.app.profiles.sync import SyncOptions
from aerix.app.profiles.tune import TuneOptions
from aerix.app.request.conversation import ConversationOptions
from aerix.app.request.run import RequestOptions
from aerix.claude_flags import CLAUDE_VALUE_FLAGS, add_claude_flags, ignored_note
from aerix.domain.bounds import EXIT_BROKEN_PIPE, EXIT_CANCELLED, EXIT_USAGE
from aerix.domain.events import event_json_schemas, union_json_schema
from aerix.domain.profile import MAIN_BRANCH, PROFILE_NAME_RULE, model_branch, valid_profile_name
from aerix.domain.prompt_bytes import decode_prompt
from aerix.errors import AerixError, FileUnusable, NotADirectory, OutputClosed, UsageError
from aerix.wiring import (
    ProfileCommands,
    SessionCommands,
    profile_commands,
    run_headless,
    run_interactive,
    run_stream_input,
    session_commands,
)

NEEDS_A_TERMINAL = (
    "the interactive screen needs a terminal; run one request with -p PROMPT "
    "(or pipe it: echo PROMPT | aerix -p)"
)
#: The top-level flags that take a value, so the first other word is a subcommand or the prompt.
_VALUE_FLAGS = (
    frozenset({"--resume", "--max-turns", "--output-format", "--cwd", "--profile"}) | CLAUDE_VALUE_FLAGS
)
_OPTIONAL_VALUE_FLAGS = frozenset({"-p", "--print"})


class _Parser(argparse.ArgumentParser):
    """argparse, but a refused command line exits with EXIT_USAGE (2 is the budget's status),
    and a mistyped command or choice is answered with the nearest one."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is None or value in action.choices:
            return
        choices = [str(choice) for choice in action.choices]
        raise argparse.ArgumentError(action, invalid_choice(str(value), choices))


def invalid_choice(value: str, choices: Sequence[str]) -> str:
    """``invalid choice 'session'; did you mean 'sessions'?``, or the choices when none is near."""
    nearest = close_choice(value, choices)
    if nearest is not None:
        return f"invalid choice {value!r}; did you mean {nearest!r}?"
    return f"invalid choice {value!r} (choose from {', '.join(choices)})"


#: How alike a word must be to a choice for "did you mean" (difflib's own default ratio).
CHOICE_CUTOFF = 0.6
#: How alike a lone first word must be to a command to be taken as its typo, not as a prompt
#: (difflib's ratio; "session" → sessions is 0.93, while "more" → import, 0.6, stays a prompt).
TYPO_CUTOFF = 0.8


def close_choice(word: str, choices: Sequence[str], cutoff: float = CHOICE_CUTOFF) -> str | None:
    """The one choice ``word`` is most likely a typo of, if any is at least ``cutoff`` alike."""
    return next(iter(difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)), None)


def build_parser() -> argparse.ArgumentParser:
    # No abbreviations: with Claude Code's flags beside aerix's, `sessions rebuild --all` would
    # otherwise be read as an ambiguous --allowedTools, and a typo as some other flag.
    parser: argparse.ArgumentParser = _Parser(
        prog="aerix", description="A local-first coding agent for the terminal.", allow_abbrev=False
    )
    parser.add_argument("--version", action="version", version=f"aerix {__version__}")
    _add_request_flags(parser)
    parser.set_defaults(handler=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_sessions(commands)
    _add_import(commands)
    _add_tune(commands)
    _add_profile(commands)
    return parser


def _profile_flags(parser: argparse.ArgumentParser) -> None:
    """What every tune and profile command takes; SUPPRESS keeps ``aerix --profile X tune`` too."""
    parser.add_argument(
        "--profile", metavar="NAME", default=argparse.SUPPRESS, help="the profile (default: the setting)"
    )
    parser.add_argument(
        "--cwd", type=Path, metavar="DIR", default=argparse.SUPPRESS, help="the project whose settings apply"
    )


def _branch_flags(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--model", metavar="M", help="the model base of M (default: pool.main's)")
    target.add_argument("--main", action="store_true", help="the main branch")


def _add_tune(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tune = commands.add_parser("tune", help="revise the main model's prompts from its own sessions")
    tune.add_argument("--sessions", type=int, metavar="N", help="read the newest N sessions (tune.sessions)")
    tune.add_argument("--dry-run", action="store_true", help="print a diff per revision; commit nothing")
    tune.add_argument("--member", metavar="MODEL", help="the reflection member's model (tune.member)")
    _profile_flags(tune)
    tune.set_defaults(handler=cmd_tune)


def _add_profile(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    profile = commands.add_parser("profile", help="the prompts kept in git for each model")
    sub = profile.add_subparsers(dest="profile_command", metavar="SUBCOMMAND", required=True)
    sync = sub.add_parser("sync", help="reconcile tuned texts the release has changed since")
    _branch_flags(sync)
    sync.add_argument("--dry-run", action="store_true", help="print a diff per text; commit nothing")
    _profile_flags(sync)
    sync.set_defaults(handler=cmd_profile_sync)
    edit = sub.add_parser("edit", help="edit one text in $EDITOR and commit it")
    edit.add_argument("path", help="prompts/<name>.md, skills/<name>.md or agents/<name>.md")
    _branch_flags(edit)
    _profile_flags(edit)
    edit.set_defaults(handler=cmd_profile_edit)
    show = sub.add_parser("show", help="branches, heads, what each tunes and what is stale")
    show.add_argument("--json", action="store_true", help="print it as one JSON object")
    _profile_flags(show)
    show.set_defaults(handler=cmd_profile_show)
    log = sub.add_parser("log", help="the newest commits of main and each model base")
    _branch_flags(log)
    log.add_argument("-n", type=int, default=LOG_LIMIT, metavar="N", help=f"commits per branch ({LOG_LIMIT})")
    _profile_flags(log)
    log.set_defaults(handler=cmd_profile_log)


def _add_sessions(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sessions = commands.add_parser("sessions", help="list, show, remove and rebuild sessions")
    sub = sessions.add_subparsers(dest="sessions_command", metavar="SUBCOMMAND", required=True)
    listing = sub.add_parser("list", help="this project's sessions, newest first")
    listing.add_argument("--json", action="store_true", help="print the index entries as JSON")
    listing.add_argument("--all", action="store_true", help="every project's sessions")
    listing.set_defaults(handler=cmd_list)
    show = sub.add_parser("show", help="a readable replay of a session")
    show.add_argument("id", help="session id (or a unique prefix)")
    show.add_argument("--json", action="store_true", help="print the events as JSON lines")
    show.set_defaults(handler=cmd_show)
    remove = sub.add_parser("rm", help="delete a session: log, spool files, transcript, index entry")
    remove.add_argument("id")
    remove.set_defaults(handler=cmd_rm)
    rebuild = sub.add_parser("rebuild", help="verify logs and rebuild the index and transcripts")
    target = rebuild.add_mutually_exclusive_group(required=True)
    target.add_argument("id", nargs="?", help="one session")
    target.add_argument("--all", action="store_true", help="every session of every project")
    rebuild.set_defaults(handler=cmd_rebuild)
    schema = sub.add_parser("schema", help="print (or write) the JSON Schema of every event")
    schema.add_argument("--out", type=Path, help="write one <type>.schema.json per event into this folder")
    schema.set_defaults(handler=cmd_schema)


def _add_import(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    importing = commands.add_parser("import", help="copy sessions from another tool")
    sub = importing.add_subparsers(dest="import_source", metavar="SOURCE", required=True)
    claude = sub.add_parser("claude", help="Claude Code transcripts (default: its projects folder)")
    claude.add_argument("paths", nargs="*", type=Path, help="transcript files or folders")
    claude.set_defaults(handler=cmd_import_claude)


def _add_request_flags(parser: argparse.ArgumentParser) -> None:
    """The agent's own flags (``aerix -p``); the request itself is ``aerix.wiring``."""
    group = parser.add_argument_group("one request (headless)")
    group.add_argument(
        "-p",
        "--print",
        dest="print_prompt",
        nargs="?",
        const=STDIN_PROMPT,
        default=None,
        metavar="PROMPT",
        help="run one request and exit; without PROMPT, read it from stdin",
    )
    group.add_argument("--resume", metavar="ID", help="continue this session (id or unique prefix)")
    group.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue this project's latest session",
    )
    group.add_argument("--max-turns", type=int, metavar="N", help="the root agent's turn budget")
    group.add_argument(
        "--profile", metavar="NAME", help="read the prompts from this profile (setting: profile)"
    )
    group.add_argument(
        "--profile-refresh",
        action="store_true",
        help="with --resume/--continue: move the session to its model base's newest prompts first",
    )
    group.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default="text",
        help="text (default), json (one object) or stream-json (one event a line)",
    )
    group.add_argument("--in-place", action="store_true", help="accepted; -p always runs in place")
    group.add_argument(
        "--verbose",
        action="store_true",
        help="accepted, as Claude Code's stream-json needs it; the output is the same",
    )
    group.add_argument("--cwd", type=Path, metavar="DIR", help="run in DIR instead of the current directory")
    add_claude_flags(group)


STDIN_PROMPT = "\0stdin"


def cmd_interactive(args: argparse.Namespace, first_prompt: str | None) -> int:
    """Bare ``aerix`` (``--resume``, ``--continue``, a first prompt): the screen on a terminal;
    elsewhere a given prompt runs as plain ``-p`` would, and none is one line saying to use ``-p``."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        if first_prompt is None:
            print(f"aerix: {NEEDS_A_TERMINAL}", file=sys.stderr)
            return EXIT_USAGE
        args.print_prompt = first_prompt
        return cmd_print(args)
    if args.max_turns is not None and args.max_turns < 1:
        print("aerix: --max-turns must be 1 or more", file=sys.stderr)
        return EXIT_USAGE
    if args.resume and args.continue_latest:
        print("aerix: --resume and --continue both name a session; give one of them", file=sys.stderr)
        return EXIT_USAGE
    if args.profile is not None and not valid_profile_name(args.profile):
        print(f"aerix: --profile: {PROFILE_NAME_RULE} (got {args.profile!r})", file=sys.stderr)
        return EXIT_USAGE
    options = ConversationOptions(
        cwd=args.cwd or Path.cwd(),
        resume=args.resume,
        continue_latest=args.continue_latest,
        max_turns=args.max_turns,
        first_prompt=first_prompt,
        profile=args.profile,
        profile_refresh=args.profile_refresh,
    )
    try:
        return run_interactive(options)
    except KeyboardInterrupt:
        return EXIT_CANCELLED


def cmd_print(args: argparse.Namespace) -> int:
    streamed = args.input_format == "stream-json"
    if streamed and args.output_format != "stream-json":
        print("aerix: --input-format stream-json needs --output-format stream-json", file=sys.stderr)
        return EXIT_USAGE
    if streamed and args.print_prompt not in (None, STDIN_PROMPT):
        print(
            "aerix: with --input-format stream-json the prompts come on stdin; drop -p's PROMPT",
            file=sys.stderr,
        )
        return EXIT_USAGE
    prompt, prompt_bytes = "", None
    if not streamed:
        # Bytes, not text: a prompt that is not valid UTF-8 is read with U+FFFD and its bytes kept.
        # (argv arrives decoded with surrogateescape; os.fsencode gives back its bytes.)
        if args.print_prompt not in (None, STDIN_PROMPT):
            raw = os.fsencode(args.print_prompt)
        else:
            raw = sys.stdin.buffer.read() if sys.stdin is not None else b""  # `aerix -p <&-`: no stdin
        decoded = decode_prompt(raw)
        prompt, prompt_bytes = decoded.text, decoded.raw
        if not prompt.strip():
            print("aerix: the prompt is empty; give it after -p or on stdin", file=sys.stderr)
            return EXIT_USAGE
    if args.max_turns is not None and args.max_turns < 1:
        print("aerix: --max-turns must be 1 or more", file=sys.stderr)
        return EXIT_USAGE
    if args.profile is not None and not valid_profile_name(args.profile):
        print(f"aerix: --profile: {PROFILE_NAME_RULE} (got {args.profile!r})", file=sys.stderr)
        return EXIT_USAGE
    session_id = None if args.session_id is None else _canonical_uuid(args.session_id)
    if args.session_id is not None and session_id is None:
        print(
            f"aerix: --session-id {args.session_id} is not a UUID; give one such as {uuid.uuid4()}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        sources = None if args.setting_sources is None else parse_sources(args.setting_sources)
    except AerixError as error:
        print(f"aerix: {error}", file=sys.stderr)
        return EXIT_USAGE
    note = ignored_note(args)
    if note:
        print(f"aerix: {note}", file=sys.stderr)
    options = RequestOptions(
        prompt=prompt,
        prompt_bytes=prompt_bytes,
        cwd=args.cwd or Path.cwd(),
        resume=args.resume,
        continue_latest=args.continue_latest,
        max_turns=args.max_turns,
        profile=args.profile,
        profile_refresh=args.profile_refresh,
        session_id=session_id,
        append_system_prompt=args.append_system_prompt,
    )
    overrides = SettingsOverrides(sources=sources, extra=args.extra_settings)
    try:
        if streamed:
            return run_stream_input(options, sys.stdin, overrides=overrides)
        return run_headless(options, args.output_format, overrides=overrides)
    except KeyboardInterrupt:
        print("aerix: cancelled", file=sys.stderr)
        return EXIT_CANCELLED


def _canonical_uuid(text: str) -> str | None:
    """A UUID written any way uuid.UUID reads it, as the dashed lowercase id; None if not one."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def _print_mode(args: argparse.Namespace) -> bool:
    """-p, or (as Claude Code's) stream-json output or input without it: one request's run."""
    if args.command is not None:
        return False
    return args.print_prompt is not None or "stream-json" in (args.output_format, args.input_format)


def split_prompt(argv: Sequence[str], commands: Sequence[str]) -> tuple[list[str], str | None]:
    """``aerix [flags] "first prompt" [flags]`` as Claude Code accepts it: the first word that is
    neither a flag, a flag's value nor a subcommand is the prompt (taken out of ``argv``)."""
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            rest = words[index + 1 :]
            return words[:index], (" ".join(rest) if rest else None)
        if word in _VALUE_FLAGS:
            index += 2
            continue
        if word in _OPTIONAL_VALUE_FLAGS:
            following = words[index + 1] if index + 1 < len(words) else None
            index += 2 if following is not None and not following.startswith("-") else 1
            continue
        if word.startswith("-"):
            index += 1
            continue
        # A one-word near miss of a command (`aerix session list`) is a typo, not a prompt: it
        # stays for the parser, which names the command meant.
        if word in commands or (" " not in word and close_choice(word, commands, TYPO_CUTOFF)):
            return words, None
        return words[:index] + words[index + 1 :], word
    return words, None


def _command_names(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line. A closed pipe (``aerix sessions show ID | head``) ends any command
    quietly with EXIT_BROKEN_PIPE, as ``git log | head`` does: no message, no traceback."""
    try:
        return _run(argv)
    except (BrokenPipeError, OutputClosed):
        discard_closed_output()
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    words, first_prompt = split_prompt(sys.argv[1:] if argv is None else argv, _command_names(parser))
    args = parser.parse_args(words)
    if args.resume is not None and not args.resume.strip():
        # An empty id would match every session as a prefix, or none: refuse it, never start anew.
        print("aerix: --resume needs a session id; `aerix sessions list` shows them", file=sys.stderr)
        return EXIT_USAGE
    if _print_mode(args):
        if args.print_prompt in (None, STDIN_PROMPT) and first_prompt is not None:
            args.print_prompt = first_prompt
        return cmd_print(args)
    handler = args.handler
    if handler is None:
        return cmd_interactive(args, first_prompt)
    try:
        return int(handler(args))
    except AerixError as error:
        print(f"aerix: {error}", file=sys.stderr)
        return error.exit_code
    except BrokenPipeError:
        raise  # main's to end quietly
    except OSError as error:  # the store's folder is a file, unwritable, full…: one line, not a traceback
        unusable = FileUnusable(error)
        print(f"aerix: {unusable}", file=sys.stderr)
        return unusable.exit_code


# ---- handlers ---------------------------------------------------------------------------------


class _PipeConsole(Console):
    """rich's console, but a closed pipe is main's to handle like every other command's (rich's
    own handler exits 1)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def _console() -> Console:
    """rich on stdout; in a pipe, long lines stay whole (``grep`` and ``less`` see one line an
    event) instead of being wrapped at rich's default 80 columns."""
    console = _PipeConsole(highlight=False)
    console.soft_wrap = not console.is_terminal
    return console


def _report_notices(sessions: SessionCommands) -> None:
    for notice in sessions.notices():
        print(f"aerix: {notice}", file=sys.stderr)


def cmd_list(args: argparse.Namespace) -> int:
    cwd = args.cwd or Path.cwd()
    if not cwd.is_dir():
        raise NotADirectory(cwd)
    with session_commands() as sessions:
        entries, problems = sessions.listing(None if args.all else cwd)
        _report_notices(sessions)
    for line in problems:
        print(f"aerix: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps([entry.to_json() for entry in entries], ensure_ascii=False, indent=1))
    elif not entries:
        hint = "" if args.all else "; `aerix sessions list --all` shows every project's"
        print(f"no sessions here{hint}")
    else:
        render_list(_console(), entries)
    return 1 if problems else 0


def cmd_show(args: argparse.Namespace) -> int:
    with session_commands() as sessions:
        ref, records, problems = sessions.show(args.id)
        _report_notices(sessions)
    for line in problems:  # before the replay, so a reader that stops early still sees them
        print(f"aerix: {line}", file=sys.stderr)
    if args.json:
        for record in records:
            print(record.model_dump_json(exclude_none=True))
    else:
        render_replay(_console(), ref.id, records)
    return 1 if problems else 0


def cmd_rm(args: argparse.Namespace) -> int:
    with session_commands() as sessions:
        ref, removed, notes = sessions.remove(args.id)
    for note in notes:
        print(f"aerix: {note}", file=sys.stderr)
    print(f"removed session {ref.id} ({len(removed)} files)")
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    with session_commands() as sessions:
        reports = sessions.rebuild(None if args.all else args.id, Path.cwd())
    troubled = 0
    for report in reports:
        status = "ok" if not report.problems else f"{len(report.problems)} problem(s)"
        print(f"{report.project}/{report.session}: {report.events} events, {status}")
        for problem in report.problems:
            print(f"  {problem}")
        troubled += bool(report.problems)
    print(f"rebuilt {len(reports)} session(s); {troubled} with problems")
    return 1 if troubled else 0


def cmd_schema(args: argparse.Namespace) -> int:
    schemas = event_json_schemas()
    if args.out is None:
        print(json.dumps(union_json_schema(), indent=1))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, schema in [*schemas.items(), ("event", union_json_schema())]:
        (args.out / f"{name}.schema.json").write_text(json.dumps(schema, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(schemas) + 1} schemas to {args.out}")
    return 0


def cmd_import_claude(args: argparse.Namespace) -> int:
    with session_commands() as sessions:
        report = sessions.import_claude(
            args.paths,
            lambda path: print(f"{path}: no record names a Claude Code session (no sessionId); left out"),
        )
    for outcome in report.outcomes:
        print(f"{outcome.project}/{outcome.session}: {outcome.state}, {outcome.events} events")
        for problem in outcome.problems:
            print(f"  {problem}")
        if outcome.note:
            print(f"  {outcome.note}")
    print(f"imported from {report.files} file(s); {report.problems} line(s) kept as foreign events")
    return 0


# ---- tune and profile -----------------------------------------------------------------------------


def _profile_args(args: argparse.Namespace) -> tuple[Path, str | None]:
    profile = getattr(args, "profile", None)
    if profile is not None and not valid_profile_name(profile):
        raise UsageError(f"--profile: {PROFILE_NAME_RULE} (got {profile!r})")
    return getattr(args, "cwd", None) or Path.cwd(), profile


def _branch(args: argparse.Namespace) -> str | None:
    if args.main:
        return MAIN_BRANCH
    return model_branch(args.model) if args.model else None


def cmd_tune(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    if args.sessions is not None and args.sessions < 1:
        raise UsageError("--sessions must be 1 or more")
    options = TuneOptions(cwd, profile, args.sessions, args.dry_run, args.member)
    return _reflecting(lambda profiles, heard: render_tune(profiles.tune(options, heard), sys.stdout))


def cmd_profile_sync(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    options = SyncOptions(cwd, profile, _branch(args), args.dry_run)
    return _reflecting(lambda profiles, heard: render_sync(profiles.sync(options, heard), sys.stdout))


def _reflecting(command: Callable[[ProfileCommands, StreamObserver], None]) -> int:
    """Run a command that reflects: progress on stderr as it goes, Ctrl-C one line."""
    try:
        with profile_commands() as profiles:
            command(profiles, StreamObserver(sys.stdout, sys.stderr))
    except KeyboardInterrupt:
        print("aerix: cancelled; what was not committed yet is dropped", file=sys.stderr)
        return EXIT_CANCELLED
    return 0


def cmd_profile_edit(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    with profile_commands() as profiles:
        outcome = profiles.edit(EditOptions(cwd, args.path, profile, args.model, args.main))
    render_edit(outcome, sys.stdout, sys.stderr)
    return 0


def cmd_profile_show(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    with profile_commands() as profiles:
        view = profiles.show(cwd, profile)
    render_show(view, sys.stdout, args.json)
    return 0


def cmd_profile_log(args: argparse.Namespace) -> int:
    cwd, profile = _profile_args(args)
    if args.n < 1:
        raise UsageError("-n must be 1 or more")
    with profile_commands() as profiles:
        entries = profiles.log(cwd, profile, _branch(args), args.n)
    render_log(entries, sys.stdout)
    return 0

"""``aerix``: argument parsing only; each command calls one use case and renders its result.

The top level is where the agent's own flags go (``-p PROMPT``, ``--resume ID``,
``--continue``, ``--max-turns N``, ``--output-format``); subcommands are looked up in
``COMMANDS``-style handlers set with ``set_defaults(handler=...)``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from aerix import __version__
from aerix.adapters.output import OUTPUT_FORMATS
from aerix.adapters.session_render import render_list, render_replay
from aerix.app.request.run import RequestOptions
from aerix.domain.bounds import EXIT_CANCELLED, EXIT_USAGE
from aerix.domain.events import event_json_schemas, union_json_schema
from aerix.errors import AerixError, FileUnusable
from aerix.wiring import SessionCommands, run_headless, session_commands


class _Parser(argparse.ArgumentParser):
    """argparse, but a refused command line exits with EXIT_USAGE: 2 is the budget's status."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = _Parser(
        prog="aerix", description="A local-first coding agent for the terminal."
    )
    parser.add_argument("--version", action="version", version=f"aerix {__version__}")
    _add_request_flags(parser)
    parser.set_defaults(handler=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_sessions(commands)
    _add_import(commands)
    return parser


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


STDIN_PROMPT = "\0stdin"


def cmd_print(args: argparse.Namespace) -> int:
    prompt = sys.stdin.read() if args.print_prompt == STDIN_PROMPT else args.print_prompt
    if not prompt.strip():
        print("aerix: the prompt is empty; give it after -p or on stdin", file=sys.stderr)
        return EXIT_USAGE
    if args.max_turns is not None and args.max_turns < 1:
        print("aerix: --max-turns must be 1 or more", file=sys.stderr)
        return EXIT_USAGE
    options = RequestOptions(
        prompt=prompt,
        cwd=args.cwd or Path.cwd(),
        resume=args.resume,
        continue_latest=args.continue_latest,
        max_turns=args.max_turns,
    )
    try:
        return run_headless(options, args.output_format)
    except KeyboardInterrupt:
        print("aerix: cancelled", file=sys.stderr)
        return EXIT_CANCELLED


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None and args.print_prompt is not None:
        return cmd_print(args)
    if args.command is None and (args.resume or args.continue_latest):
        print(
            "aerix: --resume and --continue need -p PROMPT (the interactive screen is not built yet)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    handler = args.handler
    if handler is None:
        print(
            "aerix: the interactive screen is not built yet; run one request with -p PROMPT", file=sys.stderr
        )
        return EXIT_USAGE
    try:
        return int(handler(args))
    except AerixError as error:
        print(f"aerix: {error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:  # the store's folder is a file, unwritable, full…: one line, not a traceback
        unusable = FileUnusable(error)
        print(f"aerix: {unusable}", file=sys.stderr)
        return unusable.exit_code


# ---- handlers ---------------------------------------------------------------------------------


def _console() -> Console:
    return Console(highlight=False)


def _report_notices(sessions: SessionCommands) -> None:
    for notice in sessions.notices():
        print(f"aerix: {notice}", file=sys.stderr)


def cmd_list(args: argparse.Namespace) -> int:
    with session_commands() as sessions:
        entries, unreadable = sessions.listing(None if args.all else Path.cwd())
        _report_notices(sessions)
    for line in unreadable:
        print(f"aerix: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps([entry.to_json() for entry in entries], ensure_ascii=False, indent=1))
    elif not entries:
        hint = "" if args.all else "; `aerix sessions list --all` shows every project's"
        print(f"no sessions here{hint}")
    else:
        render_list(_console(), entries)
    return 1 if unreadable else 0


def cmd_show(args: argparse.Namespace) -> int:
    with session_commands() as sessions:
        ref, records = sessions.show(args.id)
        _report_notices(sessions)
    if args.json:
        for record in records:
            print(record.model_dump_json(exclude_none=True))
    else:
        render_replay(_console(), ref.id, records)
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    with session_commands() as sessions:
        ref, removed = sessions.remove(args.id)
    print(f"removed session {ref.id} ({len(removed)} files)")
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    with session_commands() as sessions:
        reports = sessions.rebuild(None if args.all else args.id)
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

"""``aerix sessions …`` (list, show, rm, rebuild, schema) and ``aerix import claude``: their
parsers and handlers, over ``aerix.wiring``'s session commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from aerix.adapters.session_render import render_list, render_replay
from aerix.domain.events import event_json_schemas, union_json_schema
from aerix.errors import NotADirectory
from aerix.wiring.commands import SessionCommands, session_commands


def add_sessions(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def add_import(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    importing = commands.add_parser("import", help="copy sessions from another tool")
    sub = importing.add_subparsers(dest="import_source", metavar="SOURCE", required=True)
    claude = sub.add_parser("claude", help="Claude Code transcripts (default: its projects folder)")
    claude.add_argument("paths", nargs="*", type=Path, help="transcript files or folders")
    claude.set_defaults(handler=cmd_import_claude)


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

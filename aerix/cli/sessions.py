"""``aerix sessions …`` (list, show, rm, rebuild, schema) and ``aerix import claude``: their
handlers, over ``aerix.wiring``'s session commands (``aerix.cli.parser`` reads their flags)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from aerix.adapters.console.session_render import render_list, render_replay
from aerix.domain.events import event_json_schemas, union_json_schema
from aerix.errors import NotADirectory
from aerix.wiring.session_commands import SessionCommands, session_commands


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

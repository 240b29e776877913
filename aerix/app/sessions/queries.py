"""Reading and keeping sessions: resume, the latest session, list, show, remove, rebuild.

Each function takes the store (``SessionStorage``) and returns plain data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aerix.app.ports.sessions import SessionRef, SessionStorage
from aerix.app.sessions.views import LOG_SIZE_KEY, stamped
from aerix.domain import events as ev
from aerix.domain.session import CLAUDE_CODE_TAG
from aerix.errors import (
    SessionBusy,
    SessionLogCorrupt,
    SessionNotFound,
    SessionNotResumable,
    SessionSchemaTooNew,
)
from aerix.projections.base import feed_all
from aerix.projections.index import IndexEntry
from aerix.projections.resume_point import ResumePoint, ResumeState
from aerix.projections.transcript import ClaudeTranscript, subagent_lines, transcript_lines

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def load_for_resume(storage: SessionStorage, session_id: str) -> ResumeState:
    """Rebuild the root agent's context and plan from the log. Subagents are not resumed."""
    ref = storage.catalog.find(session_id)
    records = storage.log.read(ref)
    if not records or not isinstance(records[0], ev.SessionStart):
        raise SessionNotFound(session_id)
    if CLAUDE_CODE_TAG in records[0].tags:
        raise SessionNotResumable(ref.id, CLAUDE_CODE_TAG)
    point = ResumePoint()
    point.feed(records)
    state = point.state(ref.id, ref.project)
    if state is None:
        raise SessionNotFound(session_id)
    return state


def latest_session(storage: SessionStorage, project: str) -> str | None:
    """The project's most recently updated aerix session (``--continue``), if any."""
    entries = [entry for entry in list_sessions(storage, project) if not entry.imported]
    return entries[0].id if entries else None


def list_sessions(
    storage: SessionStorage, project: str | None = None, problems: list[str] | None = None
) -> list[IndexEntry]:
    """Index entries, newest first. A log the index does not know yet, or whose size is not the
    one its entry was folded from (it grew, or lost or changed a line), is read and folded again
    and checked as ``rebuild`` checks it. A log that cannot be read is left out, a log with a gap
    in its ``seq`` or no events at all is listed with what is wrong; each such line joins
    ``problems``: one damaged log must not hide every other session, nor pass unsaid."""
    said = problems if problems is not None else []
    result: list[IndexEntry] = []
    projects = [project] if project else storage.catalog.projects()
    for name in projects:
        known = storage.views.load_index(name)
        refs = storage.catalog.refs(name)
        changed = [ref for ref in refs if _changed(storage, ref, known.get(ref.id))]
        stale = set(known) - {ref.id for ref in refs}
        if changed or stale:
            with storage.views.index_locked(name) as entries:
                for session_id in stale:
                    entries.pop(session_id, None)
                for ref in changed:
                    _fold_again(storage, ref, entries, said)
                known = dict(entries)
        result.extend(IndexEntry.from_json(entry) for entry in known.values())
    result.sort(key=lambda entry: (entry.updated or _EPOCH, entry.id), reverse=True)
    return result


def _changed(storage: SessionStorage, ref: SessionRef, entry: dict[str, Any] | None) -> bool:
    return entry is None or entry.get(LOG_SIZE_KEY) != storage.catalog.log_size(ref)


def _fold_again(
    storage: SessionStorage, ref: SessionRef, entries: dict[str, dict[str, Any]], said: list[str]
) -> None:
    size = storage.catalog.log_size(ref)  # before the read: a line written meanwhile is read again later
    try:
        records = storage.log.read(ref)
    except (SessionLogCorrupt, SessionSchemaTooNew) as error:
        entries.pop(ref.id, None)
        said.append(f"{ref.project}/{ref.id} left out: {error}")
        return
    if not records and storage.catalog.is_locked(ref):
        return  # a session starting right now: its first line is on its way
    problems = list(verify(records, ref.log))
    said.extend(problems)  # each names the log's file
    entry = IndexEntry()
    entry.feed(records)
    if entry.id:
        entries[ref.id] = stamped(entry, None if problems else size)


def show_session(
    storage: SessionStorage, session_id: str
) -> tuple[SessionRef, list[ev.EventBase], list[str]]:
    """The session's events, and what is wrong with its log (as ``rebuild`` would say it)."""
    ref = storage.catalog.find(session_id)
    records = storage.log.read(ref)
    return ref, records, list(verify(records, ref.log))


RemoveHook = Callable[[SessionRef, ev.SessionStart | None], None]


def remove_session(storage: SessionStorage, session_id: str, also: RemoveHook | None = None) -> list[Path]:
    """Delete a session's log, spool, transcript and index entry. ``also`` runs first with the
    session's start (the profile's ``session/<id>`` branch is removed there, by its owner)."""
    ref = storage.catalog.find(session_id)
    if storage.catalog.is_locked(ref):
        raise SessionBusy(ref.id, "a running aerix")
    if also is not None:
        records = storage.log.read(ref)
        start = records[0] if records and isinstance(records[0], ev.SessionStart) else None
        also(ref, start)
    removed = [*storage.catalog.remove(ref), *storage.views.remove(ref), *storage.spool.remove(ref)]
    with storage.views.index_locked(ref.project) as entries:
        entries.pop(ref.id, None)
    return removed


# ---- rebuild ---------------------------------------------------------------------------------------


@dataclass
class RebuildReport:
    session: str
    project: str
    events: int = 0
    problems: list[str] = field(default_factory=list)
    transcript: Path | None = None


def rebuild(
    storage: SessionStorage, session_id: str | None = None, claude_projects: bool = False
) -> list[RebuildReport]:
    """Verify each log, rebuild its index entry and transcript from scratch; one report each.
    ``claude_projects``: also link each transcript into Claude Code's projects folder."""
    refs = [storage.catalog.find(session_id)] if session_id else storage.catalog.refs()
    reports = []
    for project in sorted({ref.project for ref in refs}):
        with storage.views.index_locked(project) as entries:
            if session_id is None:
                entries.clear()
            for ref in (ref for ref in refs if ref.project == project):
                reports.append(_rebuild_one(storage, ref, entries, claude_projects))
    return reports


def _rebuild_one(
    storage: SessionStorage, ref: SessionRef, entries: dict[str, dict[str, Any]], claude_projects: bool
) -> RebuildReport:
    report = RebuildReport(ref.id, ref.project)
    try:
        records = storage.log.read(ref)
    except Exception as exc:
        report.problems.append(str(exc))
        entries.pop(ref.id, None)
        return report
    size = storage.catalog.log_size(ref)
    report.problems.extend(storage.log.notices())
    report.problems.extend(verify(records, ref.log))
    report.events = len(records)
    entry, transcript = IndexEntry(), ClaudeTranscript()
    feed_all([entry, transcript], records)
    if entry.id:
        entries[ref.id] = stamped(entry, None if report.problems else size)
    report.transcript = storage.views.write_transcript(
        ref, transcript_lines(transcript), subagent_lines(transcript)
    )
    if claude_projects and transcript.cwd:
        try:
            storage.views.link_claude_project(ref, transcript.cwd, bool(transcript.subagents))
        except OSError as exc:
            report.problems.append(f"not linked into Claude Code's projects folder: {exc}")
    return report


def verify(records: list[ev.EventBase], log: Path) -> Iterator[str]:
    """What is wrong with a log's sequence (each line already parsed as an event)."""
    if not records:
        yield (
            f"{log}: empty: the session never recorded its session.start (stopped as it began); "
            f"`aerix sessions rm {log.name.removesuffix('.jsonl')}` removes it"
        )
    elif not isinstance(records[0], ev.SessionStart):
        yield f"{log}:1: the first event is {records[0].type}, not session.start"
    expected = 1
    for number, record in enumerate(records, 1):
        if record.seq > expected:
            missing = record.seq - expected
            yield (
                f"{log}:{number}: seq {record.seq} where {expected} was expected: {missing} event(s) "
                "missing (the log was edited or damaged)"
            )
        elif record.seq != expected:
            yield f"{log}:{number}: seq {record.seq} where {expected} was expected"
        expected = record.seq + 1

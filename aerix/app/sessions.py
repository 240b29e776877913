"""Session use cases: write a session, resume it, list/show/remove/rebuild, import Claude Code.

Each function takes the store (``SessionStorage``, implemented by
``aerix.adapters.session_store.SessionFiles``) and returns plain data. The agent loop writes
through ``SessionWriter``; ``--resume``/``--continue`` call ``load_for_resume``; hooks call
``write_transcript`` before they fire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from eventsourcing.persistence import EventStore, IntegrityError

from aerix.domain import events as ev
from aerix.domain.session import CLAUDE_CODE_TAG, Session, replay
from aerix.errors import (
    SessionBusy,
    SessionLogCorrupt,
    SessionNotFound,
    SessionNotResumable,
    SessionSchemaTooNew,
)
from aerix.projections.base import feed_all
from aerix.projections.contexts import AgentContext, Contexts
from aerix.projections.index import IndexEntry
from aerix.projections.transcript import ClaudeTranscript, transcript_lines

Clock = Callable[[], datetime]
E = TypeVar("E", bound=ev.EventBase)
ROOT_AGENT = "a1"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class SessionRef:
    """Where a session lives: its id, its project key and that project's folder."""

    id: str
    project: str
    folder: Path

    @property
    def log(self) -> Path:
        return self.folder / f"{self.id}.jsonl"

    @property
    def transcript(self) -> Path:
        return self.folder / f"{self.id}.claude.jsonl"


@dataclass(frozen=True)
class PlannedEvent:
    """An event to record, with its own time (imports keep the original times)."""

    cls: type[ev.EventBase]
    time: datetime
    fields: dict[str, Any]


@dataclass
class ImportPlan:
    """A foreign session, converted: its start fields and the events after it."""

    start: dict[str, Any]
    start_time: datetime
    events: list[PlannedEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class SessionStorage(Protocol):
    """The port the use cases need from the store."""

    def ref(self, project: str, session_id: str) -> SessionRef: ...
    def refs(self, project: str | None = None) -> list[SessionRef]: ...
    def find(self, id_or_prefix: str) -> SessionRef: ...
    def read(self, ref: SessionRef) -> list[ev.EventBase]: ...
    def event_store(self, project: str) -> EventStore[str]: ...
    def index_locked(self, project: str) -> AbstractContextManager[dict[str, dict[str, Any]]]: ...
    def load_index(self, project: str) -> dict[str, dict[str, Any]]: ...
    def projects(self) -> list[str]: ...
    def write_transcript(self, ref: SessionRef, lines: list[str]) -> Path: ...
    def remove(self, ref: SessionRef) -> list[Path]: ...
    def acquire(self, ref: SessionRef) -> int: ...
    def release(self, ref: SessionRef) -> None: ...
    def spool(self, ref: SessionRef, name: str, text: str) -> Path: ...
    def replace_if_changed(self, ref: SessionRef, events: list[Any]) -> str: ...
    def is_locked(self, ref: SessionRef) -> bool: ...
    def notices(self) -> list[str]: ...


# ---- writing ----------------------------------------------------------------------------------


class SessionWriter:
    """The one writer of a session: every ``record`` is one line on disk before it returns."""

    def __init__(self, storage: SessionStorage, ref: SessionRef, session: Session, clock: Clock) -> None:
        self.storage = storage
        self.ref = ref
        self.session = session
        self.clock = clock
        self._store = storage.event_store(ref.project)
        self._closed = False
        last = storage.acquire(ref)
        if last != session.version - len(session.pending_events):
            storage.release(ref)
            raise SessionBusy(ref.id, f"its log already reaches seq {last}")
        self._save()

    @property
    def log_path(self) -> Path:
        return self.ref.log

    def record(self, event_cls: type[E], **fields: Any) -> E:
        """Append one event now (``seq``, ``time`` and ``v`` are filled in)."""
        if self._closed:
            raise RuntimeError(f"session {self.ref.id} writer is closed")
        record = self.session.record(event_cls, self.clock(), **fields)
        self._save()
        if isinstance(record, ev.SessionEnd):
            update_index(self.storage, self.ref)
        return record

    def write_spool(self, name: str, text: str) -> Path:
        """Write a cut result's whole text once under ``name`` (``a1.c3``); returns the absolute
        path for the pointer line (the ``SpoolWriter`` port)."""
        return self.storage.spool(self.ref, name, text)

    def transcript(self) -> Path:
        """Rebuild ``<id>.claude.jsonl`` (hooks ask for it before they fire)."""
        return write_transcript(self.storage, self.ref)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            update_index(self.storage, self.ref)
            self.storage.release(self.ref)

    def _save(self) -> None:
        try:
            self._store.put(self.session.collect_events())
        except IntegrityError as exc:
            raise SessionBusy(self.ref.id, "another writer appended to it") from exc


def start_session(storage: SessionStorage, clock: Clock, **start: Any) -> SessionWriter:
    """Create a session from its ``session.start`` fields (``session`` and ``project`` included)."""
    ref = storage.ref(start["project"], start["session"])
    session = Session.begin(clock(), **start)
    return SessionWriter(storage, ref, session, clock)


def reopen_session(storage: SessionStorage, clock: Clock, session_id: str) -> SessionWriter:
    """Become the writer of an existing session, to append a new request to it."""
    ref = storage.find(session_id)
    storage.acquire(ref)  # before reading, so nothing is appended between the read and the first write
    try:
        session = replay(ref.id, storage.read(ref))
        if session is None:
            raise SessionNotFound(session_id)
        if session.imported:
            raise SessionNotResumable(ref.id, CLAUDE_CODE_TAG)
        return SessionWriter(storage, ref, session, clock)
    except BaseException:
        storage.release(ref)
        raise


# ---- resume -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResumeState:
    """What ``--resume``/``--continue`` need: the root's context and plan, and the first start."""

    session: str
    project: str
    start: ev.SessionStart
    requests: int
    root: AgentContext
    plan: str | None
    last_seq: int


def load_for_resume(storage: SessionStorage, session_id: str) -> ResumeState:
    """Rebuild the root agent's context and plan from the log. Subagents are not resumed."""
    ref = storage.find(session_id)
    records = storage.read(ref)
    if not records or not isinstance(records[0], ev.SessionStart):
        raise SessionNotFound(session_id)
    start = records[0]
    if CLAUDE_CODE_TAG in start.tags:
        raise SessionNotResumable(ref.id, CLAUDE_CODE_TAG)
    contexts = Contexts()
    contexts.feed(record for record in records if getattr(record, "agent", ROOT_AGENT) == ROOT_AGENT)
    root = contexts.agents.get(ROOT_AGENT, AgentContext(ROOT_AGENT, kind="root"))
    requests = sum(1 for record in records if isinstance(record, ev.SessionStart))
    return ResumeState(ref.id, ref.project, start, requests, root, root.plan, records[-1].seq)


def latest_session(storage: SessionStorage, project: str) -> str | None:
    """The project's most recently updated aerix session (``--continue``), if any."""
    entries = [entry for entry in list_sessions(storage, project) if not entry.imported]
    return entries[0].id if entries else None


# ---- projections on disk --------------------------------------------------------------------------


def write_transcript(storage: SessionStorage, ref: SessionRef) -> Path:
    transcript = ClaudeTranscript()
    transcript.feed(storage.read(ref))
    return storage.write_transcript(ref, transcript_lines(transcript))


def update_index(storage: SessionStorage, ref: SessionRef) -> IndexEntry:
    """Bring the session's index entry up to its log, folding only the events it has not seen."""
    records = storage.read(ref)
    with storage.index_locked(ref.project) as entries:
        stored = entries.get(ref.id)
        entry = IndexEntry.from_json(stored) if stored else IndexEntry()
        if records and entry.position > records[-1].seq:
            entry = IndexEntry()  # the log was replaced by a shorter one: fold it again
        entry.feed(records)
        if entry.id:
            entries[ref.id] = entry.to_json()
    return entry


def list_sessions(
    storage: SessionStorage, project: str | None = None, unreadable: list[str] | None = None
) -> list[IndexEntry]:
    """Index entries, newest first; a log the index does not know yet is folded and added. A log
    that cannot be read is left out (its error line joins ``unreadable``): one damaged log must
    not hide every other session."""
    result: list[IndexEntry] = []
    projects = [project] if project else storage.projects()
    for name in projects:
        known = storage.load_index(name)
        refs = storage.refs(name)
        missing = [ref for ref in refs if ref.id not in known]
        stale = set(known) - {ref.id for ref in refs}
        if missing or stale:
            with storage.index_locked(name) as entries:
                for session_id in stale:
                    entries.pop(session_id, None)
                for ref in missing:
                    entry = IndexEntry()
                    try:
                        entry.feed(storage.read(ref))
                    except (SessionLogCorrupt, SessionSchemaTooNew) as error:
                        if unreadable is not None:
                            unreadable.append(f"{ref.project}/{ref.id} left out: {error}")
                        continue
                    if entry.id:
                        entries[ref.id] = entry.to_json()
                known = dict(entries)
        result.extend(IndexEntry.from_json(entry) for entry in known.values())
    result.sort(key=lambda entry: (entry.updated or _EPOCH, entry.id), reverse=True)
    return result


def show_session(storage: SessionStorage, session_id: str) -> tuple[SessionRef, list[ev.EventBase]]:
    ref = storage.find(session_id)
    return ref, storage.read(ref)


RemoveHook = Callable[[SessionRef, ev.SessionStart | None], None]


def remove_session(storage: SessionStorage, session_id: str, also: RemoveHook | None = None) -> list[Path]:
    """Delete a session's log, spool, transcript and index entry. ``also`` runs first with the
    session's start (the profile's ``session/<id>`` branch is removed there, by its owner)."""
    ref = storage.find(session_id)
    if storage.is_locked(ref):
        raise SessionBusy(ref.id, "a running aerix")
    if also is not None:
        records = storage.read(ref)
        start = records[0] if records and isinstance(records[0], ev.SessionStart) else None
        also(ref, start)
    removed = storage.remove(ref)
    with storage.index_locked(ref.project) as entries:
        entries.pop(ref.id, None)
    return removed


# ---- rebuild --------------------------------------------------------------------------------------


@dataclass
class RebuildReport:
    session: str
    project: str
    events: int = 0
    problems: list[str] = field(default_factory=list)
    transcript: Path | None = None


def rebuild(storage: SessionStorage, session_id: str | None = None) -> list[RebuildReport]:
    """Verify each log, rebuild its index entry and transcript from scratch; one report each."""
    refs = [storage.find(session_id)] if session_id else storage.refs()
    reports = []
    for project in sorted({ref.project for ref in refs}):
        with storage.index_locked(project) as entries:
            if session_id is None:
                entries.clear()
            for ref in (ref for ref in refs if ref.project == project):
                reports.append(_rebuild_one(storage, ref, entries))
    return reports


def _rebuild_one(
    storage: SessionStorage, ref: SessionRef, entries: dict[str, dict[str, Any]]
) -> RebuildReport:
    report = RebuildReport(ref.id, ref.project)
    try:
        records = storage.read(ref)
    except Exception as exc:
        report.problems.append(str(exc))
        entries.pop(ref.id, None)
        return report
    report.problems.extend(storage.notices())
    report.problems.extend(verify(records, ref.log))
    report.events = len(records)
    entry, transcript = IndexEntry(), ClaudeTranscript()
    feed_all([entry, transcript], records)
    if entry.id:
        entries[ref.id] = entry.to_json()
    report.transcript = storage.write_transcript(ref, transcript_lines(transcript))
    return report


def verify(records: list[ev.EventBase], log: Path) -> Iterator[str]:
    """What is wrong with a log's sequence (each line already parsed as an event)."""
    if records and not isinstance(records[0], ev.SessionStart):
        yield f"{log}:1: the first event is {records[0].type}, not session.start"
    expected = 1
    for number, record in enumerate(records, 1):
        if record.seq != expected:
            yield f"{log}:{number}: seq {record.seq} where {expected} was expected"
        expected = record.seq + 1


# ---- import -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportOutcome:
    session: str
    project: str
    state: str
    events: int
    problems: list[str]
    note: str | None = None


def import_session(storage: SessionStorage, plan: ImportPlan) -> ImportOutcome:
    """Store one converted session. The same source gives the same bytes, so importing it again
    changes nothing (``unchanged``); a source that grew replaces the log whole (``updated``).
    Claude Code only appends to a transcript, so a source giving fewer events than the stored
    import is a partial copy: the store's is ``kept`` (with a line saying how to replace it)."""
    session = Session.begin(plan.start_time, **plan.start)
    for planned in plan.events:
        session.record(planned.cls, planned.time, **planned.fields)
    events = session.collect_events()
    ref = storage.ref(plan.start["project"], plan.start["session"])
    stored = _stored_event_count(storage, ref)
    if stored > len(events):
        kept = (
            f"the store's import of {ref.id} has {stored} events and this source only {len(events)} "
            f"(a partial copy?); kept the store's; `aerix sessions rm {ref.id}` first to replace it"
        )
        return ImportOutcome(ref.id, ref.project, "kept", stored, list(plan.problems), kept)
    state = storage.replace_if_changed(ref, list(events))
    if state != "unchanged":
        with storage.index_locked(ref.project) as entries:
            entry = IndexEntry()
            entry.feed(event.record for event in events)  # type: ignore[attr-defined]
            entries[ref.id] = entry.to_json()
    return ImportOutcome(ref.id, ref.project, state, len(events), list(plan.problems))


def _stored_event_count(storage: SessionStorage, ref: SessionRef) -> int:
    """How many events the session's log holds now; 0 when there is none or it cannot be read
    (a damaged import is then replaced, which repairs it)."""
    if not ref.log.exists():
        return 0
    try:
        return len(storage.read(ref))
    except (SessionLogCorrupt, SessionSchemaTooNew):
        return 0

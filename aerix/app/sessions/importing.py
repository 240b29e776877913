"""Importing sessions from Claude Code into the store (``aerix import claude``).

Read and convert (``ClaudeSessionSource``), then store each session (``import_session``): the
same source gives the same bytes, so importing again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aerix.app.ports.sessions import ClaudeSessionSource, ImportPlan, SessionRef, SessionStorage
from aerix.app.sessions.views import stamped
from aerix.domain.session import Session
from aerix.errors import ClaudeImportError, SessionLogCorrupt, SessionSchemaTooNew
from aerix.projections.index import IndexEntry


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
    events = session.take_new_records()
    ref = storage.catalog.ref(plan.start["project"], plan.start["session"])
    stored = _stored_event_count(storage, ref)
    if stored > len(events):
        kept = (
            f"the store's import of {ref.id} has {stored} events and this source only {len(events)} "
            f"(a partial copy?); kept the store's; `aerix sessions rm {ref.id}` first to replace it"
        )
        return ImportOutcome(ref.id, ref.project, "kept", stored, list(plan.problems), kept)
    state = storage.log.replace_if_changed(ref, events)
    if state != "unchanged":
        with storage.views.index_locked(ref.project) as entries:
            entry = IndexEntry()
            entry.feed(events)
            entries[ref.id] = stamped(entry, storage.catalog.log_size(ref))
    return ImportOutcome(ref.id, ref.project, state, len(events), list(plan.problems))


def _stored_event_count(storage: SessionStorage, ref: SessionRef) -> int:
    """How many events the session's log holds now; 0 when there is none or it cannot be read
    (a damaged import is then replaced, which repairs it)."""
    if not storage.catalog.exists(ref):
        return 0
    try:
        return len(storage.log.read(ref))
    except (SessionLogCorrupt, SessionSchemaTooNew):
        return 0


@dataclass(frozen=True)
class ImportReport:
    """What ``aerix import claude`` did: one outcome per session, from how many files."""

    outcomes: list[ImportOutcome] = field(default_factory=list)
    files: int = 0

    @property
    def problems(self) -> int:
        return sum(len(outcome.problems) for outcome in self.outcomes)


def import_claude(
    storage: SessionStorage,
    source: ClaudeSessionSource,
    paths: Sequence[Path] = (),
    on_left_out: Callable[[Path], None] = lambda path: None,
) -> ImportReport:
    """Copy Claude Code's sessions under ``paths`` (default: Claude Code's projects folder) into
    the store. A file that holds no session is reported to ``on_left_out`` and skipped; finding
    no session at all is ``ClaudeImportError``."""
    sources = list(paths) or source.default_sources()
    found = source.find(sources)
    for path in found.not_transcripts:
        on_left_out(path)
    if not found.plans:
        raise ClaudeImportError(f"no Claude Code transcripts under {', '.join(map(str, sources))}")
    outcomes = [import_session(storage, plan) for plan in found.plans]
    return ImportReport(outcomes, len(found.files) - len(found.not_transcripts))

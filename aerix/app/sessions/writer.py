"""Writing a session: the one writer of a log, and opening a session new or to append to.

The agent loop records through ``SessionWriter``; every ``record`` is one line on disk before it
returns. The writer is the session's one publisher: it validates and appends each event, then
hands that same event to the session's views in the one order ``VIEWS`` declares. The first is
the session's index entry, which the writer keeps itself and writes to ``index.json`` at the
session's end and when it closes, without reading the log back (closing right after the end, as
``aerix -p`` does, writes it once); the held session and each request attach the others.

The tuning corpus (``aerix.projections.corpus``) is a fold of the same events but not a view:
nothing reads it while a session runs, since ``aerix tune`` is its own process over the newest
finished sessions of a profile and model, which it picks from the index and folds from their logs.

Starting a session writes its ``session.start``; reopening one (``--resume``, ``--continue``)
becomes its only writer before reading it, so nothing is appended in between; forking one
(``--fork-session``) copies its log to a new session and becomes the copy's writer.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Protocol, cast

from aerix.app.ports.sessions import Clock, E, SessionRef, SessionStorage
from aerix.app.sessions.views import store_index_entry
from aerix.domain import events as ev
from aerix.domain.session import CLAUDE_CODE_TAG, Session, replay
from aerix.domain.settings import SyncPolicy
from aerix.errors import SessionBusy, SessionNotFound, SessionNotResumable, UsageError
from aerix.projections.index import IndexEntry

VIEWS: Final = (
    "index",  # the session's index.json entry (IndexEntry): the writer's own
    "resume point",  # where the next request of a held session starts (ResumePoint)
    "contexts",  # every agent's context (Contexts): what each agent's live context reads
    "claude transcript",  # <id>.claude.jsonl, written at each commit point (TranscriptFollower)
    "status figures",  # what the status lines show (StatusFigures)
    "request totals",  # the running request's usage, touched paths and pieces (RequestTotals)
    "claude stream",  # the stream-json fold (ClaudeStream)
    "output",  # the request's observer: what it prints or shows, read from the views above
)
"""Every view of a session, in the order the writer feeds each event to them. Nothing else hears
an event: a view is attached under one of these names or not at all, so this list is everything
an event reaches, and its order is the order they see it in (the output reads the figures and
the stream fold it prints, so they take the event before it; the session's own views come
before a request's, so an output that fails on an event, a closed pipe, leaves no agent's
context behind the log)."""


class View(Protocol):
    """A fold with a position: it applies the events after ``position`` it is given, in order,
    and ignores any other (``aerix.projections.base.Projection``)."""

    @property
    def position(self) -> int: ...

    def feed(self, events: Sequence[ev.EventBase]) -> None: ...

    def take(self, event: ev.EventBase) -> None: ...


class SessionWriter:
    """The one writer of a session: every ``record`` is one line written before it returns, and
    synced to disk at each commit point (``events.COMMIT_EVENTS``) unless ``sync`` is
    ``release`` (then only when the writer is closed)."""

    def __init__(
        self,
        storage: SessionStorage,
        ref: SessionRef,
        session: Session,
        clock: Clock,
        sync: SyncPolicy = "commit",
        history: Sequence[ev.EventBase] = (),
    ) -> None:
        """``history``: the events the log holds already (a reopened or forked session's)."""
        self.storage = storage
        self.ref = ref
        self.session = session
        self.clock = clock
        self.sync_at_commits = sync == "commit"
        self._closed = False
        #: The log as this writer knows it (what it read, then what it wrote): a view attached
        #: late catches up from it, from its own position.
        self._events: list[ev.EventBase] = list(history)
        self._views: dict[str, View] = {}
        self._feeding: list[View] = []  # the views attached, in the order of VIEWS
        self.index = IndexEntry()
        #: Whether ``index.json`` holds the entry as it is now (stored at a session.end, nothing
        #: recorded since): closing then has nothing to add, and each write of the index is
        #: three syncs to disk.
        self._index_stored = False
        self.attach("index", self.index)
        last = storage.log.acquire(ref)
        if last != session.version - len(session.pending):
            storage.log.release(ref)
            raise SessionBusy(ref.id, f"its log already reaches seq {last}")
        #: What opening it wrote (a new session's session.start), as written.
        self.opening = self._save()
        self._publish(self.opening)

    @property
    def log_path(self) -> Path:
        return self.ref.log

    def attach(self, name: str, view: View, since: int = 0) -> None:
        """Feed ``view`` every event recorded from now on, at ``name``'s place in ``VIEWS``; first
        it catches up with the events after its position (and after ``since``: a request's views
        start at its ``session.start``) that the log holds already."""
        if name not in VIEWS:
            raise ValueError(f"{name!r} is not a view of a session; they are: {', '.join(VIEWS)}")
        if name in self._views:
            raise ValueError(f"session {self.ref.id} has its {name} view already")
        after = max(view.position, since)
        view.feed(self._events[bisect.bisect_right(self._events, after, key=_seq) :])
        self._views[name] = view
        self._feeding = [self._views[known] for known in VIEWS if known in self._views]

    def detach(self, name: str) -> None:
        """Stop feeding the view attached as ``name`` (a request's, at its end)."""
        del self._views[name]
        self._feeding = [self._views[known] for known in VIEWS if known in self._views]

    def record(self, event_cls: type[E], **fields: Any) -> E:
        """Append one event now (``seq``, ``time`` and ``v`` are filled in), then publish it;
        the event as written (the one every view is handed)."""
        if self._closed:
            raise RuntimeError(f"session {self.ref.id} writer is closed")
        record = self.session.record(event_cls, self.clock(), **fields)
        self._index_stored = False
        written = self._save(sync=self.sync_at_commits and isinstance(record, ev.COMMIT_EVENTS))
        self._publish(written)
        if isinstance(record, ev.SessionEnd):
            store_index_entry(self.storage, self.ref, self.index)
            self._index_stored = True
        return cast(E, written[-1])

    def sync(self) -> None:
        """Make everything recorded so far durable now (a hook or the screen is about to report
        something as done)."""
        if self.sync_at_commits:
            self.storage.log.sync(self.ref)

    def settle(self) -> None:
        """A request is over and the writer stays open for the next (a held session): make the
        log as durable as closing would, which ``release`` otherwise leaves to the close."""
        if not self.sync_at_commits:
            self.storage.log.sync(self.ref)

    def write_spool(self, name: str, text: str) -> Path:
        """Write a cut result's whole text once under ``name`` (``a1.c3``); returns the absolute
        path for the pointer line (the ``SpoolWriter`` port)."""
        return self.storage.spool.write(self.ref, name, text)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if not self._index_stored:
                store_index_entry(self.storage, self.ref, self.index)
            self.storage.log.release(self.ref)

    def _save(self, sync: bool = False) -> list[ev.EventBase]:
        return self.storage.log.append(self.ref, self.session.take_new_records(), sync=sync)

    def _publish(self, records: list[ev.EventBase]) -> None:
        self._events.extend(records)
        for record in records:
            for view in self._feeding:
                view.take(record)


def _seq(event: ev.EventBase) -> int:
    return event.seq


def start_session(
    storage: SessionStorage,
    clock: Clock,
    *,
    sync: SyncPolicy = "commit",
    **start: Any,
) -> SessionWriter:
    """Create a session from its ``session.start`` fields (``session`` and ``project`` included)."""
    ref = storage.catalog.ref(start["project"], start["session"])
    session = Session.begin(clock(), **start)
    return SessionWriter(storage, ref, session, clock, sync)


def reopen_session(
    storage: SessionStorage,
    clock: Clock,
    session_id: str,
    sync: SyncPolicy = "commit",
) -> SessionWriter:
    """Become the writer of an existing session, to append a new request to it."""
    ref = storage.catalog.find(session_id)
    storage.log.acquire(ref)  # before reading, so nothing is appended between the read and the first write
    try:
        records = storage.log.read(ref)
        session = replay(records)
        if session is None:
            raise SessionNotFound(session_id)
        if session.imported:
            raise SessionNotResumable(ref.id, CLAUDE_CODE_TAG)
        return SessionWriter(storage, ref, session, clock, sync, history=records)
    except BaseException:
        storage.log.release(ref)
        raise


def fork_session(
    storage: SessionStorage,
    clock: Clock,
    session_id: str,
    fork_id: str,
    project: str,
    sync: SyncPolicy = "commit",
) -> SessionWriter:
    """Copy a session to ``fork_id`` in ``project`` (the folder of the directory the fork runs
    in, as a new session's) and become the copy's writer: every event as it was, with each
    ``session.start`` naming the copy (its file), so the copy replays and resumes without the
    original, which is only read."""
    ref = storage.catalog.find(session_id)
    records = storage.log.read(ref)
    source = replay(records)
    if source is None:
        raise SessionNotFound(session_id)
    if source.imported:
        raise SessionNotResumable(ref.id, CLAUDE_CODE_TAG)
    copy = [
        record.model_copy(update={"session": fork_id}) if isinstance(record, ev.SessionStart) else record
        for record in records
    ]
    fork = storage.catalog.ref(project, fork_id)
    if storage.catalog.exists(fork):
        raise UsageError(f"session {fork_id} already exists; give --session-id a new UUID")
    storage.log.acquire(fork)
    try:
        storage.log.append(fork, copy, sync=sync == "commit")
        session = replay(copy)
        if session is None:  # the copy of a session that replayed; never None here
            raise SessionNotFound(fork_id)
        storage.log.release(fork)
        return SessionWriter(storage, fork, session, clock, sync, history=copy)
    except BaseException:
        storage.log.release(fork)
        raise

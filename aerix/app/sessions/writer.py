"""Writing a session: the one writer of a log, and opening a session new or to append to.

The agent loop records through ``SessionWriter``; every ``record`` is one line on disk before it
returns. The writer is the session's one publisher: it validates and appends each event, then
hands that same event to each subscriber in the order they subscribed (the request's transcript
follower, usage totals and observer; the session's index entry, a projection it keeps itself and
writes to ``index.json`` at the session's end and when it closes, without reading the log back;
closing right after the end, as ``aerix -p`` does, writes it once).

Starting a session writes its ``session.start``; reopening one (``--resume``, ``--continue``)
becomes its only writer before reading it, so nothing is appended in between; forking one
(``--fork-session``) copies its log to a new session and becomes the copy's writer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

from aerix.app.ports.sessions import Clock, E, SessionRef, SessionStorage
from aerix.app.sessions.views import store_index_entry
from aerix.domain import events as ev
from aerix.domain.session import CLAUDE_CODE_TAG, Session, replay
from aerix.domain.settings import SyncPolicy
from aerix.errors import SessionBusy, SessionNotFound, SessionNotResumable, UsageError
from aerix.projections.index import IndexEntry

Subscriber = Callable[[ev.EventBase], None]
"""Takes each event the writer records, after it is on disk, in order."""


class SessionView(Protocol):
    """A fold the writer keeps for as long as it is open (the index entry; a held session's
    resume point): fed the events the log holds already, then each one recorded."""

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
        views: Sequence[SessionView] = (),
    ) -> None:
        """``history``: the events the log holds already (a reopened or forked session's);
        ``views``: folds fed that history and then every event recorded, after the index entry."""
        self.storage = storage
        self.ref = ref
        self.session = session
        self.clock = clock
        self.sync_at_commits = sync == "commit"
        self._closed = False
        self._subscribers: list[Subscriber] = []
        self.index = IndexEntry()
        #: Whether ``index.json`` holds the entry as it is now (stored at a session.end, nothing
        #: recorded since): closing then has nothing to add, and each write of the index is
        #: three syncs to disk.
        self._index_stored = False
        for view in (self.index, *views):
            view.feed(history)
            self.subscribe(view.take)
        last = storage.log.acquire(ref)
        if last != session.version - len(session.pending):
            storage.log.release(ref)
            raise SessionBusy(ref.id, f"its log already reaches seq {last}")
        # What opening it wrote (a new session's session.start), as written: what a subscriber
        # added later, such as the transcript's follower, is handed instead of reading it back.
        self.opening = self._save()
        self._publish(self.opening)

    @property
    def log_path(self) -> Path:
        return self.ref.log

    def subscribe(self, subscriber: Subscriber) -> None:
        """Hand ``subscriber`` every event recorded from now on, after those subscribed before."""
        self._subscribers.append(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.remove(subscriber)

    def record(self, event_cls: type[E], **fields: Any) -> E:
        """Append one event now (``seq``, ``time`` and ``v`` are filled in), then publish it;
        the event as written (the one every subscriber is handed)."""
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
        for record in records:
            for subscriber in list(self._subscribers):
                subscriber(record)


def start_session(
    storage: SessionStorage,
    clock: Clock,
    *,
    sync: SyncPolicy = "commit",
    views: Sequence[SessionView] = (),
    **start: Any,
) -> SessionWriter:
    """Create a session from its ``session.start`` fields (``session`` and ``project`` included)."""
    ref = storage.catalog.ref(start["project"], start["session"])
    session = Session.begin(clock(), **start)
    return SessionWriter(storage, ref, session, clock, sync, views=views)


def reopen_session(
    storage: SessionStorage,
    clock: Clock,
    session_id: str,
    sync: SyncPolicy = "commit",
    views: Sequence[SessionView] = (),
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
        return SessionWriter(storage, ref, session, clock, sync, history=records, views=views)
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
    views: Sequence[SessionView] = (),
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
        return SessionWriter(storage, fork, session, clock, sync, history=copy, views=views)
    except BaseException:
        storage.log.release(fork)
        raise

"""The Session aggregate: the single event stream behind a session log.

The aggregate's events are the session's records themselves (aerix.domain.events): each one
is validated as it is made, numbered with the next ``seq`` (the aggregate's version) and
folded into the few facts writing needs. Nothing wraps them: the same value is kept as
pending, handed to the store and fed to the projections. eventsourcing's part is the version
check (``OriginatorVersionError`` for an event that is not the next one, as its aggregates
raise).

The aggregate is pure: it never reads a clock. Callers pass the time of every event in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from eventsourcing.domain import OriginatorVersionError

from aerix.domain import events as ev

CLAUDE_CODE_TAG = "claude-code"
"""Tag of sessions copied from Claude Code by ``aerix import claude``."""

E = TypeVar("E", bound=ev.EventBase)


class Session:
    """A session's stream. Its state is only what writing needs; everything else is a projection."""

    def __init__(self, start: ev.SessionStart) -> None:
        self.id = start.session
        self.version = 0
        self.start = start
        self.requests = 0
        self.ended = False
        self.agents: set[str] = set()
        self.pending: list[ev.EventBase] = []
        """Records made by ``record`` and not yet taken by ``take_new_records``."""
        self.take(start)

    @classmethod
    def begin(cls, at: datetime, **fields: Any) -> Session:
        """Create a session from its first ``session.start`` fields (``session`` is its id)."""
        session = cls(ev.SessionStart(seq=1, time=at, **fields))
        session.pending.append(session.start)
        return session

    def record(self, event_cls: type[E], at: datetime, **fields: Any) -> E:
        """Append one event of ``event_cls`` at time ``at``; returns the validated record."""
        record = event_cls(seq=self.version + 1, time=at, **fields)
        self.take(record)
        self.pending.append(record)
        return record

    def take_new_records(self) -> list[ev.EventBase]:
        """The records made since the last call, to be stored."""
        taken, self.pending = self.pending, []
        return taken

    @property
    def imported(self) -> bool:
        return CLAUDE_CODE_TAG in self.start.tags

    def take(self, record: ev.EventBase) -> None:
        """Fold one record into the aggregate's own state; it must be the next one."""
        if record.seq != self.version + 1:
            raise OriginatorVersionError(record.seq, self.version + 1)
        self.version = record.seq
        if isinstance(record, ev.SessionStart):
            self.requests += 1
            self.ended = False
        elif isinstance(record, ev.AgentSpawn):
            self.agents.add(record.agent)
        elif isinstance(record, ev.SessionEnd):
            self.ended = True


def replay(records: list[ev.EventBase]) -> Session | None:
    """Rebuild the aggregate from its records, in order (None when there are none). The first
    must be a ``session.start``; each one after it the next ``seq``."""
    if not records:
        return None
    first = records[0]
    if not isinstance(first, ev.SessionStart):
        raise ValueError(f"a session begins with session.start, not {first.type}")
    aggregate = Session(first)
    for record in records[1:]:
        aggregate.take(record)
    return aggregate

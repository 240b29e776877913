"""The Session aggregate: the single event stream behind a session log.

It is an eventsourcing aggregate with a string id (the session id) whose version is the
``seq`` of its last event. Each event type of aerix.domain.events has one eventsourcing event
class here, with an explicit short topic equal to the event's ``type`` (``segment``,
``agent.end``…), so the stored topic and the JSON line agree. The eventsourcing event carries
the validated pydantic record; applying it folds the few facts the aggregate itself needs.

The aggregate is pure: it never reads a clock. Callers pass the time of every event in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, TypeVar, cast

from eventsourcing.domain import (
    BaseAggregate,
    CanInitAggregate,
    CanMutateAggregate,
    OriginatorVersionError,
)
from eventsourcing.utils import register_topic

from aerix.domain import events as ev

CLAUDE_CODE_TAG = "claude-code"
"""Tag of sessions copied from Claude Code by ``aerix import claude``."""

AGGREGATE_TOPIC = "session"

E = TypeVar("E", bound=ev.EventBase)


@dataclass(frozen=True)
class Recorded(CanMutateAggregate[str]):
    """An eventsourcing event wrapping one validated session event."""

    originator_id: str
    originator_version: int
    timestamp: datetime
    record: ev.EventBase

    TOPIC: ClassVar[str] = "session.event"

    def apply(self, aggregate: Any) -> None:
        aggregate.take(self.record)


@dataclass(frozen=True)
class Started(Recorded, CanInitAggregate[str]):
    """``session.start``: creates the aggregate when first, marks a new request when later."""

    originator_topic: str = AGGREGATE_TOPIC
    TOPIC: ClassVar[str] = "session.start"

    def mutate(self, aggregate: Any) -> Any:
        if aggregate is None:
            return CanInitAggregate.mutate(self, aggregate)
        return CanMutateAggregate.mutate(self, aggregate)


def _recorded_class(event_type: str) -> type[Recorded]:
    name = "".join(part.title() for part in event_type.replace(".", "_").split("_"))
    return type(name, (Recorded,), {"TOPIC": event_type, "__qualname__": f"Recorded.{name}"})


EVENT_CLASSES: dict[str, type[Recorded]] = {
    name: (Started if name == "session.start" else _recorded_class(name)) for name in ev.BY_TYPE
}
for _topic, _cls in EVENT_CLASSES.items():
    register_topic(_topic, _cls)


class Session(BaseAggregate[str]):
    """A session's stream. Its state is only what writing needs; everything else is a projection."""

    TOPIC = AGGREGATE_TOPIC

    def __init__(self, record: ev.EventBase) -> None:
        # Filled by take(); __init__ runs only through Started's CanInitAggregate.mutate.
        self.start: ev.SessionStart | None = None
        self.requests = 0
        self.ended = False
        self.agents: set[str] = set()

    @classmethod
    def begin(cls, at: datetime, **fields: Any) -> Session:
        """Create a session from its first ``session.start`` fields (``session`` is its id)."""
        record = ev.SessionStart(seq=1, time=at, **fields)
        return cls._create(Started, id=record.session, timestamp=at, record=record)

    def record(self, event_cls: type[E], at: datetime, **fields: Any) -> E:
        """Append one event of ``event_cls`` at time ``at``; returns the validated record."""
        record = event_cls(seq=self.version + 1, time=at, **fields)
        self.trigger_event(EVENT_CLASSES[record.type], timestamp=at, record=record)
        return record

    def take_new_records(self) -> list[ev.EventBase]:
        """The records of the events recorded since the last call, to be stored (eventsourcing's
        ``collect_events``, unwrapped: every event this aggregate triggers is a ``Recorded``)."""
        return [event.record for event in cast(list[Recorded], self.collect_events())]

    @property
    def imported(self) -> bool:
        return self.start is not None and CLAUDE_CODE_TAG in self.start.tags

    def take(self, record: ev.EventBase) -> None:
        """Fold one record into the aggregate's own state."""
        if isinstance(record, ev.SessionStart):
            if self.start is None:
                self.start = record
            self.requests += 1
            self.ended = False
        elif isinstance(record, ev.AgentSpawn):
            self.agents.add(record.agent)
        elif isinstance(record, ev.SessionEnd):
            self.ended = True


def wrap(session_id: str, record: ev.EventBase) -> Recorded:
    """The eventsourcing event for a record read back from a log."""
    cls = EVENT_CLASSES[record.type]
    event = object.__new__(cls)
    state: dict[str, Any] = {
        "originator_id": session_id,
        "originator_version": record.seq,
        "timestamp": record.time,
        "record": record,
    }
    if cls is Started:
        state["originator_topic"] = AGGREGATE_TOPIC
    object.__setattr__(event, "__dict__", state)
    return event


def replay(session_id: str, records: list[ev.EventBase]) -> Session | None:
    """Rebuild the aggregate from its records, in order (None when there are none).

    The first record creates the aggregate through eventsourcing. The rest are folded straight
    in, with the check ``CanMutateAggregate.mutate`` makes (each version the next one), rather
    than wrapped in an eventsourcing event each: reopening a long session paid for the wrapping.
    """
    if not records:
        return None
    aggregate = wrap(session_id, records[0]).mutate(None)
    if aggregate is None:  # the signature allows it; creating never gives None
        return None
    version = aggregate.version
    for record in records[1:]:
        if record.seq != version + 1:
            raise OriginatorVersionError(record.seq, version + 1)
        aggregate.take(record)
        version = record.seq
    if len(records) > 1:
        aggregate.version = version
        aggregate.modified_on = records[-1].time
    return aggregate

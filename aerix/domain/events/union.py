"""Every event type at once: the discriminated union a line validates against, the tables by
type (the agent's events, the commit points), parsing a decoded line, and the JSON Schemas
``aerix sessions schema`` exports."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from aerix.domain.events.agent import AgentEnd, AgentSpawn, Hook, Job, Plan
from aerix.domain.events.base import SCHEMA_VERSION, EventBase
from aerix.domain.events.context import Compaction, ContextOp, Segment
from aerix.domain.events.messages import Message
from aerix.domain.events.session import Foreign, RouteDecision, SessionEnd, SessionStart
from aerix.domain.events.upcasting import upcast

Event = Annotated[
    SessionStart
    | RouteDecision
    | AgentSpawn
    | Segment
    | Message
    | ContextOp
    | Compaction
    | Plan
    | Job
    | Hook
    | AgentEnd
    | SessionEnd
    | Foreign,
    Field(discriminator="type"),
]

EVENT_TYPES: tuple[type[EventBase], ...] = (
    SessionStart,
    RouteDecision,
    AgentSpawn,
    Segment,
    Message,
    ContextOp,
    Compaction,
    Plan,
    Job,
    Hook,
    AgentEnd,
    SessionEnd,
    Foreign,
)
#: The events that belong to one agent (they carry its id in ``agent``); the rest are the
#: session's own (its start and end, the route, foreign lines).
AGENT_EVENTS: tuple[
    type[AgentSpawn | Segment | Message | ContextOp | Compaction | Plan | Job | Hook | AgentEnd], ...
] = (
    AgentSpawn,
    Segment,
    Message,
    ContextOp,
    Compaction,
    Plan,
    Job,
    Hook,
    AgentEnd,
)


#: Commit points: the events after which a user would lose work if the log were lost — the end
#: of each turn and each tool result (``message``), ``agent.end`` and ``session.end``. The log is
#: synced to disk after each of them (setting ``session.sync``).
COMMIT_EVENTS: tuple[type[Message | AgentEnd | SessionEnd], ...] = (Message, AgentEnd, SessionEnd)


def agent_of(record: EventBase) -> str | None:
    """The id of the agent an event belongs to; None for the session's own events."""
    return record.agent if isinstance(record, AGENT_EVENTS) else None


BY_TYPE: dict[str, type[EventBase]] = {cls.model_fields["type"].default: cls for cls in EVENT_TYPES}


@cache
def event_adapter() -> TypeAdapter[Event]:
    """The union's validator, built on first use: building it builds every event model, and a
    command that only writes events (a request) never validates a line it did not make."""
    return TypeAdapter(Event)


def parse_event(line: dict[str, Any]) -> EventBase:
    """Upcast and validate one decoded line. Raises UnknownSchemaVersion or pydantic's ValidationError."""
    return event_adapter().validate_python(upcast(line))


def event_json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of every event type, keyed by its ``type``."""
    return {name: cls.model_json_schema(mode="serialization") for name, cls in BY_TYPE.items()}


def union_json_schema() -> dict[str, Any]:
    """One schema that validates any line of a session log."""
    schema = event_adapter().json_schema(mode="serialization")
    schema["title"] = f"aerix session event (schema v{SCHEMA_VERSION})"
    return schema

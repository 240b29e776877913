"""The session events: the public JSONL contract of ``<id>.jsonl``.

One event is one line, a flat JSON object: ``type``, ``seq`` (1, 2, 3… within the session),
``time`` (ISO 8601 with its offset), ``v`` (the schema version the line was written with) and
the event's own fields. Every event of an agent names it in ``agent``, so each agent's context
can be rebuilt from the log alone. docs/events.md describes each type; ``event_json_schemas()``
exports their JSON Schemas.

Reading goes through ``upcast()``: a line written with an older ``v`` is rewritten, one version
at a time, by the functions in ``UPCASTERS`` before it is validated, so the rest of aerix only
ever sees the current shape.

The models live by family (``base``: what every line carries; ``session``, ``agent``,
``messages``, ``context``; ``upcasting``; ``union``: all types at once and their schemas); this
package re-exports them all, so ``aerix.domain.events`` is the one import path for the schema.
"""

from __future__ import annotations

from aerix.domain.events.agent import AgentEnd, AgentSpawn, Hook, Job, Plan, PlanGateOutcome
from aerix.domain.events.base import (
    SCHEMA_VERSION,
    SESSION_ID_PATTERN,
    AgentKind,
    AgentOutcome,
    EventBase,
    Route,
    StrictModel,
    Verdict,
)
from aerix.domain.events.context import Compaction, ContextOp, Replaced, Segment
from aerix.domain.events.messages import Message, ToolCall, Usage
from aerix.domain.events.session import DiffStats, Foreign, Loaded, RouteDecision, SessionEnd, SessionStart
from aerix.domain.events.union import (
    AGENT_EVENTS,
    BY_TYPE,
    COMMIT_EVENTS,
    EVENT_TYPES,
    Event,
    agent_of,
    event_adapter,
    event_json_schemas,
    parse_event,
    union_json_schema,
)
from aerix.domain.events.upcasting import UPCASTERS, UnknownSchemaVersion, upcast

__all__ = [
    "AGENT_EVENTS",
    "BY_TYPE",
    "COMMIT_EVENTS",
    "EVENT_TYPES",
    "SCHEMA_VERSION",
    "SESSION_ID_PATTERN",
    "UPCASTERS",
    "AgentEnd",
    "AgentKind",
    "AgentOutcome",
    "AgentSpawn",
    "Compaction",
    "ContextOp",
    "DiffStats",
    "Event",
    "EventBase",
    "Foreign",
    "Hook",
    "Job",
    "Loaded",
    "Message",
    "Plan",
    "PlanGateOutcome",
    "Replaced",
    "Route",
    "RouteDecision",
    "Segment",
    "SessionEnd",
    "SessionStart",
    "StrictModel",
    "ToolCall",
    "UnknownSchemaVersion",
    "Usage",
    "Verdict",
    "agent_of",
    "event_adapter",
    "event_json_schemas",
    "parse_event",
    "union_json_schema",
    "upcast",
]

"""The session events: the public JSONL contract of ``<id>.jsonl``.

One event is one line, a flat JSON object: ``type``, ``seq`` (1, 2, 3… within the session),
``time`` (ISO 8601 with its offset), ``v`` (the schema version the line was written with) and
the event's own fields. Every event of an agent names it in ``agent``, so each agent's context
can be rebuilt from the log alone. docs/events.md describes each type; ``event_json_schemas()``
exports their JSON Schemas.

Reading goes through ``upcast()``: a line written with an older ``v`` is rewritten, one version
at a time, by the functions in ``UPCASTERS`` before it is validated, so the rest of aerix only
ever sees the current shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import PydanticSerializationError, to_json

from aerix.domain.segments import SegmentKind, SegmentRole

SCHEMA_VERSION = 2
"""The version this aerix writes. History: 1 was the development draft (see UPCASTERS)."""

SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
"""A session id is a file name: letters, digits, ``.``, ``_`` and ``-``."""

AgentKind = Literal["root", "implementer", "verifier"]
Route = Literal["answer", "edit", "investigate", "plan"]
AgentOutcome = Literal["done", "failed", "killed", "budget"]
Verdict = Literal["pass", "fail"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EventBase(_Model):
    """Fields every line carries, in this order."""

    type: str
    seq: int = Field(ge=1, description="Position in the session, from 1, without gaps.")
    time: datetime = Field(description="When the event happened (ISO 8601 with offset).")
    v: int = Field(default=SCHEMA_VERSION, description="Schema version the line was written with.")


class Loaded(_Model):
    """What startup loaded for a request, as the startup block lists it."""

    instruction_files: list[str] = Field(default_factory=list, description="CLAUDE.md/AGENTS.md files read.")
    skills: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list, description="Agent definitions found.")
    plugins: list[str] = Field(default_factory=list, description="Enabled plugins, by name.")
    hooks: list[str] = Field(default_factory=list, description="Hook events with handler counts.")


class SessionStart(EventBase):
    """A request starts: the first of a session, or a later one (``request`` > 1) on resume."""

    type: Literal["session.start"] = "session.start"
    session: str = Field(pattern=SESSION_ID_PATTERN, description="The session id; also its file name.")
    cwd: str
    project: str = Field(description="The project key: the folder the session lives in.")
    model: str = Field(description="The main member's model.")
    profile: str | None = Field(
        default=None, description="The profile its prompts were read from; null: embedded."
    )
    profile_branch: str | None = Field(default=None, description="The session's branch in it, session/<id>.")
    profile_commit: str | None = Field(default=None, description="The commit its prompts were read from.")
    prompt: str
    prompt_bytes: str | None = Field(
        default=None,
        description="The prompt's bytes as given, base64, when they were not valid UTF-8 "
        "(prompt then holds them with U+FFFD for each invalid sequence).",
    )
    route: Route | None = Field(default=None, description="A shape forced by the caller; else routing picks.")
    aerix_version: str
    request: int = Field(default=1, ge=1, description="1 for the session's first request, then 2, 3…")
    resumed: bool = False
    resumed_from: str | None = Field(default=None, description="The session this one continues, if forked.")
    tags: list[str] = Field(default_factory=list)
    window: int | None = Field(default=None, description="The main member's context window, in tokens.")
    base_commit: str | None = Field(default=None, description="The commit the diff line compares with.")
    git_branch: str | None = Field(
        default=None, description="The branch checked out at the start (empty: none; null: older logs)."
    )
    imported_from: str | None = Field(default=None, description="Source transcript of an imported session.")
    loaded: Loaded | None = Field(
        default=None, description="What startup loaded; null for imported sessions and older logs."
    )


class RouteDecision(EventBase):
    """Routing classified the request."""

    type: Literal["route"] = "route"
    choice: Route
    scores: dict[str, float] = Field(default_factory=dict, description="Log-probability of each shape.")
    member: str | None = None
    raw: str | None = Field(default=None, description="The generated text, when it matched no shape.")


class AgentSpawn(EventBase):
    """An agent starts: the root ``a1``, an implementer ``a1.c3`` (its retry ``a1.c3.r1``) or a
    verifier ``a1.c3.v1``."""

    type: Literal["agent.spawn"] = "agent.spawn"
    agent: str
    parent: str | None = None
    kind: AgentKind
    call: str | None = Field(default=None, description="The parent's agent call that spawned it.")
    definition: str | None = None
    member: str = "main"
    model: str | None = None
    brief: str | None = None
    check: str | None = None
    tools: list[str] = Field(default_factory=list)
    depth: int = 0
    attempt: int = Field(default=1, ge=1)
    max_turns: int | None = None


class Segment(EventBase):
    """A context segment was added, or replaced when ``id`` already exists in that agent's context."""

    type: Literal["segment"] = "segment"
    agent: str
    id: str
    role: SegmentRole
    kind: SegmentKind
    label: str | None = Field(default=None, description="Short label shown by `context status`.")
    text: str
    pinned: bool = False
    tokens: int | None = Field(default=None, description="The pool's token count; null until counted.")
    call: str | None = None
    tool: str | None = None


class Usage(_Model):
    """What the pool reported for one generation."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    recomputed_from: int | None = Field(default=None, description="Where the prefix store resumed.")
    cache_creation_tokens: int | None = Field(
        default=None, description="Of the prompt tokens, those Claude Code cached (imported turns)."
    )
    prefill_ms: float | None = None
    decode_ms: float | None = Field(default=None, description="Time spent streaming tokens.")
    member: str | None = None


class ToolCall(_Model):
    id: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)


class Message(EventBase):
    """One turn of an agent (``role`` assistant, with its usage) or one tool result (``role`` tool)."""

    type: Literal["message"] = "message"
    agent: str
    role: Literal["assistant", "tool"]
    turn: int = Field(default=0, ge=0)
    text: str = Field(description="The turn's raw answer, or the result text as appended.")
    segment: str | None = Field(default=None, description="The context segment holding it, if any.")
    thought: str | None = None
    calls: list[ToolCall] = Field(default_factory=list)
    final: str | None = None
    verdict: Verdict | None = None
    reason: str | None = None
    attempt: int = Field(default=0, ge=0, description="0 for the first ask, 1.. for re-asks.")
    parse_error: str | None = Field(default=None, description="Why the answer did not parse (re-asked).")
    usage: Usage | None = None
    call: str | None = None
    tool: str | None = None
    is_error: bool = False
    spool: str | None = Field(default=None, description="Spool file holding the untruncated result.")
    outcome: AgentOutcome | None = Field(
        default=None, description="An agent call's result: the outcome of the piece it ran (null: none ran)."
    )
    unchanged_since: str | None = Field(
        default=None, description="The earlier call a repeated call repeats: it was not run again."
    )
    message_id: str | None = Field(default=None, description="Claude Code's message.id (imported turns).")
    request_id: str | None = Field(default=None, description="Claude Code's requestId (imported turns).")


class ContextOp(EventBase):
    """The model used the context tool."""

    type: Literal["context.op"] = "context.op"
    agent: str
    op: Literal["status", "drop", "summarize", "pin", "unpin", "note"]
    ids: list[str] = Field(default_factory=list)
    text: str | None = None
    segment: str | None = Field(default=None, description="The summary or scratchpad segment it wrote.")
    tokens: int | None = None
    refused: str | None = Field(default=None, description="Why the op was refused; nothing changed.")


class Replaced(_Model):
    id: str
    marker: str
    tokens: int | None = Field(default=None, description="Tokens of the marker, when counted.")


class Compaction(EventBase):
    """The runtime replaced segments by markers to make room."""

    type: Literal["compaction"] = "compaction"
    agent: str
    trigger: Literal["auto", "manual", "hard_limit"] = "auto"
    replaced: list[Replaced] = Field(default_factory=list)
    tokens_before: int
    tokens_after: int = Field(description="The client's count of the compacted context.")


PlanGateOutcome = Literal["accepted", "edited", "aborted"]


class Plan(EventBase):
    """An agent wrote its plan (on the screen, the root's first write of a request waits at the gate)."""

    type: Literal["plan"] = "plan"
    agent: str
    text: str = Field(description="The plan as it stands: the user's version when they edited it.")
    gate: PlanGateOutcome | None = Field(
        default=None, description="What the user did at the plan gate; null when the write was not gated."
    )
    proposed: str | None = Field(default=None, description="The agent's own text, when the user edited it.")


class Job(EventBase):
    """A background job changed state."""

    type: Literal["job"] = "job"
    agent: str
    job: str
    command: str
    state: Literal["started", "exited", "killed", "timeout"]
    exit: int | None = None
    call: str | None = None


class Hook(EventBase):
    """A hook handler ran."""

    type: Literal["hook"] = "hook"
    agent: str | None = None
    event: str = Field(description="The hook event name, e.g. PreToolUse.")
    matcher: str | None = None
    command: str | None = None
    outcome: Literal["ok", "blocked", "error", "timeout"]
    decision: str | None = Field(default=None, description="allow, deny, ask, defer or block.")
    reason: str | None = Field(default=None, description="The block's reason, or the error shown.")
    output: str | None = Field(default=None, description="stdout then stderr, cut to a bound.")
    exit: int | None = Field(default=None, description="Exit code; null when it timed out.")
    duration_ms: float | None = None
    call: str | None = Field(default=None, description="The tool call a tool event was about.")
    plugin: str | None = Field(default=None, description="The plugin whose hooks.json has the handler.")
    stop: bool | None = Field(default=None, description="True when it answered continue: false.")


class AgentEnd(EventBase):
    """An agent ended."""

    type: Literal["agent.end"] = "agent.end"
    agent: str
    outcome: AgentOutcome
    reason: str | None = None
    summary: str | None = None
    turns: int = 0
    verdict: Verdict | None = None
    files_touched: list[str] = Field(default_factory=list)
    checks_run: list[str] = Field(default_factory=list)


class DiffStats(_Model):
    added: int = 0
    removed: int = 0
    files: int = 0


class SessionEnd(EventBase):
    """A request ended."""

    type: Literal["session.end"] = "session.end"
    outcome: Literal["done", "failed", "killed", "budget", "cancelled"]
    exit_code: int = 0
    reason: str | None = None
    diff: DiffStats | None = None
    untracked: list[str] = Field(default_factory=list)
    duration_ms: float | None = None


class Foreign(EventBase):
    """An imported line aerix could not understand, kept verbatim (``aerix import claude``)."""

    type: Literal["foreign"] = "foreign"
    source: str = Field(description="File the line came from.")
    line: int
    problem: str
    raw: str


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
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def _v1_to_v2(line: dict[str, Any]) -> dict[str, Any]:
    """Draft v1 wrote ``time`` as Unix seconds and usage as ``prompt``/``completion``."""
    if isinstance(line.get("time"), int | float):
        line["time"] = datetime.fromtimestamp(line["time"], UTC).isoformat()
    usage = line.get("usage")
    if isinstance(usage, dict):
        for old, new in (("prompt", "prompt_tokens"), ("completion", "completion_tokens")):
            if old in usage:
                usage[new] = usage.pop(old)
    line["v"] = 2
    return line


UPCASTERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}
"""``UPCASTERS[n]`` turns a version-n line into a version n+1 line (a dict, changed in place)."""


class UnknownSchemaVersion(ValueError):
    """A line's ``v`` is newer than SCHEMA_VERSION (or not a version at all)."""

    def __init__(self, version: object) -> None:
        super().__init__(f"schema version {version!r}")
        self.version = version


def upcast(line: dict[str, Any]) -> dict[str, Any]:
    """Bring a decoded line to SCHEMA_VERSION (a line without ``v`` is version 1)."""
    version = line.get("v", 1)
    if version == SCHEMA_VERSION:
        return line
    if not isinstance(version, int) or version > SCHEMA_VERSION or version < 1:
        raise UnknownSchemaVersion(version)
    while version < SCHEMA_VERSION:
        line = UPCASTERS[version](line)
        version += 1
    return line


def parse_event(line: dict[str, Any]) -> EventBase:
    """Upcast and validate one decoded line. Raises UnknownSchemaVersion or pydantic's ValidationError."""
    return EVENT_ADAPTER.validate_python(upcast(line))


def event_json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of every event type, keyed by its ``type``."""
    return {name: cls.model_json_schema(mode="serialization") for name, cls in BY_TYPE.items()}


def union_json_schema() -> dict[str, Any]:
    """One schema that validates any line of a session log."""
    schema = EVENT_ADAPTER.json_schema(mode="serialization")
    schema["title"] = f"aerix session event (schema v{SCHEMA_VERSION})"
    return schema


def plain_json(value: Any) -> str:
    """Float-free plain data (dicts with str keys, lists, str, int, bool, None) as compact JSON,
    non-ASCII kept: the text ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``
    writes, from pydantic-core's encoder at about a third of the cost. Floats are the caller's
    to keep out: the two write some differently (``1e-07`` against ``1e-7``). Text pydantic-core
    refuses (a lone surrogate) goes through ``json.dumps``."""
    try:
        return to_json(value).decode()
    except PydanticSerializationError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

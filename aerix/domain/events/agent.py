"""An agent's lifecycle and what it does besides its turns: its spawn and end, its plan, its
background jobs, and the hook handlers run for it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aerix.domain.events.base import AgentKind, AgentOutcome, EventBase, Verdict


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

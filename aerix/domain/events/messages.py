"""An agent's turns and tool results: ``message`` events, the tool calls a turn makes and the
usage the pool reported for it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from aerix.domain.events.base import AgentOutcome, EventBase, StrictModel, Verdict


class Usage(StrictModel):
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


class ToolCall(StrictModel):
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
    denied_rule: str | None = Field(default=None, description="The permission rule that refused the call.")
    denied_from: str | None = Field(default=None, description="Where that rule came from: a file, a flag.")
    message_id: str | None = Field(default=None, description="Claude Code's message.id (imported turns).")
    request_id: str | None = Field(default=None, description="Claude Code's requestId (imported turns).")

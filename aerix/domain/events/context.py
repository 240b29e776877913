"""An agent's context as it changes: segments added or replaced, the context tool's ops, and
compactions (the segments replaced by markers)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aerix.domain.events.base import EventBase, StrictModel
from aerix.domain.segments import SegmentKind, SegmentRole


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


class Replaced(StrictModel):
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

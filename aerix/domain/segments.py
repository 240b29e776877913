"""A context segment: the one value every layer uses for a piece of an agent's context.

The request plans segments, the loop keeps them in step with the pool, the compaction planner
decides over them, and the contexts projection rebuilds them from the log — all as
``ContextSegment``. ``SegmentKind`` is the one vocabulary of what a segment is; its values are
the ``kind`` field of ``segment`` events, so they are part of the session log's contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

ROOT_AGENT: Final = "a1"
"""The root agent's id: every request's first agent; subagents are named under it (``a1.c3``)."""

SegmentRole = Literal["system", "user", "assistant"]


class SegmentKind(StrEnum):
    """What a segment is, which decides what compaction and the context tool may do with it."""

    SYSTEM = "system"
    INSTRUCTIONS = "instructions"
    HOOK = "hook"  # a hook's context, pinned (``# Hook context``)
    PROMPT = "prompt"  # the user's prompt, and the runtime's notes to the model
    TOOL_RESULT = "tool_result"
    ASSISTANT = "assistant"
    BRIEF = "brief"
    SUMMARY = "summary"
    SCRATCHPAD = "scratchpad"
    MARKER = "marker"


def note_segment_id(agent: str, number: int) -> str:
    """The id of the runtime's ``number``-th note to an agent (a re-ask, the note after a
    compaction, a Stop hook's reason): ``a1.n3``. Notes are ``prompt`` segments too."""
    return f"{agent}.n{number}"


def is_note_segment(segment_id: str) -> bool:
    """Whether a segment id is a runtime note's (``note_segment_id``), not the user's prompt."""
    last = segment_id.rsplit(".", 1)[-1]
    return len(last) > 1 and last[0] == "n" and last[1:].isdigit()


#: Kinds ``context drop`` and ``context summarize`` refuse.
PROTECTED_KINDS: Final = frozenset({SegmentKind.SYSTEM, SegmentKind.INSTRUCTIONS, SegmentKind.SCRATCHPAD})

_set_attribute = object.__setattr__


@dataclass(frozen=True)
class ContextSegment:
    """One segment of an agent's context. ``tokens`` is the pool's count (None until counted);
    ``call`` and ``tool`` name the call a tool result answers. Immutable: a change is a new
    value (``dataclasses.replace``)."""

    id: str
    role: SegmentRole
    kind: SegmentKind
    text: str = ""
    pinned: bool = False
    label: str | None = None
    tokens: int | None = None
    call: str | None = None
    tool: str | None = None

    def __init__(
        self,
        id: str,
        role: SegmentRole,
        kind: SegmentKind,
        text: str = "",
        pinned: bool = False,
        label: str | None = None,
        tokens: int | None = None,
        call: str | None = None,
        tool: str | None = None,
    ) -> None:
        # A rebuild makes one of these per segment event: the __init__ dataclass writes for a
        # frozen class sets each field through object.__setattr__, half the cost of folding a
        # segment. One dict does it at once.
        _set_attribute(
            self,
            "__dict__",
            {
                "id": id,
                "role": role,
                "kind": kind,
                "text": text,
                "pinned": pinned,
                "label": label,
                "tokens": tokens,
                "call": call,
                "tool": tool,
            },
        )

    @property
    def counted_tokens(self) -> int:
        return self.tokens or 0

    def wire(self) -> dict[str, Any]:
        """The segment as the pool takes it (the protocol's ``segment`` object)."""
        return {"id": self.id, "role": self.role, "text": self.text, "pinned": self.pinned}

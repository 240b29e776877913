"""The compaction planner: pure decisions over a context's segments (spec, "Context
management"). The loop applies them through the pool and reads the real counts back.

For a member with window W:

- the soft limit is ``soft_ratio × W``, the target ``target_ratio × W``, and a turn asks for
  ``min(max_new_tokens, W / 4)`` tokens;
- before every turn, a context over the soft limit, or whose ``tokens + ask`` would not stay
  under W, is compacted: unpinned tool results oldest first, then unpinned assistant turns, each
  replaced by a marker, until the context is at or under the target. Segments of
  COMPACTION_SKIP_TOKENS or fewer are skipped; system, instructions, hook context, briefs, user
  turns, summaries, the scratchpad and earlier markers are never compacted;
- still no room afterwards is a hard-limit hit: the first cuts the turn's max_new_tokens to the
  room left (when that is at least MIN_CUT_TURN_TOKENS), the second (or a room too small to cut
  to) ends the agent with ``context floor: no room …``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from aerix.domain import bounds
from aerix.domain.segments import ContextSegment, SegmentKind
from aerix.domain.settings import ContextSettings
from aerix.domain.templates import fill

#: Kinds that may be replaced by a marker, in the order they are taken.
COMPACTION_ORDER: tuple[SegmentKind, ...] = (SegmentKind.TOOL_RESULT, SegmentKind.ASSISTANT)


@dataclass(frozen=True)
class ContextBudget:
    """The budget of one context on a member with ``window`` tokens."""

    window: int
    soft_ratio: float
    target_ratio: float
    max_new_tokens: int

    @classmethod
    def from_settings(cls, window: int, settings: ContextSettings) -> ContextBudget:
        return cls(window, settings.soft_ratio, settings.target_ratio, settings.max_new_tokens)

    @property
    def soft_limit(self) -> int:
        return int(self.soft_ratio * self.window)

    @property
    def target(self) -> int:
        return int(self.target_ratio * self.window)

    @property
    def ask(self) -> int:
        """The tokens a turn asks for: min(max_new_tokens, W / 4)."""
        return min(self.max_new_tokens, self.window // bounds.TURN_ASK_WINDOW_DIVISOR)

    def room(self, tokens: int) -> int:
        """The most a generation may ask with ``tokens`` in context and stay under the window."""
        return max(0, self.window - 1 - tokens)

    def result_room(self, tokens: int) -> int:
        """Tokens a tool result may take and still leave a whole turn's ask."""
        return max(0, self.room(tokens) - self.ask)


def needs_compaction(tokens: int, budget: ContextBudget) -> bool:
    """Over the soft limit, or no room for the turn (``tokens + ask`` must stay under W)."""
    return tokens > budget.soft_limit or tokens + budget.ask >= budget.window


#: The markers that replace a compacted tool result and a compacted turn.
TOOL_RESULT_MARKER = "[compacted tool result of call {call} ({tool}, {tokens} tokens)]"
TURN_MARKER = "[compacted assistant turn {segment} ({tokens} tokens)]"


def marker_text(segment: ContextSegment) -> str:
    """The text that replaces a compacted segment."""
    tokens = segment.counted_tokens
    if segment.kind == SegmentKind.TOOL_RESULT:
        values = {"call": segment.call or segment.id, "tool": segment.tool or "tool", "tokens": tokens}
        return fill(TOOL_RESULT_MARKER, values)
    return fill(TURN_MARKER, {"segment": segment.id, "tokens": tokens})


def estimated_tokens(text: str) -> int:
    """A client-side guess (BYTES_PER_TOKEN) used only to plan and to show ``≈`` figures; the
    pool's count replaces it as soon as the edit is applied."""
    return math.ceil(len(text.encode("utf-8")) / bounds.BYTES_PER_TOKEN)


def may_compact(segment: ContextSegment) -> bool:
    return (
        segment.kind in COMPACTION_ORDER
        and not segment.pinned
        and segment.counted_tokens > bounds.COMPACTION_SKIP_TOKENS
    )


@dataclass(frozen=True)
class Replacement:
    segment_id: str
    marker: str
    tokens_before: int
    tokens_after: int  # estimated


@dataclass(frozen=True)
class CompactionPlan:
    """Which segments to replace, and the context's size before and (estimated) after."""

    replacements: tuple[Replacement, ...]
    tokens_before: int
    tokens_after: int
    reaches_target: bool


def plan_compaction(segments: Sequence[ContextSegment], budget: ContextBudget) -> CompactionPlan:
    """Replace unpinned tool results oldest first, then unpinned assistant turns, until the
    context is at or under the target (or nothing is left to take)."""
    before = sum(segment.counted_tokens for segment in segments)
    total = before
    chosen: list[Replacement] = []
    for kind in COMPACTION_ORDER:
        for segment in segments:
            if total <= budget.target:
                break
            if segment.kind != kind or not may_compact(segment):
                continue
            marker = marker_text(segment)
            after = estimated_tokens(marker)
            if after >= segment.counted_tokens:
                continue
            chosen.append(Replacement(segment.id, marker, segment.counted_tokens, after))
            total -= segment.counted_tokens - after
    return CompactionPlan(tuple(chosen), before, total, total <= budget.target)


@dataclass(frozen=True)
class RoomCheck:
    """What the next turn may do after compaction.

    ``ok``: ask the full ``max_new_tokens``. ``cut``: a hard-limit hit, ask only the room left.
    ``floor``: the agent is killed with ``reason``.
    """

    outcome: Literal["ok", "cut", "floor"]
    max_new_tokens: int
    hard_limit_hits: int
    reason: str | None = None


def check_room(tokens: int, budget: ContextBudget, hard_limit_hits: int) -> RoomCheck:
    """Decide the next turn's ask from the context's (pool-counted) size after compacting.

    ``hard_limit_hits`` is the agent's count so far; the returned check carries the new count.
    """
    room = budget.room(tokens)
    if room >= budget.ask:
        return RoomCheck("ok", budget.ask, hard_limit_hits)
    hits = hard_limit_hits + 1
    if hits < bounds.HARD_LIMIT_HITS and room >= bounds.MIN_CUT_TURN_TOKENS:
        return RoomCheck("cut", room, hits)
    reason = (
        f"context floor: no room for a turn after compacting ({tokens} of {budget.window} tokens in use, "
        f"{room} left; hard-limit hit {hits})"
    )
    return RoomCheck("floor", 0, hits, reason)


def retry_ask(asked: int) -> int:
    """The ``max_new_tokens`` of a re-ask after a turn that was cut or stopped at ``asked``:
    less (1 / CUT_RETRY_DIVISOR of it), but never under MIN_CUT_TURN_TOKENS."""
    return max(bounds.MIN_CUT_TURN_TOKENS, asked // bounds.CUT_RETRY_DIVISOR)

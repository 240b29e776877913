"""An agent's context as the loop sees it: the pool's segments with what the loop knows of each
(kind, label, pinned, the call a result answers), kept in step with the pool's counts.

Every change goes through the pool's ``context.edit`` and takes the counts from its reply: the
token figures here are always the pool's own. Segments the loop adds are recorded as
``segment`` events with their counts (``add``); removals and replacements are recorded by the
caller as the event that explains them (``compaction``, ``context.op``), which is how the
context projection rebuilds the same context from the log.

Compaction (spec, "Context management") is planned by :mod:`aerix.domain.compaction` and applied
here: markers replace segments in place, a ``compaction`` event lists them, and a note tells the
model what happened (``compacted.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Literal

from aerix.app.hooks.fire import Hooks
from aerix.app.ports.pool import ContextCounts, PoolPort
from aerix.app.ports.project import PromptSource
from aerix.app.ports.sessions import EventRecorder
from aerix.domain import events as ev
from aerix.domain.compaction import ContextBudget, needs_compaction, plan_compaction
from aerix.domain.segments import ROOT_AGENT, ContextSegment, SegmentKind, note_segment_id

#: The label of the runtime's notes to the model (re-asks, dropped calls, compaction).
NOTE_LABEL = "note"

_NUMBERED_ID = re.compile(r"\.([a-z])(\d+)(?:\.|$)")


def record_segment(events: EventRecorder, agent_id: str, segment: ContextSegment) -> None:
    """The ``segment`` event of one segment of ``agent_id``'s context, with its pool count: the
    one place that writes it (the request's opening segments, the loop's own, tests)."""
    events.record(
        ev.Segment,
        agent=agent_id,
        id=segment.id,
        role=segment.role,
        kind=segment.kind,
        label=segment.label,
        text=segment.text,
        pinned=segment.pinned,
        tokens=segment.tokens,
        call=segment.call,
        tool=segment.tool,
    )


def record_segments(
    events: EventRecorder, segments: Sequence[ContextSegment], counts: ContextCounts, agent: str = ROOT_AGENT
) -> None:
    """One ``segment`` event per segment of ``agent``'s context, with the pool's token count."""
    for segment in segments:
        record_segment(events, agent, replace(segment, tokens=counts.tokens_of(segment.id)))


def hook_context_segment(segment_id: str, context: str) -> ContextSegment:
    """A hook's context (SessionStart's for the root, SubagentStart's for a subagent), pinned."""
    text = f"# Hook context\n{context}"
    return ContextSegment(segment_id, "user", SegmentKind.HOOK, text, True, "hook")


class LiveContext:
    """The agent's context in the pool, and the loop's knowledge of its segments."""

    def __init__(
        self, pool: PoolPort, events: EventRecorder, agent_id: str, context_id: str, budget: ContextBudget
    ) -> None:
        self.pool = pool
        self.events = events
        self.agent_id = agent_id
        self.context_id = context_id
        self.budget = budget
        self.segments: list[ContextSegment] = []
        self.tokens = 0
        self._next: dict[str, int] = {}
        #: The request's hooks (PreCompact/ContextCompact fire around each compaction pass) and
        #: the agent type they are told; set by the agent's run.
        self.hooks: Hooks | None = None
        self.agent_type: str | None = None

    async def open(self, known: Sequence[ContextSegment]) -> None:
        """Read the pool's segments; what the loop knows of each comes from ``known`` (a segment
        the pool holds that is not listed counts as a user turn)."""
        by_id = {segment.id: segment for segment in known}
        counts = await self.pool.contexts.get(self.context_id)
        for count in counts.segments:
            given = by_id.get(count.id)
            if given is None:
                given = ContextSegment(count.id, "user", SegmentKind.PROMPT, label=count.id)
            self.segments.append(given)
        self._apply(counts)
        self._continue_numbering(segment.id for segment in self.segments)

    # -- ids -------------------------------------------------------------------------------

    def next_number(self, letter: str) -> int:
        """Take the next free number for ids like ``a1.m4`` (``m``), ``a1.c7`` (``c``),
        ``a1.n2`` (``n``): a resumed context continues where its log stopped, so ids never
        repeat."""
        return self.reserve(letter, 1)

    def peek(self, letter: str) -> int:
        """The number ``next_number`` would give, without taking it."""
        return self._next.get(letter, 1)

    def reserve(self, letter: str, count: int) -> int:
        """Take ``count`` numbers in a row; returns the first."""
        first = self.peek(letter)
        self._next[letter] = first + count
        return first

    def _continue_numbering(self, ids: Iterable[str]) -> None:
        highest: dict[str, int] = {}
        for segment_id in ids:
            if not segment_id.startswith(self.agent_id + "."):
                continue
            match = _NUMBERED_ID.match(segment_id, len(self.agent_id))
            if match:
                letter, number = match.group(1), int(match.group(2))
                highest[letter] = max(highest.get(letter, 0), number)
        for letter, number in highest.items():
            self._next[letter] = max(self.peek(letter), number + 1)

    # -- lookups ---------------------------------------------------------------------------

    def get(self, segment_id: str) -> ContextSegment | None:
        return next((segment for segment in self.segments if segment.id == segment_id), None)

    @property
    def room(self) -> int:
        """Tokens a generation could ask for now and stay inside the window."""
        return self.budget.room(self.tokens)

    def has_turn_room(self) -> bool:
        """Whether a whole turn's ask still fits after what the context holds."""
        return self.tokens + self.budget.ask < self.budget.window

    # -- changes ---------------------------------------------------------------------------

    async def edit(self, edits: Sequence[dict[str, Any]]) -> ContextCounts:
        counts = await self.pool.contexts.edit(self.context_id, edits)
        self._apply(counts)
        return counts

    async def refresh(self) -> None:
        """Take the pool's counts again (after a generation appended a segment)."""
        self._apply(await self.pool.contexts.get(self.context_id))

    async def append(self, segment: ContextSegment, *, record: bool = True) -> ContextSegment:
        """Append a segment; with ``record``, a ``segment`` event with the pool's count."""
        self.segments.append(segment)
        try:
            await self.edit([{"op": "append", "segment": segment.wire()}])
        except BaseException:
            self.segments.remove(segment)
            raise
        added = self.get(segment.id) or segment
        if record:
            self.record_segment(added)
        return added

    def adopt(self, segment: ContextSegment) -> None:
        """A segment the pool appended itself (a generation's output): known from now on."""
        if self.get(segment.id) is None:
            self.segments.append(segment)

    def record_segment(self, segment: ContextSegment) -> None:
        record_segment(self.events, self.agent_id, segment)

    async def remove(self, segment_ids: Sequence[str]) -> None:
        await self.edit([{"op": "remove", "id": segment_id} for segment_id in segment_ids])

    async def add_note(self, text: str, *, label: str = NOTE_LABEL) -> ContextSegment:
        """A note from the runtime to the model, as a user segment."""
        note_id = note_segment_id(self.agent_id, self.next_number("n"))
        return await self.append(ContextSegment(note_id, "user", SegmentKind.PROMPT, text, label=label))

    def _apply(self, counts: ContextCounts) -> None:
        tokens = {count.id: count.tokens for count in counts.segments}
        self.segments = [
            replace(segment, tokens=tokens[segment.id]) for segment in self.segments if segment.id in tokens
        ]
        self.tokens = counts.tokens

    def changed(self, segment_id: str, **fields: Any) -> None:
        """Update what the loop knows of a segment after an edit the pool applied."""
        self.segments = [replace(s, **fields) if s.id == segment_id else s for s in self.segments]


Trigger = Literal["auto", "manual", "hard_limit"]


async def compact(live: LiveContext, prompts: PromptSource, trigger: Trigger = "auto") -> bool:
    """One compaction pass: markers replace unpinned tool results oldest first, then unpinned
    assistant turns, until the target; a ``compaction`` event and a note. False when there was
    nothing to take, or a PreCompact hook blocked the pass. ContextCompact fires after it."""
    plan = plan_compaction(live.segments, live.budget)
    if not plan.replacements:
        return False
    hook_trigger = "manual" if trigger == "manual" else "auto"
    if live.hooks is not None:
        fields = {"trigger": hook_trigger, "custom_instructions": ""}
        pre = await live.hooks.fire("PreCompact", fields, match=(hook_trigger,), **_hook_agent(live))
        if pre.blocked:
            return False
    before = live.tokens
    await live.edit([{"op": "replace", "id": r.segment_id, "text": r.marker} for r in plan.replacements])
    replaced = []
    for replacement in plan.replacements:
        live.changed(replacement.segment_id, kind=SegmentKind.MARKER, text=replacement.marker, pinned=False)
        segment = live.get(replacement.segment_id)
        tokens = segment.tokens if segment else None
        replaced.append(ev.Replaced(id=replacement.segment_id, marker=replacement.marker, tokens=tokens))
    live.events.record(
        ev.Compaction,
        agent=live.agent_id,
        trigger=trigger,
        replaced=replaced,
        tokens_before=before,
        tokens_after=live.tokens,
    )
    await live.add_note(prompts.get("compacted").strip())
    if live.hooks is not None:
        summary = "\n".join(item.marker for item in replaced)
        after: dict[str, Any] = {
            "trigger": hook_trigger,
            "compact_summary": summary,
            "tokens_before": before,
            "tokens_after": live.tokens,
        }
        await live.hooks.fire("ContextCompact", after, match=(hook_trigger,), **_hook_agent(live))
    return True


def _hook_agent(live: LiveContext) -> dict[str, Any]:
    return {"agent": live.agent_id, "agent_type": live.agent_type}


async def compact_if_needed(live: LiveContext, prompts: PromptSource) -> None:
    """Before a turn: over the soft limit, or no room for the turn, means compacting."""
    if needs_compaction(live.tokens, live.budget):
        await compact(live, prompts)

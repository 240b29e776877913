"""An agent's context as the loop sees it: the fold of the agent's events, kept beside the pool.

The context an agent works on is its entry in the session's ``contexts`` view
(:class:`aerix.projections.contexts.Contexts`, which the session's writer feeds every event it
records): the fold of the agent's events — the ``segment`` events its caller recorded as it
opened the context (after a resumed root's earlier ones, in the log already), then every event
that changes it, recorded here: ``segment`` for a segment added or counted again,
``compaction`` for markers, ``context.op`` for the context tool's drop, summarize, pin, unpin
and note. ``--resume`` folds the log with that same class (``ResumePoint``), so the live
context is the context rebuilt from the log by construction.

Every change goes to the pool first, through its ``context.edit``, and the event that records it
carries the pool's counts from the reply: the token figures are always the pool's own. Until its
event is recorded, a segment the pool holds is only *held* here (a generation's answer before it
parses, a tool result while it is fitted to the room): it counts in ``segments`` and ``tokens``,
and is either recorded or removed before anything else changes the context.

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
from aerix.app.ports.sessions import E, EventRecorder
from aerix.domain import events as ev
from aerix.domain.compaction import ContextBudget, needs_compaction, plan_compaction
from aerix.domain.segments import ROOT_AGENT, ContextSegment, SegmentKind, note_segment_id
from aerix.projections.contexts import AgentContext, Contexts

#: The label of the runtime's notes to the model (re-asks, dropped calls, compaction).
NOTE_LABEL = "note"

_NUMBERED_ID = re.compile(r"\.([a-z])(\d+)(?:\.|$)")


def segment_fields(segment: ContextSegment) -> dict[str, Any]:
    """A segment as the fields of its ``segment`` event (the agent's id aside)."""
    return {
        "id": segment.id,
        "role": segment.role,
        "kind": segment.kind,
        "label": segment.label,
        "text": segment.text,
        "pinned": segment.pinned,
        "tokens": segment.tokens,
        "call": segment.call,
        "tool": segment.tool,
    }


def record_segment(events: EventRecorder, agent_id: str, segment: ContextSegment) -> ev.Segment:
    """The ``segment`` event of one segment of ``agent_id``'s context, with its pool count (the
    opening segments, by ``record_segments``)."""
    return events.record(ev.Segment, agent=agent_id, **segment_fields(segment))


def record_segments(
    events: EventRecorder, segments: Sequence[ContextSegment], counts: ContextCounts, agent: str = ROOT_AGENT
) -> None:
    """One ``segment`` event per segment of ``agent``'s context, with the pool's token count:
    the contexts view folds them as the agent's opening, before its live context is made."""
    for segment in segments:
        record_segment(events, agent, replace(segment, tokens=counts.tokens_of(segment.id)))


def hook_context_segment(segment_id: str, context: str) -> ContextSegment:
    """A hook's context (SessionStart's for the root, SubagentStart's for a subagent), pinned."""
    text = f"# Hook context\n{context}"
    return ContextSegment(segment_id, "user", SegmentKind.HOOK, text, True, "hook")


class LiveContext:
    """The agent's context: the fold of its events, and the pool context it is sent as."""

    def __init__(
        self,
        pool: PoolPort,
        events: EventRecorder,
        contexts: Contexts,
        agent_id: str,
        context_id: str,
        budget: ContextBudget,
    ) -> None:
        """``contexts``: the session's ``contexts`` view, fed by the writer behind ``events``;
        it has folded the opening the caller recorded as it made the pool context."""
        self.pool = pool
        self.events = events
        self.agent_id = agent_id
        self.context_id = context_id
        self.budget = budget
        folded = contexts.agents.get(agent_id)
        if folded is None:  # the view is not the one the writer behind ``events`` feeds
            raise RuntimeError(f"the contexts view has no event of {agent_id}, not even its opening")
        #: This agent's entry in the view: the view folds each event as the writer records it.
        self.folded: AgentContext = folded
        #: Segments the pool holds that no event records yet (at most one, and only for a moment).
        self._held: list[ContextSegment] = []
        #: The pool's count of the whole context (the generation prompt included).
        self.tokens = 0
        self._next: dict[str, int] = {}
        #: The request's hooks (PreCompact/ContextCompact fire around each compaction pass) and
        #: the agent type they are told; set by the agent's run.
        self.hooks: Hooks | None = None
        self.agent_type: str | None = None

    async def open(self) -> None:
        """Take the pool's counts of the context the caller made. It holds the segments the
        events say, in their order; a segment the pool counts otherwise than its event did (a
        resumed root on another model's template) is recorded again with the pool's count."""
        counts = await self.pool.contexts.get(self.context_id)
        folded = self.folded.segments
        held = [count.id for count in counts.segments]
        if held != list(folded):
            raise RuntimeError(
                f"pool context {self.context_id} holds {held}, not the segments {self.agent_id}'s events "
                f"say ({list(folded)})"
            )
        for count in counts.segments:
            if folded[count.id].tokens != count.tokens:
                self.record_segment(replace(folded[count.id], tokens=count.tokens))
        self.tokens = counts.tokens
        self._continue_numbering(held)

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

    @property
    def segments(self) -> list[ContextSegment]:
        """The context in the pool's order: the fold's segments, then any held one."""
        return [*self.folded.segments.values(), *self._held]

    def get(self, segment_id: str) -> ContextSegment | None:
        segment = self.folded.segments.get(segment_id)
        if segment is None:
            segment = next((held for held in self._held if held.id == segment_id), None)
        return segment

    @property
    def room(self) -> int:
        """Tokens a generation could ask for now and stay inside the window."""
        return self.budget.room(self.tokens)

    def has_turn_room(self) -> bool:
        """Whether a whole turn's ask still fits after what the context holds."""
        return self.tokens + self.budget.ask < self.budget.window

    # -- events ----------------------------------------------------------------------------

    def record(self, event_cls: type[E], **fields: Any) -> E:
        """Record an event of this agent, which the writer folds into the contexts view before
        it returns: the one way the context changes."""
        event = self.events.record(event_cls, agent=self.agent_id, **fields)
        if self._held:
            folded = self.folded.segments
            self._held = [segment for segment in self._held if segment.id not in folded]
        return event

    def record_segment(self, segment: ContextSegment) -> ev.Segment:
        """The ``segment`` event of a segment the pool holds (held until now, or counted anew)."""
        return self.record(ev.Segment, **segment_fields(segment))

    # -- changes in the pool ---------------------------------------------------------------

    async def edit(self, edits: Sequence[dict[str, Any]]) -> ContextCounts:
        """Apply ``edits`` in the pool; the caller records the event that explains them, with the
        counts of the reply."""
        counts = await self.pool.contexts.edit(self.context_id, edits)
        self._counted(counts)
        return counts

    async def refresh(self) -> None:
        """Take the pool's counts again (after a generation appended a segment)."""
        self._counted(await self.pool.contexts.get(self.context_id))

    async def append(self, segment: ContextSegment) -> ContextSegment:
        """Append a segment in the pool, held until its event is recorded (or it is removed);
        returns it with the pool's count."""
        counts = await self.pool.contexts.edit(self.context_id, [{"op": "append", "segment": segment.wire()}])
        held = replace(segment, tokens=counts.tokens_of(segment.id))
        self._held.append(held)
        self._counted(counts)
        return held

    async def add(self, segment: ContextSegment) -> ContextSegment:
        """Append a segment and record its ``segment`` event with the pool's count."""
        held = await self.append(segment)
        self.record_segment(held)
        return held

    def hold(self, segment: ContextSegment) -> None:
        """A segment the pool appended itself (a generation's output), held until recorded or
        removed; ``refresh`` takes its count."""
        if self.get(segment.id) is None:
            self._held.append(segment)

    async def remove(self, segment_ids: Sequence[str]) -> None:
        """Remove segments in the pool: held ones, or ones whose removal the caller records."""
        await self.edit([{"op": "remove", "id": segment_id} for segment_id in segment_ids])
        self._held = [segment for segment in self._held if segment.id not in segment_ids]

    async def add_note(self, text: str, *, label: str = NOTE_LABEL) -> ContextSegment:
        """A note from the runtime to the model, as a user segment."""
        note_id = note_segment_id(self.agent_id, self.next_number("n"))
        return await self.add(ContextSegment(note_id, "user", SegmentKind.PROMPT, text, label=label))

    def _counted(self, counts: ContextCounts) -> None:
        self.tokens = counts.tokens
        if self._held:
            self._held = [replace(segment, tokens=counts.tokens_of(segment.id)) for segment in self._held]


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
    counts = await live.edit(
        [{"op": "replace", "id": r.segment_id, "text": r.marker} for r in plan.replacements]
    )
    replaced = [
        ev.Replaced(id=r.segment_id, marker=r.marker, tokens=counts.tokens_of(r.segment_id))
        for r in plan.replacements
    ]
    live.record(
        ev.Compaction, trigger=trigger, replaced=replaced, tokens_before=before, tokens_after=live.tokens
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

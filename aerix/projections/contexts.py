"""Every agent's context, segment by segment, and its plan, at any point of the log.

This is what ``--resume`` rebuilds the root from, what ``context status`` lists, and what
``aerix sessions show`` replays. Segments keep their order; a ``segment`` event whose id exists
replaces that segment in place (a new text or a token count read back from the pool).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from aerix.domain import events as ev
from aerix.domain.segments import ContextSegment, SegmentKind
from aerix.projections.base import Handlers, Projection

SCRATCHPAD_ID = "scratchpad"
"""Segment id of an agent's scratchpad when the ``note`` op names none."""


@dataclass
class AgentContext:
    """One agent's context as the runtime holds it."""

    agent: str
    kind: ev.AgentKind | None = None
    parent: str | None = None
    segments: dict[str, ContextSegment] = field(default_factory=dict)
    plan: str | None = None
    turns: int = 0
    outcome: ev.AgentOutcome | None = None
    compactions: int = 0

    @property
    def tokens(self) -> int:
        """The pool's count of the whole context (segments not yet counted add nothing)."""
        return sum(segment.tokens or 0 for segment in self.segments.values())

    @property
    def uncounted(self) -> int:
        return sum(1 for segment in self.segments.values() if segment.tokens is None)

    def ordered(self) -> list[ContextSegment]:
        return list(self.segments.values())


class Contexts(Projection):
    """All agents' contexts. ``agents`` keeps spawn order."""

    def __init__(self) -> None:
        super().__init__()
        self.agents: dict[str, AgentContext] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Contexts) and (self.position, self.agents) == (other.position, other.agents)

    __hash__ = None  # type: ignore[assignment]

    def agent(self, agent_id: str) -> AgentContext:
        context = self.agents.get(agent_id)
        if context is None:
            context = self.agents[agent_id] = AgentContext(agent_id)
        return context

    def _segment(self, event: ev.Segment) -> None:
        context = self.agents.get(event.agent) or self.agent(event.agent)  # the hot path: no call
        context.segments[event.id] = ContextSegment(
            event.id,
            event.role,
            event.kind,
            event.text,
            event.pinned,
            event.label,
            event.tokens,
            event.call,
            event.tool,
        )

    def _message(self, event: ev.Message) -> None:
        if event.role == "assistant" and event.parse_error is None:
            context = self.agent(event.agent)
            if event.turn > context.turns:
                context.turns = event.turn

    def _plan(self, event: ev.Plan) -> None:
        self.agent(event.agent).plan = event.text

    def _spawn(self, event: ev.AgentSpawn) -> None:
        context = self.agent(event.agent)
        context.kind, context.parent = event.kind, event.parent

    def _agent_end(self, event: ev.AgentEnd) -> None:
        context = self.agent(event.agent)
        context.outcome = event.outcome
        context.turns = max(context.turns, event.turns)

    def _compaction(self, event: ev.Compaction) -> None:
        context = self.agent(event.agent)
        context.compactions += 1
        for replaced in event.replaced:
            old = context.segments.get(replaced.id)
            if old is not None:
                context.segments[replaced.id] = replace(
                    old, kind=SegmentKind.MARKER, text=replaced.marker, tokens=replaced.tokens, pinned=False
                )

    def _context_op(self, event: ev.ContextOp) -> None:
        if event.refused is not None:
            return
        context = self.agent(event.agent)
        segments = context.segments
        if event.op == "drop":
            for segment_id in event.ids:
                segments.pop(segment_id, None)
        elif event.op in ("pin", "unpin"):
            for segment_id in event.ids:
                if segment_id in segments:
                    segments[segment_id] = replace(segments[segment_id], pinned=event.op == "pin")
        elif event.op == "summarize":
            summary = ContextSegment(
                event.segment or f"summary-{event.seq}",
                "user",
                SegmentKind.SUMMARY,
                event.text or "",
                pinned=True,
                tokens=event.tokens,
                label="summary",
            )
            context.segments = _replace_with(segments, set(event.ids), summary)
        elif event.op == "note":
            note_id = event.segment or SCRATCHPAD_ID
            old = segments.get(note_id)
            text = event.text or ""
            segments[note_id] = ContextSegment(
                note_id,
                "user",
                SegmentKind.SCRATCHPAD,
                f"{old.text}\n{text}" if old else text,
                pinned=True,
                tokens=event.tokens,
                label="scratchpad",
            )

    HANDLERS: ClassVar[Handlers] = {
        ev.Segment: _segment,
        ev.Message: _message,
        ev.Compaction: _compaction,
        ev.ContextOp: _context_op,
        ev.Plan: _plan,
        ev.AgentSpawn: _spawn,
        ev.AgentEnd: _agent_end,
    }


def _replace_with(
    segments: dict[str, ContextSegment], ids: set[str], summary: ContextSegment
) -> dict[str, ContextSegment]:
    """The segments with ``ids`` removed and ``summary`` where the first of them was."""
    result: dict[str, ContextSegment] = {}
    placed = False
    for segment_id, segment in segments.items():
        if segment_id in ids:
            if not placed:
                result[summary.id] = summary
                placed = True
            continue
        result[segment_id] = segment
    if not placed:
        result[summary.id] = summary
    return result


def contexts_at(events: list[ev.EventBase], upto: int | None = None) -> Contexts:
    """Every agent's context after the event with ``seq == upto`` (the whole log when None)."""
    contexts = Contexts()
    contexts.feed(events if upto is None else (event for event in events if event.seq <= upto))
    return contexts

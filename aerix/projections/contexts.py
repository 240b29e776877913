"""Every agent's context, segment by segment, and its plan, at any point of the log.

This is what ``--resume`` rebuilds the root from and, as the session's ``contexts`` view
(``aerix.app.sessions.writer.VIEWS``), what each agent's live context reads while the session
runs: one fold, fed live by the writer or from the log. Segments keep their order; a
``segment`` event whose id exists replaces that segment in place (a new text or a token count
read back from the pool).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final

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
    """All agents' contexts. An agent's entry is made by its first event (the root's opening
    ``segment``, a subagent's ``agent.spawn``) and never replaced, so a reader may hold it (an
    agent's live context does); ``agents`` keeps that order."""

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
        _take_segment(self.agents.get(event.agent) or self.agent(event.agent), event)  # the hot path

    def _message(self, event: ev.Message) -> None:
        if event.role == "assistant" and event.parse_error is None:
            _take_message(self.agent(event.agent), event)

    def _context_op(self, event: ev.ContextOp) -> None:
        if event.refused is None:
            _take_context_op(self.agent(event.agent), event)

    def _other(self, event: AgentEvent) -> None:
        AGENT_STEPS[event.__class__](self.agent(event.agent), event)

    HANDLERS: ClassVar[Handlers] = {
        ev.Segment: _segment,
        ev.Message: _message,
        ev.Compaction: _other,
        ev.ContextOp: _context_op,
        ev.Plan: _other,
        ev.AgentSpawn: _other,
        ev.AgentEnd: _other,
    }


# -- the steps: one event of an agent, on that agent's context --------------------------------

AgentEvent = ev.Segment | ev.Message | ev.Compaction | ev.ContextOp | ev.Plan | ev.AgentSpawn | ev.AgentEnd


def _take_segment(context: AgentContext, event: ev.Segment) -> None:
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


def _take_message(context: AgentContext, event: ev.Message) -> None:
    if event.role == "assistant" and event.parse_error is None and event.turn > context.turns:
        context.turns = event.turn


def _take_plan(context: AgentContext, event: ev.Plan) -> None:
    context.plan = event.text


def _take_spawn(context: AgentContext, event: ev.AgentSpawn) -> None:
    context.kind, context.parent = event.kind, event.parent


def _take_end(context: AgentContext, event: ev.AgentEnd) -> None:
    context.outcome = event.outcome
    context.turns = max(context.turns, event.turns)


def _take_compaction(context: AgentContext, event: ev.Compaction) -> None:
    context.compactions += 1
    for replaced in event.replaced:
        old = context.segments.get(replaced.id)
        if old is not None:
            context.segments[replaced.id] = replace(
                old, kind=SegmentKind.MARKER, text=replaced.marker, tokens=replaced.tokens, pinned=False
            )


def _take_context_op(context: AgentContext, event: ev.ContextOp) -> None:
    if event.refused is not None:
        return
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
        if old is not None:  # the line appended to the scratchpad as it stands (pinned or not)
            segments[note_id] = replace(
                old, text=f"{old.text}\n{text}" if old.text else text, tokens=event.tokens
            )
        else:
            segments[note_id] = ContextSegment(
                note_id,
                "user",
                SegmentKind.SCRATCHPAD,
                text,
                pinned=True,
                tokens=event.tokens,
                label="scratchpad",
            )


AGENT_STEPS: Final[Mapping[type[ev.EventBase], Callable[[AgentContext, Any], None]]] = {
    ev.Segment: _take_segment,
    ev.Message: _take_message,
    ev.Compaction: _take_compaction,
    ev.ContextOp: _take_context_op,
    ev.Plan: _take_plan,
    ev.AgentSpawn: _take_spawn,
    ev.AgentEnd: _take_end,
}
"""How one event of an agent changes that agent's context (``Contexts``' handlers, by event class)."""


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

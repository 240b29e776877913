"""The tuning corpus: what ``aerix tune`` reflects on.

For a profile and a model, the newest N sessions whose first ``session.start`` names both,
each with the evidence the prompt artifacts need:

- routes: each routing decision, its scores, and how the request it routed ended
  (``routing.md``);
- parse retries: every turn that did not parse, or was cut by the token limit, and was asked
  again (``system.md``);
- pieces: each delegated piece — its brief and check, how many implementer attempts it took,
  the verdicts and how it ended (``planner.md``, ``brief.md``);
- verdicts: each verifier's verdict and reason with the brief it judged, and what came after:
  how the piece and the request ended (``verifier.md``, ``brief.md``);
- compactions: when and how much the runtime compacted, and what followed: re-asked turns of
  that agent after it and how the agent ended (``compacted.md``);
- failures: agents and requests that ended other than ``done``, with their reasons
  (``system.md``).

Pieces are told apart by the agent ids of the spec: an implementer ``a1.c3``, its retries
``a1.c3.r1``…, its verifiers ``a1.c3.v1``… all belong to the piece ``a1.c3``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import ClassVar

from aerix.domain import events as ev
from aerix.projections.base import Handlers, Projection

ARTIFACT_EVIDENCE: dict[str, tuple[str, ...]] = {
    "routing.md": ("routes",),
    "system.md": ("parse_retries", "failures"),
    "planner.md": ("pieces",),
    "brief.md": ("pieces",),
    "verifier.md": ("verdicts",),
    "compacted.md": ("compactions",),
}
"""Which evidence each embedded prompt's tuning reads."""


def piece_of(agent: str) -> str:
    """The piece an implementer, retry or verifier id belongs to: ``a1.c3.r1`` → ``a1.c3``."""
    head, dot, last = agent.rpartition(".")
    if dot and len(last) > 1 and last[0] in "rv" and last[1:].isdigit():
        return head
    return agent


@dataclass(frozen=True)
class RouteEvidence:
    request: int
    prompt: str
    choice: str
    scores: dict[str, float]
    outcome: str | None


@dataclass(frozen=True)
class ParseRetry:
    agent: str
    turn: int
    attempt: int
    error: str


@dataclass(frozen=True)
class VerdictEvidence:
    agent: str
    verdict: str | None
    reason: str | None
    brief: str | None
    #: What came after, once the request ended: "piece passed; request done".
    later: str | None = None


@dataclass(frozen=True)
class PieceEvidence:
    """One delegated piece: its implementer attempts and verdicts, in order."""

    agent: str
    brief: str | None
    check: str | None
    definition: str | None
    attempts: int = 1
    outcome: str | None = None  # the last implementer's
    reason: str | None = None
    verdicts: tuple[str, ...] = ()  # "pass", "fail" or "none" for a verifier without one

    @property
    def result(self) -> str:
        if self.outcome is not None and self.outcome != "done":
            return self.outcome
        if self.verdicts:
            return "passed" if self.verdicts[-1] == "pass" else "failed verification"
        return "done, not verified" if self.outcome == "done" else "unfinished"


@dataclass(frozen=True)
class CompactionEvidence:
    agent: str
    trigger: str
    segments: int
    tokens_before: int
    tokens_after: int
    #: Turns of that agent re-asked after the compaction, and how the agent ended.
    retries_after: int = 0
    agent_outcome: str | None = None


@dataclass(frozen=True)
class Failure:
    agent: str | None
    outcome: str
    reason: str | None


@dataclass
class SessionEvidence(Projection):
    """One session's evidence, folded from its log."""

    session: str = ""
    started: datetime | None = None
    profile: str | None = None
    model: str = ""
    prompts: list[str] = field(default_factory=list)
    routes: list[RouteEvidence] = field(default_factory=list)
    parse_retries: list[ParseRetry] = field(default_factory=list)
    pieces: list[PieceEvidence] = field(default_factory=list)
    verdicts: list[VerdictEvidence] = field(default_factory=list)
    compactions: list[CompactionEvidence] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    _briefs: dict[str, str | None] = field(default_factory=dict)
    _parents: dict[str, str | None] = field(default_factory=dict)
    _verifiers: set[str] = field(default_factory=set)
    _implementers: set[str] = field(default_factory=set)
    _piece_index: dict[str, int] = field(default_factory=dict)
    _pending_routes: list[int] = field(default_factory=list)
    _pending_verdicts: list[int] = field(default_factory=list)
    _open_compactions: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__()

    def _start(self, event: ev.SessionStart) -> None:
        if self.started is None:
            self.session, self.started = event.session, event.time
            self.profile, self.model = event.profile, event.model
        self.prompts.append(event.prompt)

    def _route(self, event: ev.RouteDecision) -> None:
        prompt = self.prompts[-1] if self.prompts else ""
        route = RouteEvidence(len(self.prompts), prompt, event.choice, dict(event.scores), None)
        self.routes.append(route)
        self._pending_routes.append(len(self.routes) - 1)

    def _message(self, event: ev.Message) -> None:
        if event.parse_error is not None:
            self.parse_retries.append(ParseRetry(event.agent, event.turn, event.attempt, event.parse_error))
            for index in self._open_compactions.get(event.agent, ()):
                compaction = self.compactions[index]
                self.compactions[index] = replace(compaction, retries_after=compaction.retries_after + 1)

    def _spawn(self, event: ev.AgentSpawn) -> None:
        self._briefs[event.agent] = event.brief
        self._parents[event.agent] = event.parent
        if event.kind == "verifier":
            self._verifiers.add(event.agent)
        elif event.kind == "implementer":
            self._implementers.add(event.agent)
            key = piece_of(event.agent)
            index = self._piece_index.get(key)
            if index is None:
                self._piece_index[key] = len(self.pieces)
                self.pieces.append(PieceEvidence(key, event.brief, event.check, event.definition))
            else:
                self.pieces[index] = replace(self.pieces[index], attempts=self.pieces[index].attempts + 1)

    def _compaction(self, event: ev.Compaction) -> None:
        self._open_compactions.setdefault(event.agent, []).append(len(self.compactions))
        self.compactions.append(
            CompactionEvidence(
                event.agent, event.trigger, len(event.replaced), event.tokens_before, event.tokens_after
            )
        )

    def _agent_end(self, event: ev.AgentEnd) -> None:
        if event.agent in self._verifiers or event.verdict is not None:
            parent = self._parents.get(event.agent)
            brief = self._briefs.get(event.agent) or (self._briefs.get(parent) if parent else None)
            self._pending_verdicts.append(len(self.verdicts))
            self.verdicts.append(VerdictEvidence(event.agent, event.verdict, event.reason, brief))
            self._piece_verdict(event)
        elif event.agent in self._implementers:
            index = self._piece_index.get(piece_of(event.agent))
            if index is not None:
                self.pieces[index] = replace(self.pieces[index], outcome=event.outcome, reason=event.reason)
        for index in self._open_compactions.pop(event.agent, ()):
            self.compactions[index] = replace(self.compactions[index], agent_outcome=event.outcome)
        if event.outcome != "done":
            self.failures.append(Failure(event.agent, event.outcome, event.reason))

    def _piece_verdict(self, event: ev.AgentEnd) -> None:
        index = self._piece_index.get(piece_of(event.agent))
        if index is not None:
            piece = self.pieces[index]
            verdicts = (*piece.verdicts, event.verdict or "none")
            self.pieces[index] = replace(piece, verdicts=verdicts, reason=event.reason or piece.reason)

    def _session_end(self, event: ev.SessionEnd) -> None:
        for index in self._pending_routes:
            route = self.routes[index]
            self.routes[index] = replace(route, outcome=event.outcome)
        self._pending_routes = []
        for index in self._pending_verdicts:
            verdict = self.verdicts[index]
            piece_index = self._piece_index.get(piece_of(verdict.agent))
            piece = f"piece {self.pieces[piece_index].result}; " if piece_index is not None else ""
            self.verdicts[index] = replace(verdict, later=f"{piece}request {event.outcome}")
        self._pending_verdicts = []
        if event.outcome != "done":
            self.failures.append(Failure(None, event.outcome, event.reason))

    HANDLERS: ClassVar[Handlers] = {
        ev.SessionStart: _start,
        ev.RouteDecision: _route,
        ev.Message: _message,
        ev.AgentSpawn: _spawn,
        ev.AgentEnd: _agent_end,
        ev.Compaction: _compaction,
        ev.SessionEnd: _session_end,
    }


def session_evidence(events: Iterable[ev.EventBase]) -> SessionEvidence:
    evidence = SessionEvidence()
    evidence.feed(events)
    return evidence


def tuning_corpus(
    sessions: Iterable[Iterable[ev.EventBase]], profile: str, model: str, limit: int
) -> list[SessionEvidence]:
    """The newest ``limit`` sessions started with ``profile`` and ``model``, newest first."""
    chosen = []
    for events in sessions:
        evidence = session_evidence(events)
        if evidence.started is not None and evidence.profile == profile and evidence.model == model:
            chosen.append(evidence)
    chosen.sort(key=lambda evidence: (evidence.started, evidence.session), reverse=True)
    return chosen[:limit]

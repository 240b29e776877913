"""The tuning corpus: what ``aerix tune`` reflects on.

For a profile and a model, the newest N sessions whose first ``session.start`` names both,
each with the evidence the prompt artifacts need:

- routes: each routing decision, its scores, and how the request it routed ended
  (``routing.md``);
- parse retries: every turn that did not parse and was asked again (the turn format in
  ``system.md``);
- verdicts: each verifier's verdict and reason with the brief it judged (``verifier.md``,
  ``brief.md``);
- compactions: when and how much the runtime compacted (``compacted.md``);
- failures: agents and requests that ended other than ``done``, with their reasons
  (``planner.md``, ``brief.md``).
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
    "planner.md": ("routes", "failures"),
    "brief.md": ("verdicts", "failures"),
    "verifier.md": ("verdicts",),
    "compacted.md": ("compactions",),
}
"""Which evidence each embedded prompt's tuning reads."""


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


@dataclass(frozen=True)
class CompactionEvidence:
    agent: str
    trigger: str
    segments: int
    tokens_before: int
    tokens_after: int


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
    verdicts: list[VerdictEvidence] = field(default_factory=list)
    compactions: list[CompactionEvidence] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    _briefs: dict[str, str | None] = field(default_factory=dict)
    _parents: dict[str, str | None] = field(default_factory=dict)
    _verifiers: set[str] = field(default_factory=set)
    _pending_routes: list[int] = field(default_factory=list)

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

    def _spawn(self, event: ev.AgentSpawn) -> None:
        self._briefs[event.agent] = event.brief
        self._parents[event.agent] = event.parent
        if event.kind == "verifier":
            self._verifiers.add(event.agent)

    def _compaction(self, event: ev.Compaction) -> None:
        self.compactions.append(
            CompactionEvidence(
                event.agent, event.trigger, len(event.replaced), event.tokens_before, event.tokens_after
            )
        )

    def _agent_end(self, event: ev.AgentEnd) -> None:
        if event.agent in self._verifiers or event.verdict is not None:
            parent = self._parents.get(event.agent)
            brief = self._briefs.get(event.agent) or (self._briefs.get(parent) if parent else None)
            self.verdicts.append(VerdictEvidence(event.agent, event.verdict, event.reason, brief))
        if event.outcome != "done":
            self.failures.append(Failure(event.agent, event.outcome, event.reason))

    def _session_end(self, event: ev.SessionEnd) -> None:
        for index in self._pending_routes:
            route = self.routes[index]
            self.routes[index] = replace(route, outcome=event.outcome)
        self._pending_routes = []
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

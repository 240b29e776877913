"""What a request reports as it runs and when it ends: the observer the output formats (and the
screen) implement, and the result they print; and how the screen steers a running request
(``RequestControls``: its cancel signal and the plan gate)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio

from aerix.domain import events as ev
from aerix.domain.claude_format import StreamSummary
from aerix.domain.diffs import RequestDiff
from aerix.domain.usage import RequestUsage


class LiveProjection(Protocol):
    """A projection of the session's events (``aerix.projections``) that a view shows: a fold
    with a position, which the session's writer brings up to its request's start, then feeds
    each event as it records it."""

    @property
    def position(self) -> int: ...

    def feed(self, events: Iterable[ev.EventBase]) -> None: ...

    def take(self, event: ev.EventBase) -> None: ...


class StreamView(LiveProjection, Protocol):
    """The stream-json fold (``aerix.projections.claude_stream.ClaudeStream``): the lines of an
    event it took, and what the request's result line needs of its events."""

    def lines(self, record: ev.EventBase, listing: dict[str, Any] | None = None) -> list[dict[str, Any]]: ...

    def summary(self) -> StreamSummary: ...


class RequestObserver:
    """Hears what happens while a request runs; the output formats subclass it. Every method
    does nothing by default, so an observer overrides only what it shows."""

    def projections(self) -> Mapping[str, LiveProjection]:
        """The projections this observer shows, by their names among the session's views
        (``aerix.app.sessions.writer.VIEWS``: ``status figures``, ``claude stream``): the
        session's writer feeds each the request's events (its ``session.start`` first), before
        ``event`` tells the observer of one."""
        return {}

    def note(self, line: str) -> None:
        """A startup or end note for stderr."""

    def startup(self, listing: dict[str, Any]) -> None:
        """What startup found and bound (``aerix.app.request.opening.startup_listing``), once the
        members are bound and before the session starts."""

    def event(self, record: ev.EventBase) -> None:
        """A session event, just recorded."""

    def token(self, agent: str, text: str) -> None:
        """A piece of a generation's text as it streams."""


@dataclass(frozen=True)
class RequestPiece:
    """One of the root's ``agent`` calls: the piece it ran and how that ended."""

    id: str  # "a1.c3"
    outcome: str | None  # done | failed | killed | budget; None: no piece ran (an error, a refusal)


@dataclass(frozen=True)
class RequestResult:
    """What a request ended with: everything the output formats print."""

    session_id: str
    outcome: str  # done | failed | killed | budget | cancelled
    exit_code: int
    result: str
    reason: str | None
    route: str | None
    turns: int
    usage: RequestUsage
    diff: RequestDiff
    duration_ms: float
    request: int = 1
    resumed: bool = False
    model: str | None = None
    log: Path | None = None
    notes: tuple[str, ...] = ()
    #: The root's pieces, in call order.
    pieces: tuple[RequestPiece, ...] = ()


# ---- steering a running request (the screen; ``-p`` uses none of it) -------------------------


class CancelSignal(Protocol):
    """Set once to cancel (``anyio.Event`` is one)."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    async def wait(self) -> None: ...


@dataclass(frozen=True)
class PlanReview:
    """What the user did with a plan at the gate: accept it, edit it (``text`` is their
    version), or abort the request."""

    decision: Literal["accept", "edit", "abort"]
    text: str | None = None


class PlanGate(Protocol):
    """The screen's plan gate: shows a plan and waits for the user."""

    async def review(self, agent: str, text: str) -> PlanReview: ...


def _new_signal() -> CancelSignal:
    return anyio.Event()


@dataclass
class RequestControls:
    """How the person at the screen steers a running request: ``cancel`` (Esc) ends it
    ``cancelled`` — generations closed, commands' process groups killed, the end recorded — and
    ``plan_gate`` holds the root's first plan write of the request for review."""

    cancel: CancelSignal = field(default_factory=_new_signal)
    plan_gate: PlanGate | None = None

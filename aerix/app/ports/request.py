"""What a request reports as it runs and when it ends: the observer the output formats (and the
screen) implement, and the result they print."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aerix.domain import events as ev
from aerix.domain.diffs import RequestDiff


class RequestObserver:
    """Hears what happens while a request runs; the output formats subclass it. Every method
    does nothing by default, so an observer overrides only what it shows."""

    def note(self, line: str) -> None:
        """A startup or end note for stderr."""

    def startup(self, listing: dict[str, Any]) -> None:
        """What startup found and bound (``aerix.app.request.startup.startup_listing``), once the
        members are bound and before the session starts."""

    def event(self, record: ev.EventBase) -> None:
        """A session event, just recorded."""

    def token(self, agent: str, text: str) -> None:
        """A piece of a generation's text as it streams."""


@dataclass(frozen=True)
class RequestUsage:
    """The pool's figures summed over every generation of the request."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    generations: int = 0


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

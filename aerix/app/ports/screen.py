"""The interactive screen's port: what the conversation tells it and asks of it, and the values
that cross (the opening's figures, what the user typed, the live figures' shapes).

``aerix.adapters.terminal.screen.TerminalScreen`` implements ``ConversationScreen``;
``aerix.app.request.conversation`` drives it. The live figures are the status projection's
(``aerix.projections.status.StatusFigures``); the screen is handed a way to make one
(``StatusFactory``) and reads it through ``StatusView.now``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from aerix.app.ports.diffs import DiffFigures
from aerix.app.ports.pool import MemberInfo
from aerix.app.ports.request import LiveProjection, PlanGate, RequestControls, RequestResult
from aerix.app.ports.sessions import SessionSummary
from aerix.domain import events as ev
from aerix.domain.diffs import RequestDiff

# ---- the live figures ---------------------------------------------------------------------


class ContextFigures(Protocol):
    """The context line's figures: the root's tokens, as the pool reported them (approximate
    after a compaction), against the window."""

    @property
    def tokens(self) -> int: ...
    @property
    def window(self) -> int | None: ...
    @property
    def approximate(self) -> bool: ...


class StatsFigures(Protocol):
    """The stats line's figures of a request that ended without an error."""

    @property
    def completion_tokens(self) -> int: ...
    @property
    def streaming_secs(self) -> float: ...
    @property
    def rate(self) -> float | None: ...
    @property
    def duration_secs(self) -> float: ...
    @property
    def finished_at(self) -> datetime: ...


class StatusNow(Protocol):
    """The status figures of the current (or last) request at one moment: what the status,
    context, diff and stats lines show."""

    @property
    def root_turn(self) -> int: ...
    @property
    def root_max_turns(self) -> int | None: ...
    @property
    def tool_calls(self) -> int: ...
    @property
    def context(self) -> ContextFigures | None: ...
    @property
    def diff(self) -> DiffFigures | None: ...
    @property
    def verifier(self) -> str | None: ...
    @property
    def stats(self) -> StatsFigures | None: ...


class StatusView(LiveProjection, Protocol):
    """The status figures, folded from the request's events (the session's writer feeds them:
    the observer that shows them lists them in ``projections``); ``now`` is what they are."""

    def now(self) -> StatusNow: ...


#: Makes a fresh fold of the status figures (one per session).
StatusFactory = Callable[[], StatusView]


# ---- opening, and what the user types -----------------------------------------------------------

#: How much a startup note matters: the screen marks a warning ▲ (ember), an error ✗ (red).
NoteLevel = Literal["info", "warning", "error"]


@dataclass(frozen=True)
class StartupNote:
    """One thing startup wants the user to know, with how much it matters."""

    text: str
    level: NoteLevel = "warning"


@dataclass(frozen=True)
class Opening:
    """What startup found and bound, for the launch frame and the startup block."""

    cwd: Path
    project_key: str
    main: MemberInfo
    decision: MemberInfo | None
    socket: Path
    pool_started: bool
    session_id: str
    resumed: bool
    base_commit: str | None
    notes: tuple[StartupNote, ...]
    ready_secs: float
    skills: tuple[str, ...] = ()
    #: ``aerix.app.request.opening.startup_listing``: instruction files, skills, agents, plugins, hooks.
    listing: dict[str, Any] = field(default_factory=dict)
    #: --fork-session: the session the first request copies into ``session_id``.
    forked_from: str | None = None


@dataclass(frozen=True)
class Prompt:
    text: str


@dataclass(frozen=True)
class Command:
    """A command the conversation answers (``/clear``, ``/resume``)."""

    name: str
    args: str = ""


UserInput = Prompt | Command


class ScreenInput(PlanGate, Protocol):
    """What the person at the screen types and chooses: prompts and commands, a session to
    resume, and a plan at the gate (``review``)."""

    async def next_input(self) -> UserInput | None:
        """The next prompt or command, in the order typed; None when the user exits."""
        ...

    async def pick_session(self, entries: Sequence[SessionSummary]) -> str | None:
        """Let the user choose one of ``entries`` (``/resume``); None when they do not."""
        ...


class RequestDisplay(Protocol):
    """How the screen shows a request: its start, its events and tokens as they come (through
    the projections it shows), its notes, and how it ended."""

    def request_started(self, prompt: str, controls: RequestControls) -> None:
        """A request runs ``prompt``; Esc sets ``controls.cancel``."""

    def note(self, line: str) -> None: ...

    def projections(self) -> Mapping[str, LiveProjection]:
        """The projections the screen shows (its ``status figures``), fed by the session's writer."""
        ...

    def event(self, record: ev.EventBase) -> None:
        """A session event, just recorded (and taken by ``projections``)."""

    def token(self, agent: str, text: str) -> None: ...

    def request_ended(self, result: RequestResult) -> None: ...

    def request_failed(self, line: str) -> None:
        """The request could not run (an error before its session was written)."""


class SessionDisplay(Protocol):
    """What the screen says about the session: the launch frame (or why there is none), a
    session changed or its diff, and one-line feedback."""

    def opened(self, opening: Opening) -> None:
        """Startup is done: show the launch frame and the startup block."""

    def failed_to_open(self, line: str) -> None:
        """Startup failed: one error row."""

    def session_changed(self, session_id: str, resumed: bool) -> None: ...

    def session_diff_changed(self, diff: RequestDiff) -> None:
        """The working tree against the commit the session started on, after a request."""

    def say(self, line: str) -> None:
        """One line of feedback in the transcript."""


@dataclass(frozen=True)
class ConversationScreen:
    """The screen, as the conversation sees it, by job (``TerminalScreen`` is all three)."""

    input: ScreenInput
    request: RequestDisplay
    session: SessionDisplay

"""The figures of the live screen's status, context, diff and stats lines, at any point.

Values only: the terminal adapter renders them. Each figure has the one source the spec gives:

- context line: the root's last generation as the pool reported it (prompt plus completion
  tokens; only the prompt after an attempt that is asked again, whose output the context does
  not keep); after a root compaction, the client's count of the compacted context, marked
  approximate, until the pool reports again; absent at the start of every request.
- diff line: the diff stats of the last finished request; the verifier state (pending while
  one runs, then the last verdict) of the current request.
- stats line: set when a request finishes without an error: completion tokens of the
  generations that streamed, over the time at least one was streaming (overlaps count once),
  the request's duration and when it ended. The rate is None (shown ``–``) when too little
  streamed to give one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import ClassVar, Literal

from aerix.domain import events as ev
from aerix.domain.segments import ROOT_AGENT
from aerix.projections.base import Handlers, Projection

STATS_MIN_STREAMING_SECS = 0.05
"""Less streaming time than this gives no rate (the stats line shows ``–``)."""


@dataclass(frozen=True)
class ContextFigure:
    tokens: int
    window: int | None
    approximate: bool


@dataclass(frozen=True)
class DiffFigure:
    added: int
    removed: int
    files: int


@dataclass(frozen=True)
class StatsFigure:
    completion_tokens: int
    streaming_secs: float
    rate: float | None
    duration_secs: float
    finished_at: datetime


@dataclass(frozen=True)
class StatusSnapshot:
    """The figures a line shows, as they were when taken."""

    root_turn: int
    root_max_turns: int | None
    tool_calls: int
    context: ContextFigure | None
    diff: DiffFigure | None
    verifier: Literal["pending", "passed", "failed"] | None
    stats: StatsFigure | None


@dataclass
class StatusFigures(Projection):
    """Status line values for the current (or last) request."""

    request_started: datetime | None = None
    root_turn: int = 0
    root_max_turns: int | None = None
    tool_calls: int = 0
    running: bool = False
    context: ContextFigure | None = None
    diff: DiffFigure | None = None
    verifier: Literal["pending", "passed", "failed"] | None = None
    stats: StatsFigure | None = None
    _window: int | None = None
    _streams: list[tuple[datetime, datetime]] = field(default_factory=list)
    _completion: int = 0
    _open_verifiers: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        super().__init__()

    def now(self) -> StatusSnapshot:
        return StatusSnapshot(
            self.root_turn,
            self.root_max_turns,
            self.tool_calls,
            self.context,
            self.diff,
            self.verifier,
            self.stats,
        )

    def _start(self, event: ev.SessionStart) -> None:
        self.request_started = event.time
        self._window = event.window
        self.running = True
        self.root_turn = self.tool_calls = self._completion = 0
        self.context = None
        self.verifier = None
        self._streams = []
        self._open_verifiers = set()

    def _message(self, event: ev.Message) -> None:
        if event.role != "assistant":
            return
        if event.parse_error is None:
            self.tool_calls += len(event.calls)
            if event.agent == ROOT_AGENT:  # this request's turns: a resumed root numbers on
                self.root_turn += 1
        usage = event.usage
        if usage is None:
            return
        if event.agent == ROOT_AGENT:
            # An attempt re-asked (cut, stopped while degenerating, unparsed) leaves nothing of
            # its output in the context: the pool appended none of it, or it was removed.
            kept = usage.completion_tokens if event.parse_error is None else 0
            self.context = ContextFigure(usage.prompt_tokens + kept, self._window, approximate=False)
        if usage.decode_ms and usage.completion_tokens:
            self._completion += usage.completion_tokens
            self._streams.append((event.time - timedelta(milliseconds=usage.decode_ms), event.time))

    def _compaction(self, event: ev.Compaction) -> None:
        if event.agent == ROOT_AGENT:
            self.context = ContextFigure(event.tokens_after, self._window, approximate=True)

    def _spawn(self, event: ev.AgentSpawn) -> None:
        if event.agent == ROOT_AGENT:
            self.root_max_turns = event.max_turns
        if event.kind == "verifier":
            self._open_verifiers.add(event.agent)
            self.verifier = "pending"

    def _agent_end(self, event: ev.AgentEnd) -> None:
        if event.agent in self._open_verifiers:
            self._open_verifiers.discard(event.agent)
            if event.verdict is not None or event.outcome != "done":
                self.verifier = "passed" if event.verdict == "pass" else "failed"
            if self._open_verifiers:
                self.verifier = "pending"

    def _end(self, event: ev.SessionEnd) -> None:
        self.running = False
        if event.diff is not None:
            self.diff = DiffFigure(event.diff.added, event.diff.removed, event.diff.files)
        if event.outcome != "done" or event.exit_code != 0:
            return
        streaming = streaming_seconds(self._streams)
        started = self.request_started or event.time
        if event.duration_ms is not None:
            duration = event.duration_ms / 1000
        else:
            duration = (event.time - started).total_seconds()
        rate = self._completion / streaming if streaming >= STATS_MIN_STREAMING_SECS else None
        self.stats = StatsFigure(self._completion, streaming, rate, duration, event.time)

    HANDLERS: ClassVar[Handlers] = {
        ev.SessionStart: _start,
        ev.Message: _message,
        ev.Compaction: _compaction,
        ev.AgentSpawn: _spawn,
        ev.AgentEnd: _agent_end,
        ev.SessionEnd: _end,
    }


def streaming_seconds(intervals: list[tuple[datetime, datetime]]) -> float:
    """Length of the union of the intervals: overlapping generations count once."""
    total = 0.0
    current_start: datetime | None = None
    current_end: datetime | None = None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_start is not None and current_end is not None:
                total += (current_end - current_start).total_seconds()
            current_start, current_end = start, end
        elif end > current_end:
            current_end = end
    if current_start is not None and current_end is not None:
        total += (current_end - current_start).total_seconds()
    return total

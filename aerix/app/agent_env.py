"""What an agent run is given and what it gives back: ``AgentSpec`` (this agent), an
``AgentEnvironment`` (the ports and settings it works with) and ``AgentResult`` (how it ended).

The caller (a request for the root ``a1``; delegation for implementers and verifiers) creates
the agent's pool context with its opening segments, records ``agent.spawn``, and hands both
here; :func:`aerix.app.agent_loop.run_agent` does the rest and records ``agent.end``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio

from aerix.app.ports import EventRecorder, PoolPort, PromptSource, SkillSource, SpoolWriter
from aerix.domain import events as ev
from aerix.domain.settings import Settings
from aerix.domain.tools import ToolSpec

Outcome = Literal["done", "failed", "killed", "budget"]


class SegmentLike(Protocol):
    """An opening segment as the caller knows it (``root_context.SegmentPlan`` and the
    projection's ``SegmentView`` both fit): the loop needs its kind to know what it may
    compact, drop or summarize."""

    @property
    def id(self) -> str: ...

    @property
    def role(self) -> ev.SegmentRole: ...

    @property
    def kind(self) -> ev.SegmentKind: ...

    @property
    def pinned(self) -> bool: ...

    @property
    def label(self) -> str | None: ...


class JobOutcomeLike(Protocol):
    """How a background job's process ended (``adapters.tools.process.ProcessOutcome``)."""

    returncode: int | None
    timed_out: bool
    stopped: bool


class JobReportLike(Protocol):
    """A finished background job (``adapters.tools.bash.JobReport``)."""

    @property
    def job_id(self) -> str: ...

    @property
    def command(self) -> str: ...

    @property
    def outcome(self) -> JobOutcomeLike: ...

    @property
    def text(self) -> str: ...


class JobsPort(Protocol):
    """One agent's background jobs (``adapters.tools.bash.JobTable``)."""

    def running_ids(self) -> list[str]: ...

    def take_finished(self) -> Sequence[JobReportLike]: ...

    def wait_for_one(self, cancel: threading.Event | None = None) -> Sequence[JobReportLike]: ...

    def kill_all(self) -> Sequence[JobReportLike]: ...


class ToolRunner(Protocol):
    """Runs the tools that need no loop state (read, write, edit, bash, glob, grep, repo_map,
    skill, the refused web tools); ``adapters.tools.LocalTools`` is one. ``run`` never raises
    for a tool failure: it returns ``error: …``. It is called on a worker thread."""

    @property
    def jobs(self) -> JobsPort: ...

    def run(self, tool: str, tool_input: Mapping[str, Any], cancel: threading.Event | None = None) -> str: ...


#: Called with (agent id, a piece of output text) while a turn streams.
OnAgentToken = Callable[[str, str], None]


@dataclass(frozen=True)
class AgentSpec:
    """One agent: who it is, where its context lives, what it may call, how long it may run."""

    agent_id: str  # "a1", "a1.c3", "a1.c3.v1"
    member: str  # the pool member it runs on ("main")
    context_id: str  # the pool context the caller created with the agent's opening segments
    window: int  # the member's n_ctx
    tools: Sequence[ToolSpec]  # the callable tools; the turn schema is built from these
    max_turns: int
    verifier: bool = False
    #: The context's opening segments in order, with their kinds. Segments the pool holds that
    #: are not listed here are treated as user turns: never compacted.
    segments: Sequence[SegmentLike] = ()
    #: The plan this agent starts with (a resumed root's, rebuilt from the log).
    plan: str | None = None
    #: Whether the member has the ``json`` constraint; None asks the pool (``member.list``).
    json_constraint: bool | None = None


@dataclass
class AgentEnvironment:
    """The ports and settings an agent works with. The caller builds it."""

    pool: PoolPort
    events: EventRecorder
    prompts: PromptSource
    settings: Settings
    cwd: Path
    spool: SpoolWriter
    skills: SkillSource | None = None
    clock: Callable[[], datetime] | None = None
    cancel: anyio.Event = field(default_factory=anyio.Event)
    #: The file, shell and search tools; None: ``adapters.tools.LocalTools`` on ``cwd`` with
    #: ``skills`` (built by the loop, one per agent run, with its own job table).
    tools: ToolRunner | None = None
    on_token: OnAgentToken | None = None


@dataclass(frozen=True)
class UsageTotals:
    """The pool's figures summed over an agent's generations (re-asks included)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    generations: int = 0

    def plus(self, prompt_tokens: int, completion_tokens: int) -> UsageTotals:
        return UsageTotals(
            self.prompt_tokens + prompt_tokens,
            self.completion_tokens + completion_tokens,
            self.generations + 1,
        )


@dataclass(frozen=True)
class AgentResult:
    """How an agent ended. ``final`` is its final text (a verifier's: the verdict's reason);
    ``reason`` says why it ended other than ``done``."""

    outcome: Outcome
    final: str | None = None
    reason: str | None = None
    turns: int = 0
    usage: UsageTotals = UsageTotals()
    verdict: ev.Verdict | None = None
    files_touched: tuple[str, ...] = ()
    checks_run: tuple[str, ...] = ()
    plan: str | None = None

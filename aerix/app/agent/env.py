"""What an agent run is given and what it gives back: ``AgentSpec`` (this agent), an
``AgentEnvironment`` (the ports and settings it works with) and ``AgentResult`` (how it ended).

The caller (a request for the root ``a1``; delegation for implementers and verifiers) creates
the agent's pool context with its opening segments, records ``agent.spawn``, and hands both
here; :func:`aerix.app.agent.loop.run_agent` does the rest and records ``agent.end``.

Two ports (``aerix.app.ports.agents``) belong to agents rather than to the machine:
``Delegator`` runs a turn's ``agent`` calls (``aerix.app.delegation``), and ``AgentLifecycle``
is told when agents spawn, start, verify and finish — the one place each hook of those moments
fires from (``aerix.app.hooks.lifecycle.HookLifecycle`` on the request's hooks;
``QuietLifecycle`` without any).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from aerix.app.hooks.fire import Hooks
from aerix.app.hooks.lifecycle import HookLifecycle
from aerix.app.ports.agents import AgentLifecycle, Delegator
from aerix.app.ports.pool import PoolPort
from aerix.app.ports.project import PromptSource, SkillSource
from aerix.app.ports.request import CancelSignal, PlanReview
from aerix.app.ports.sessions import EventRecorder
from aerix.app.ports.tools import SpoolWriter, ToolRunnerFactory
from aerix.domain import events as ev
from aerix.domain.permissions import NO_RESTRICTIONS, Permissions
from aerix.domain.settings import Settings
from aerix.domain.tools import ToolSpec
from aerix.projections.contexts import Contexts


class PlanGateLike(Protocol):
    """Decides whether a plan write waits for the user (``loop_tools.FirstPlanGate``): None
    lets it through unasked."""

    async def review(self, agent_id: str, text: str) -> PlanReview | None: ...


#: Called with (agent id, a piece of output text) while a turn streams.
OnAgentToken = Callable[[str, str], None]
#: Called with (tool name, its input, the hook's reason); True lets the call run.
AskUser = Callable[[str, Mapping[str, Any], str], Awaitable[bool]]


class QuietLifecycle:
    """An ``AgentLifecycle`` that does nothing: no hooks are configured."""

    async def spawned(self, spawn: ev.AgentSpawn) -> None:
        return None

    async def starting(self, agent: str, agent_type: str) -> str | None:
        return None

    async def verifying(self, agent: str, brief: str, check: str, summary: str, files: Sequence[str]) -> None:
        return None

    async def finishing(
        self, agent: str, kind: ev.AgentKind, agent_type: str | None, final: str, active: bool
    ) -> str | None:
        return None


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
    #: The plan this agent starts with (a resumed root's, rebuilt from the log).
    plan: str | None = None
    #: Whether the member has the ``json`` constraint; None asks the pool (``member.list``).
    json_constraint: bool | None = None
    kind: ev.AgentKind = "root"
    #: How many agent calls lie between the root and this agent (the root's is 0).
    depth: int = 0
    #: The definition's name, ``implementer`` or ``verifier``: what hooks call its type.
    agent_type: str | None = None
    #: How many leading segments are the request's shared prefix (an implementer's fork kept
    #: them); None: the leading system and instruction segments.
    shared_prefix: int | None = None
    #: Whether its work is a change to files (a root that acts on an ``edit`` or ``plan``
    #: route, an implementer): after each turn's results it is told the next step
    #: (``CHANGE_NEXT_NOTE``).
    makes_changes: bool = False
    #: Whether it is the planner of a change (a root on an ``edit`` or ``plan`` route that may
    #: only delegate): its work is the pieces it hands out.
    delegates_changes: bool = False
    #: Files attached to its task (``aerix.app.agent.attachments``): already in its context, so
    #: ``write`` may replace them.
    seen_files: tuple[str, ...] = ()


@dataclass
class AgentEnvironment:
    """The ports and settings an agent works with. The caller builds it."""

    pool: PoolPort
    events: EventRecorder
    #: The session's ``contexts`` view, which the writer behind ``events`` feeds: each agent's
    #: live context is its entry there, so the loop works on the fold a resume rebuilds.
    contexts: Contexts
    prompts: PromptSource
    settings: Settings
    cwd: Path
    spool: SpoolWriter
    #: Makes each agent run's file, shell and search tools (on ``cwd``, its own job table).
    tools: ToolRunnerFactory
    skills: SkillSource | None = None
    cancel: CancelSignal = field(default_factory=anyio.Event)
    on_token: OnAgentToken | None = None
    #: The request's hooks; None: no hook ever fires.
    hooks: Hooks | None = None
    #: Asks the person whether a call a PreToolUse hook answered ``ask`` may run; None (as under
    #: ``aerix -p``) refuses it.
    ask_user: AskUser | None = None
    #: The request's plan gate (the root's, on the screen); None never waits (``-p``, subagents).
    plan_gate: PlanGateLike | None = None
    #: Runs ``agent`` calls; None: each is refused (``error: delegation is not available …``).
    delegator: Delegator | None = None
    #: Where the agent hooks fire; None: the hooks' own (``HookLifecycle`` on ``hooks``), or
    #: nothing without hooks.
    lifecycle: AgentLifecycle | None = None
    #: The deny rules and ``--tools``: tools taken away from every agent, calls refused.
    permissions: Permissions = NO_RESTRICTIONS

    def agent_lifecycle(self) -> AgentLifecycle:
        if self.lifecycle is not None:
            return self.lifecycle
        return HookLifecycle(self.hooks) if self.hooks is not None else QuietLifecycle()


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

    outcome: ev.AgentOutcome
    final: str | None = None
    reason: str | None = None
    turns: int = 0
    usage: UsageTotals = UsageTotals()
    verdict: ev.Verdict | None = None
    files_touched: tuple[str, ...] = ()
    checks_run: tuple[str, ...] = ()
    plan: str | None = None
    #: How many tool calls the agent made (a verifier's pass needs at least one).
    tool_calls: int = 0

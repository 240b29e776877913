"""The root agent's run within a request: its pool context, its spawn, the loop, its end.

The context is created in the pool with every segment at once; each new segment becomes a
``segment`` event with the pool's token count (a resumed root's earlier segments are in the log
already). Then ``agent.spawn`` for ``a1``, the turn loop (``aerix.app.agent.loop.run_agent``,
the loop's own module), and the pool context is dropped: the log is the record, and the next
request rebuilds the root from it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import anyio

from aerix.app.agent.env import AgentEnvironment, AgentResult, AgentSpec, PlanGateLike
from aerix.app.agent.live_context import record_segments
from aerix.app.agent.loop import run_agent
from aerix.app.delegation import delegating
from aerix.app.hooks.fire import Hooks
from aerix.app.ports.pool import MemberInfo, PoolPort
from aerix.app.ports.project import Project, PromptSource
from aerix.app.ports.request import CancelSignal
from aerix.app.ports.sessions import EventRecorder
from aerix.app.ports.tools import SpoolWriter, ToolRunnerFactory
from aerix.app.request.root_context import root_tools
from aerix.domain import events as ev
from aerix.domain.bounds import EXIT_BUDGET, EXIT_CANCELLED, EXIT_DONE, EXIT_FAILED, EXIT_KILLED
from aerix.domain.segments import ROOT_AGENT, ContextSegment
from aerix.errors import PoolError
from aerix.projections.contexts import Contexts

#: The exit status of each way an agent ends (``budget`` is the spec's; see docs/configuration.md).
#: The routes whose request is a change to files: a root that acts on them (not a planner) is
#: told the next step after each turn's results (``AgentSpec.makes_changes``).
CHANGE_ROUTES: Final = frozenset({"edit", "plan"})
EXIT_CODES: Final[dict[str, int]] = {
    "done": EXIT_DONE,
    "failed": EXIT_FAILED,
    "budget": EXIT_BUDGET,
    "killed": EXIT_KILLED,
    "cancelled": EXIT_CANCELLED,
}


@dataclass(frozen=True)
class RootEnded:
    """How the root agent (and so the request) ended."""

    outcome: str
    exit_code: int
    result: str = ""
    reason: str | None = None
    turns: int = 0
    notes: tuple[str, ...] = field(default=())


@dataclass
class RootRun:
    """Everything the root agent's run needs."""

    pool: PoolPort
    events: EventRecorder
    contexts: Contexts  # the session's ``contexts`` view, fed by the writer behind ``events``
    prompts: PromptSource
    project: Project
    member: MemberInfo
    rebuilt: list[ContextSegment]  # a resumed root's segments, already in the log
    added: list[ContextSegment]  # this request's new segments
    route: str
    max_turns: int | None
    plan: str | None
    spool: SpoolWriter
    tools: ToolRunnerFactory
    on_token: Callable[[str, str], None] | None = None
    hooks: Hooks | None = None
    cancel: CancelSignal = field(default_factory=anyio.Event)
    plan_gate: PlanGateLike | None = None
    #: Rebuilt segments whose text this request replaced (``--profile-refresh``'s system
    #: segment): recorded, with the pool's count, as the added ones are.
    replaced: list[ContextSegment] = field(default_factory=list)
    #: Files attached to the prompt (``aerix.app.agent.attachments``).
    seen_files: tuple[str, ...] = ()


async def run_root(run: RootRun) -> RootEnded:
    """Create a1's context, spawn it, run its turns, drop the context."""
    counts = await run.pool.contexts.create(run.member.name, [s.wire() for s in (*run.rebuilt, *run.added)])
    try:
        record_segments(run.events, [*run.replaced, *run.added], counts)
        tools = root_tools(run.route, run.project.settings, run.project.permissions)
        max_turns = run.max_turns or run.project.settings.delegation.max_turns
        change, can_write = run.route in CHANGE_ROUTES, any(tool.name == "write" for tool in tools)
        env = _environment(run)
        spawn = run.events.record(
            ev.AgentSpawn,
            agent=ROOT_AGENT,
            kind="root",
            member=run.member.name,
            model=run.member.model,
            tools=[tool.name for tool in tools],
            depth=0,
            max_turns=max_turns,
        )
        await env.agent_lifecycle().spawned(spawn)
        spec = AgentSpec(
            agent_id=ROOT_AGENT,
            member=run.member.name,
            context_id=counts.context,
            window=run.member.n_ctx,
            tools=tools,
            max_turns=max_turns,
            verifier=False,
            plan=run.plan,
            json_constraint="json" in run.member.constraints,
            makes_changes=change and can_write,
            delegates_changes=change and not can_write and any(tool.name == "agent" for tool in tools),
            seen_files=run.seen_files,
        )
        result = await run_agent(spec, env)
    finally:
        with anyio.CancelScope(shield=True):
            await _drop_quietly(run.pool, counts.context)
    return ended_from(result)


def _environment(run: RootRun) -> AgentEnvironment:
    """The root's environment, which every piece of the request shares (its delegation)."""
    env = AgentEnvironment(
        pool=run.pool,
        events=run.events,
        contexts=run.contexts,
        prompts=run.prompts,
        settings=run.project.settings,
        cwd=run.project.cwd,
        spool=run.spool,
        tools=run.tools,
        skills=run.project.skills,
        on_token=run.on_token,
        hooks=run.hooks,
        cancel=run.cancel,
        plan_gate=run.plan_gate,
        permissions=run.project.permissions,
    )
    return delegating(env, run.project.agents)


def ended_from(result: AgentResult) -> RootEnded:
    outcome = str(result.outcome)
    return RootEnded(
        outcome=outcome,
        exit_code=EXIT_CODES.get(outcome, 1),
        result=result.final or "",
        reason=result.reason,
        turns=result.turns,
    )


async def _drop_quietly(pool: PoolPort, context: str) -> None:
    with contextlib.suppress(PoolError):  # the pool went away: the context went with it
        await pool.contexts.drop(context)

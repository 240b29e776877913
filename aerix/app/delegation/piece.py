"""One ``agent`` call: a piece — an implementer, then a verifier, retried on failure (spec,
"Delegation").

1. The call's ``definition`` must name a known definition (else the result is an error naming
   the ones there are); the member is the call's ``member``, else the definition's ``model``,
   else the caller's (``members.MemberPicker``; one that cannot serve fails the piece).
2. Attempt N runs the implementer (``a1.c3``, then ``a1.c3.r1`` …) on a fresh fork of the
   caller's shared prefix (``openings``), with the definition's tools (or all; never ``agent``
   at ``delegation.depth``, never one a permission rule or ``--tools`` takes away) and its
   ``maxTurns`` (else ``delegation.max_turns``). One that ends other than ``done`` ends the
   piece at once, with its outcome.
3. A ``done`` implementer is checked by verifier ``a1.c3.vN`` with only ``read``, ``bash``,
   ``grep``, ``glob`` and ``repo_map`` (less what the permissions take away); its final is a
   verdict under the Json constraint. A verifier that ends without one counts as ``fail``, and
   so does a ``pass`` given before it made any tool call (it judged work it never looked at).
   A ``fail`` runs the next attempt with the reason appended, at most ``delegation.retries``
   times; then the piece fails with ``verification failed after N attempts``.
4. The result is ``{summary, files_touched, checks_run, outcome}`` (``PieceResult``).

Every agent's ``agent.spawn`` is recorded before its context is made (``AgentSpawn`` fires with
it, then ``SubagentStart``, whose context is a pinned segment of the agent's opening), and every
spawn gets its ``agent.end`` (the loop's, or one here when the context could not be made or a
hook answered ``continue: false`` first, which then ends the caller). A cancel stops the
piece between agents; the running agent ends ``killed`` itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from aerix.app.agent.attachments import attach_named_files
from aerix.app.agent.env import AgentEnvironment, AgentResult, AgentSpec
from aerix.app.agent.live_context import hook_context_segment
from aerix.app.agent.loop import run_agent
from aerix.app.delegation.members import MemberPicker, MemberUnavailable
from aerix.app.delegation.openings import implementer_segments, open_context, verifier_segments
from aerix.app.hooks.fire import HookStopped
from aerix.app.ports.agents import Caller
from aerix.app.ports.pool import MemberInfo
from aerix.app.ports.project import AgentDefinition, AgentDefinitionSource
from aerix.domain import events as ev
from aerix.domain.pieces import (
    IMPLEMENTER_TYPE,
    UNINSPECTED_PASS,
    VERIFIER_TYPE,
    PieceResult,
    implementer_id,
    piece_id,
    unique_relative_paths,
    verification_failed,
    verifier_id,
)
from aerix.domain.segments import ContextSegment
from aerix.domain.tools import TOOLS, VERIFIER_TOOLS, ToolSpec, tool_spec
from aerix.domain.turns import ToolCall
from aerix.errors import PoolError

CANCELLED = "cancelled"


@dataclass(frozen=True)
class PieceTools:
    """The agents a piece may run: what its caller's depth and definition allow."""

    implementer: tuple[ToolSpec, ...]
    verifier: tuple[ToolSpec, ...]


def implementer_tools(definition: AgentDefinition | None, depth: int, max_depth: int) -> tuple[ToolSpec, ...]:
    """The definition's tools (or every tool), without ``agent`` when the implementer's depth
    is the limit: an agent at ``delegation.depth`` cannot spawn."""
    names = definition.tools if definition is not None and definition.tools is not None else None
    tools = TOOLS if names is None else tuple(tool_spec(name) for name in names)
    if depth >= max_depth:
        tools = tuple(tool for tool in tools if tool.name != "agent")
    return tools


def unknown_definition(name: str, known: Sequence[str]) -> str:
    names = ", ".join(known) if known else "none are installed"
    return f"error: no agent definition named {name!r} (definitions: {names})"


@dataclass
class Piece:
    """The run of one agent call."""

    env: AgentEnvironment
    definitions: AgentDefinitionSource
    members: MemberPicker
    caller: Caller
    call: ToolCall

    @property
    def id(self) -> str:
        return piece_id(self.caller.agent_id, self.call.id)

    @property
    def brief(self) -> str:
        return str(self.call.input.get("brief") or "")

    @property
    def check(self) -> str:
        return str(self.call.input.get("check") or "")

    async def run(self) -> str:
        """The call's result text."""
        name = self.call.input.get("definition") or None
        definition = self.definitions.get(str(name)) if name else None
        if name and definition is None:
            return unknown_definition(str(name), self.definitions.names)
        wanted = self.call.input.get("member") or (definition.model if definition else None)
        try:
            member = await self.members.pick(str(wanted) if wanted else None, self.caller.member)
        except (MemberUnavailable, PoolError) as exc:
            return PieceResult(str(exc), (), (), "failed").text()
        return (await self._attempts(definition, member)).text()

    async def _attempts(self, definition: AgentDefinition | None, member: MemberInfo) -> PieceResult:
        settings = self.env.settings.delegation
        attempts = settings.retries + 1
        depth = self.caller.depth + 1
        permissions = self.env.permissions
        tools = PieceTools(
            permissions.restrict(implementer_tools(definition, depth, settings.depth)),
            permissions.restrict(tuple(tool_spec(n) for n in VERIFIER_TOOLS)),
        )
        touched: list[str] = []
        checks: tuple[str, ...] = ()
        reason: str | None = None
        for attempt in range(1, attempts + 1):
            if self.env.cancel.is_set():
                return self._result(CANCELLED, touched, checks, "killed")
            implementer = await self._implementer(attempt, definition, member, tools.implementer, reason)
            touched += implementer.files_touched
            if implementer.outcome != "done":
                return self._result(
                    implementer.reason or implementer.outcome, touched, checks, implementer.outcome
                )
            summary = implementer.final or ""
            if self.env.cancel.is_set():
                return self._result(CANCELLED, touched, checks, "killed")
            verifier = await self._verifier(attempt, member, tools.verifier, summary, touched)
            checks = verifier.checks_run
            if verifier.outcome == "done" and verifier.verdict == "pass" and verifier.tool_calls:
                return self._result(summary, touched, checks, "done")
            if verifier.outcome == "killed" and self.env.cancel.is_set():
                return self._result(CANCELLED, touched, checks, "killed")
            reason = _failure_reason(verifier)
        return self._result(
            verification_failed(attempts, reason or "no reason given"), touched, checks, "failed"
        )

    def _result(
        self, summary: str, touched: Sequence[str], checks: Sequence[str], outcome: ev.AgentOutcome
    ) -> PieceResult:
        files = unique_relative_paths(touched, str(self.env.cwd))
        return PieceResult(summary, tuple(files), tuple(checks), outcome)

    # -- the two kinds of agent ---------------------------------------------------------------

    async def _implementer(
        self,
        attempt: int,
        definition: AgentDefinition | None,
        member: MemberInfo,
        tools: tuple[ToolSpec, ...],
        reason: str | None,
    ) -> AgentResult:
        agent_id = implementer_id(self.id, attempt)
        body = (definition.name, definition.body) if definition is not None else None
        env = self.env
        attached = attach_named_files(self.brief, env.tools(env.cwd, None), env.permissions, env.cwd)
        own = implementer_segments(agent_id, env.prompts, self.brief, self.check, body, reason, attached.text)
        settings = self.env.settings.delegation
        max_turns = definition.max_turns if definition and definition.max_turns else settings.max_turns
        spawn = _Spawn(
            agent_id,
            "implementer",
            definition.name if definition else IMPLEMENTER_TYPE,
            attempt,
            tools,
            max_turns,
            definition.name if definition else None,
            attached.paths,
        )
        return await self._run(spawn, member, own)

    async def _verifier(
        self,
        attempt: int,
        member: MemberInfo,
        tools: tuple[ToolSpec, ...],
        summary: str,
        touched: Sequence[str],
    ) -> AgentResult:
        agent_id = verifier_id(self.id, attempt)
        files = unique_relative_paths(touched, str(self.env.cwd))
        own = verifier_segments(agent_id, self.env.prompts, self.brief, self.check, summary, files)
        spawn = _Spawn(
            agent_id, "verifier", VERIFIER_TYPE, attempt, tools, self.env.settings.delegation.max_turns
        )
        await self.env.agent_lifecycle().verifying(agent_id, self.brief, self.check, summary, files)
        return await self._run(spawn, member, own)

    async def _run(self, spawn: _Spawn, member: MemberInfo, own: Sequence[ContextSegment]) -> AgentResult:
        env, caller = self.env, self.caller
        depth = caller.depth + 1
        record = env.events.record(
            ev.AgentSpawn,
            agent=spawn.agent_id,
            parent=caller.agent_id,
            kind=spawn.kind,
            call=self.call.id,
            definition=spawn.definition,
            member=member.name,
            model=member.model,
            brief=self.brief,
            check=self.check,
            tools=[tool.name for tool in spawn.tools],
            depth=depth,
            attempt=spawn.attempt,
            max_turns=spawn.max_turns,
        )
        lifecycle = env.agent_lifecycle()
        try:
            await lifecycle.spawned(record)
            hook_context = await lifecycle.starting(spawn.agent_id, spawn.agent_type)
        except HookStopped as stopped:
            # continue: false before the agent ran: it ends unrun, and its caller ends killed.
            env.events.record(ev.AgentEnd, agent=spawn.agent_id, outcome="killed", reason=stopped.reason)
            raise
        if hook_context:
            own = [*own, hook_context_segment(f"{spawn.agent_id}.hook", hook_context)]
        try:
            counts = await open_context(env.pool, env.events, caller, member, spawn.agent_id, own)
        except PoolError as exc:
            env.events.record(ev.AgentEnd, agent=spawn.agent_id, outcome="failed", reason=str(exc))
            return AgentResult(outcome="failed", reason=str(exc))
        agent = AgentSpec(
            agent_id=spawn.agent_id,
            member=member.name,
            context_id=counts.context,
            window=member.n_ctx,
            tools=spawn.tools,
            max_turns=spawn.max_turns,
            verifier=spawn.kind == "verifier",
            json_constraint="json" in member.constraints,
            kind=spawn.kind,
            depth=depth,
            agent_type=spawn.agent_type,
            shared_prefix=len(caller.prefix),
            makes_changes=spawn.kind != "verifier" and any(tool.name == "write" for tool in spawn.tools),
            seen_files=spawn.seen_files,
        )
        try:
            return await run_agent(agent, env)
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(PoolError):
                await env.pool.contexts.drop(counts.context)


@dataclass(frozen=True)
class _Spawn:
    agent_id: str
    kind: ev.AgentKind
    agent_type: str
    attempt: int
    tools: tuple[ToolSpec, ...]
    max_turns: int
    definition: str | None = None
    seen_files: tuple[str, ...] = ()


def _failure_reason(verifier: AgentResult) -> str:
    """Why a verifier did not pass the work: its verdict's reason, a pass on nothing inspected,
    or how it ended without a verdict."""
    if verifier.outcome == "done" and verifier.verdict == "fail":
        return verifier.final or "the verifier gave no reason"
    if verifier.outcome == "done" and verifier.verdict == "pass":
        return UNINSPECTED_PASS
    ended = f"{verifier.outcome}: {verifier.reason}" if verifier.reason else verifier.outcome
    return f"the verifier ended without a verdict ({ended})"

"""Delegation: an ``agent`` call runs a piece — an implementer, a verifier, retries.

``Delegation`` is the request's :class:`aerix.app.ports.Delegator`: the agent calls of one
turn run after the turn's other calls, concurrently, at most ``delegation.parallel`` at a time,
and their results come back in call order. Each call is a :class:`piece.Piece`, run between
its PreToolUse and PostToolUse hooks (on the input they leave it) once its slot is free. Every agent of
the request — the root and every piece's agents — shares one ``Delegation``, so a piece's
implementer may delegate in turn until ``delegation.depth``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from aerix.app.agent.env import AgentEnvironment
from aerix.app.delegation.members import MemberPicker
from aerix.app.ports.agents import Caller, ToolHooks
from aerix.app.ports.project import AgentDefinitionSource
from aerix.domain.pieces import PieceResult
from aerix.domain.turns import ToolCall

__all__ = ["Delegation", "delegating"]


@dataclass
class Delegation:
    """Runs the ``agent`` calls of every agent of one request."""

    definitions: AgentDefinitionSource
    members: MemberPicker
    #: The request's environment, which every piece's agents run in (set by ``delegating``).
    env: AgentEnvironment | None = None

    @property
    def definition_names(self) -> tuple[str, ...]:
        return self.definitions.names

    async def run_calls(
        self, caller: Caller, calls: Sequence[ToolCall], hooks: ToolHooks | None = None
    ) -> list[str]:
        env = self.env
        if env is None:
            raise RuntimeError("Delegation.run_calls before delegating() attached it to an environment")
        # A piece's modules load at the first agent call: a request that delegates nothing
        # (most answers) makes none of their classes.
        from aerix.app.delegation.piece import Piece

        results = [""] * len(calls)
        limiter = anyio.CapacityLimiter(env.settings.delegation.parallel)

        async def run(index: int, call: ToolCall, members: MemberPicker, env: AgentEnvironment) -> None:
            async with limiter:
                if env.cancel.is_set():
                    results[index] = PieceResult("cancelled before it started", (), (), "killed").text()
                    return

                async def start(args: dict[str, Any]) -> str:
                    piece = Piece(env, self.definitions, members, caller, replace(call, input=args))
                    return await piece.run()

                results[index] = await (hooks(call, start) if hooks is not None else start(dict(call.input)))

        try:
            async with anyio.create_task_group() as tasks:
                for index, call in enumerate(calls):
                    tasks.start_soon(run, index, call, self.members, env)
        except BaseExceptionGroup as group:
            # One piece's unexpected error (the others were cancelled and ended killed) is raised
            # as itself, so the caller's loop reports it like any error of its own.
            raise group.exceptions[0] from group
        return results


def delegating(env: AgentEnvironment, definitions: AgentDefinitionSource) -> AgentEnvironment:
    """``env`` with a ``Delegation`` of its own: the environment of a request's root agent."""
    delegation = Delegation(definitions, MemberPicker(env.pool))
    attached = replace(env, delegator=delegation)
    delegation.env = attached
    return attached

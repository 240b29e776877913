"""The agents port: what the loop hands the delegation that runs its ``agent`` calls, and the
lifecycle an agent run reports to (where the agent hooks fire from)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from aerix.domain import events as ev
from aerix.domain.segments import ContextSegment
from aerix.domain.turns import ToolCall


@dataclass(frozen=True)
class Caller:
    """The agent whose turn made ``agent`` calls, as delegation needs to know it."""

    agent_id: str
    depth: int
    member: str
    context_id: str
    #: The leading system and instruction segments every agent of the request shares: an
    #: implementer forks these (``context.fork`` with ``keep``), a verifier starts with them.
    prefix: tuple[ContextSegment, ...]


class Delegator(Protocol):
    """Runs the ``agent`` calls of one turn (``aerix.app.delegation.Delegation``)."""

    async def run_calls(self, caller: Caller, calls: Sequence[ToolCall]) -> list[str]:
        """Each call's result text, in call order."""
        ...


class AgentLifecycle(Protocol):
    """Told of the moments hooks fire at (spec, "Delegation" and "The turn"): ``spawned`` with
    every ``agent.spawn`` (``AgentSpawn``), ``starting`` before each implementer and verifier
    runs (``SubagentStart``, with the agent type: the definition's name, ``implementer`` or
    ``verifier``), ``verifying`` with each verifier (``Verify``), and ``finishing`` at every
    agent's final (``Stop`` for the root, ``SubagentStop`` for the others). The hooks work
    implements it; ``aerix.app.agent.env.QuietLifecycle`` does nothing."""

    async def spawned(self, spawn: ev.AgentSpawn) -> None: ...

    async def starting(self, agent: str, agent_type: str) -> None: ...

    async def verifying(
        self, agent: str, brief: str, check: str, summary: str, files: Sequence[str]
    ) -> None: ...

    async def finishing(self, agent: str, kind: ev.AgentKind, agent_type: str | None, final: str) -> None: ...

"""The agents port: what the loop hands the delegation that runs its ``agent`` calls, and the
lifecycle an agent run reports to (where the agent hooks fire from)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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


#: Runs one call between its PreToolUse and PostToolUse hooks: given the call and what runs it
#: (on the input the hooks leave it), the result text (``Dispatcher.with_tool_hooks``).
ToolHooks = Callable[[ToolCall, Callable[[dict[str, Any]], Awaitable[str]]], Awaitable[str]]


class Delegator(Protocol):
    """Runs the ``agent`` calls of one turn (``aerix.app.delegation.Delegation``)."""

    @property
    def definition_names(self) -> tuple[str, ...]:
        """The installed agent definitions a call may name (its ``definition`` field's enum)."""
        ...

    async def run_calls(
        self, caller: Caller, calls: Sequence[ToolCall], hooks: ToolHooks | None = None
    ) -> list[str]:
        """Each call's result text, in call order; each piece runs inside ``hooks`` (its
        PreToolUse and PostToolUse) when given."""
        ...


class AgentLifecycle(Protocol):
    """Told of the moments hooks fire at (spec, "Delegation" and "The turn"); the hooks work
    implements it (``aerix.app.hooks.lifecycle.HookLifecycle``), and
    ``aerix.app.agent.env.QuietLifecycle`` does nothing. Each may raise ``HookStopped`` (a
    ``continue: false``), which ends the agent that fired the event: the caller, for the
    moments before a subagent runs.

    - ``spawned`` with every ``agent.spawn`` (``AgentSpawn``, subagents only).
    - ``starting`` before each implementer and verifier runs (``SubagentStart``, with the
      agent type: the definition's name, ``implementer`` or ``verifier``); returns the context
      the hooks add to the subagent's opening segments, or None.
    - ``verifying`` with each verifier (``Verify``).
    - ``finishing`` at every agent's final (``Stop`` for the root, ``SubagentStop`` for the
      others; ``active`` is ``stop_hook_active``); returns the message that continues the
      agent (a block's reason, the hooks' context), or None to let the final stand.
    """

    async def spawned(self, spawn: ev.AgentSpawn) -> None: ...

    async def starting(self, agent: str, agent_type: str) -> str | None: ...

    async def verifying(
        self, agent: str, brief: str, check: str, summary: str, files: Sequence[str]
    ) -> None: ...

    async def finishing(
        self, agent: str, kind: ev.AgentKind, agent_type: str | None, final: str, active: bool
    ) -> str | None: ...

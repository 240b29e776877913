"""The agent hooks: ``aerix.app.ports.AgentLifecycle`` on a request's :class:`Hooks` (spec,
"Delegation": SubagentStart, SubagentStop, AgentSpawn, Verify; "The turn": Stop).

- ``AgentSpawn`` fires with each subagent's ``agent.spawn`` (the root's has no caller to end).
- ``SubagentStart`` fires before each implementer and verifier; its context (JSON
  ``additionalContext`` or plain stdout) becomes a pinned segment of that subagent's opening.
- ``Verify`` fires when a verifier starts, with what it is to check.
- ``Stop`` (the root) and ``SubagentStop`` (the others) fire at a final; a block, or context,
  continues the agent with the reason and context as its next user message. How often that may
  happen is the loop's bound (STOP_HOOK_CONTINUES).

Each matcher compares the agent type (the definition's name, ``implementer`` or ``verifier``).
A ``continue: false`` raises ``HookStopped`` through :meth:`Hooks.fire`.
"""

from __future__ import annotations

from collections.abc import Sequence

from aerix.app.hooks.fire import Hooks
from aerix.domain import events as ev


class HookLifecycle:
    """``AgentLifecycle`` that fires the request's hooks."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    async def spawned(self, spawn: ev.AgentSpawn) -> None:
        if spawn.parent is None:
            return
        agent_type = spawn.definition or spawn.kind
        fields = {"parent": spawn.parent, "brief": spawn.brief or "", "check": spawn.check or ""}
        await self.hooks.fire(
            "AgentSpawn", fields, match=(agent_type,), agent=spawn.agent, agent_type=agent_type
        )

    async def starting(self, agent: str, agent_type: str) -> str | None:
        verdict = await self.hooks.fire(
            "SubagentStart", {}, match=(agent_type,), agent=agent, agent_type=agent_type
        )
        return verdict.context or None

    async def verifying(self, agent: str, brief: str, check: str, summary: str, files: Sequence[str]) -> None:
        fields = {"brief": brief, "check": check, "summary": summary, "files_touched": list(files)}
        await self.hooks.fire("Verify", fields, match=("verifier",), agent=agent, agent_type="verifier")

    async def finishing(
        self, agent: str, kind: ev.AgentKind, agent_type: str | None, final: str, active: bool
    ) -> str | None:
        subagent = kind != "root"
        event = "SubagentStop" if subagent else "Stop"
        fields = {"stop_hook_active": active, "last_assistant_message": final}
        match = (agent_type,) if subagent and agent_type else ()
        verdict = await self.hooks.fire(event, fields, match=match, agent=agent, agent_type=agent_type)
        if not verdict.blocked and not verdict.context:
            return None
        message = "\n\n".join(part for part in (verdict.reason, verdict.context) if part)
        return message or f"A {event} hook asks you to continue."

"""Startup: what a request needs before its first generation.

In the spec's order: resolve the directory, the settings, instruction files, enabled plugins,
skills, agent definitions and hooks (``ProjectSource``); then find or start the pool and bind the members
(``PoolStarter``, then :func:`bind_members`). Opening the session is the request's own step
(``aerix.app.request.run``, by ``aerix.app.request.opening``), because a resumed session is refused
before any pool is started.

Plugins and hooks are listed here (``startup_listing``, which the output shows); the hooks run
through ``aerix.app.hooks``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aerix.app.ports import MemberInfo, PoolPort, Project
from aerix.domain.settings import PoolSettings
from aerix.domain.tools import TOOL_NAMES
from aerix.errors import PoolError
from caldrix.protocol import DECISION_MEMBER, MAIN_MEMBER


@dataclass(frozen=True)
class BoundMembers:
    """The members this run uses: ``main`` runs every agent; ``decision`` routes when loaded."""

    main: MemberInfo
    decision: MemberInfo | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def router(self) -> MemberInfo:
        return self.decision or self.main


async def bind_members(pool: PoolPort, settings: PoolSettings) -> BoundMembers:
    """Make sure ``main`` is ready (loading it when the pool has none) and load a configured
    ``decision`` member. A decision member that cannot be loaded is a note: main routes."""
    members = {member.name: member for member in await pool.member_list()}
    notes: list[str] = []
    main = members.get(MAIN_MEMBER)
    if main is None:
        main = await pool.member_load(MAIN_MEMBER, settings.main, settings.main_flags.as_load_flags())
    if main.state != "ready":
        raise PoolError(
            f"the pool's main member ({main.model}) is {main.state}; stop the pool with "
            "'caldrix pool stop' and start again",
            code="member_not_ready",
        )
    if main.model != settings.main:
        notes.append(
            f"the running pool serves {main.model} as main, not {settings.main} (pool.main); "
            "'caldrix pool stop' lets the next request start the configured model"
        )
    decision = members.get(DECISION_MEMBER)
    if settings.decision is not None and decision is None:
        try:
            decision = await pool.member_load(
                DECISION_MEMBER, settings.decision, settings.decision_flags.as_load_flags()
            )
        except PoolError as exc:
            notes.append(f"decision member {settings.decision} not loaded ({exc}); main routes")
    if decision is not None and decision.state != "ready":
        decision = None
    return BoundMembers(main, decision, tuple(notes))


def startup_listing(project: Project, members: BoundMembers) -> dict[str, Any]:
    """What startup found and bound, as plain data for the output (stream-json's ``init``
    line names its keys as Claude Code's does: ``tools``, ``skills``, ``agents``, ``plugins``);
    ``tools`` leaves out those a permission rule or ``--tools`` takes away."""
    return {
        "tools": [name for name in TOOL_NAMES if name not in project.permissions.removed],
        "members": {
            MAIN_MEMBER: members.main.model,
            DECISION_MEMBER: members.decision.model if members.decision else None,
        },
        "settings_files": [str(path) for path in project.settings_files],
        "instruction_files": [str(path) for path in project.instruction_files],
        "skills": list(project.skills.names),
        "agents": list(project.agents.names),
        "plugins": [
            {
                "name": plugin.name,
                "path": str(plugin.path),
                "scope": plugin.scope,
                "enabled": plugin.enabled,
                "version": plugin.version,
                "skills": list(plugin.skills),
                "agents": list(plugin.agents),
                "commands": list(plugin.commands),
                "hooks": list(plugin.hooks),
            }
            for plugin in project.plugins
        ],
        "hooks": list(project.hooks),
    }

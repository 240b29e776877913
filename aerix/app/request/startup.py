"""Startup: what a request needs before its first generation.

In the spec's order: resolve the directory, the settings, instruction files, enabled plugins,
skills, agent definitions and hooks (``ProjectSource``); then find or start the pool and bind the members
(``aerix.app.pool.members.pool_session``). Opening the session is the request's own step
(``aerix.app.request.run``, by ``aerix.app.request.opening``), because a resumed session is refused
before any pool is started.

Plugins and hooks are listed here (``startup_listing``, which the output shows); the hooks run
through ``aerix.app.hooks``.
"""

from __future__ import annotations

from typing import Any

from aerix.app.pool.members import BoundMembers
from aerix.app.ports.project import Project
from aerix.domain.tools import TOOL_NAMES
from caldrix.protocol import DECISION_MEMBER, MAIN_MEMBER


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

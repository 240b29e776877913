"""``ProjectFiles``: the startup reads — settings, instruction files, plugins, skills, agent
definitions and hooks — gathered for one working directory."""

from __future__ import annotations

from pathlib import Path

from aerix.adapters.agent_definitions import load_agent_definitions
from aerix.adapters.instructions import load_instruction_files, project_root, render_instructions
from aerix.adapters.plugins import load_plugins
from aerix.adapters.project_key import project_key
from aerix.adapters.settings_files import load_settings
from aerix.adapters.skills import load_skills
from aerix.app.ports import Project
from aerix.domain.settings import hook_listing
from aerix.errors import UsageError


class ProjectFiles:
    """:class:`aerix.app.request.startup.ProjectSource` over the files on disk."""

    def load(self, cwd: Path) -> Project:
        if not cwd.is_dir():
            raise UsageError(f"{cwd} is not a directory; run aerix in your project or pass --cwd DIR")
        cwd = cwd.resolve()
        root = project_root(cwd)
        loaded = load_settings(root)
        instruction_files, instruction_notes = load_instruction_files(cwd)
        plugins = load_plugins(root, loaded.settings.enabled_plugins)
        skills = load_skills(root)
        agents = load_agent_definitions(root)
        settings = loaded.settings
        return Project(
            cwd=cwd,
            root=root,
            key=project_key(cwd),
            settings=settings,
            settings_files=loaded.files,
            instruction_files=tuple(file.path for file in instruction_files),
            instructions=render_instructions(instruction_files, cwd),
            skills=skills,
            agents=agents,
            hooks=hook_listing(settings.hooks, settings.disable_all_hooks),
            plugins=plugins.plugins,
            notes=(*instruction_notes, *plugins.notes, *skills.notes, *agents.notes),
        )

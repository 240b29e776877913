"""``ProjectFiles``: the startup reads — settings, instruction files, plugins, skills, agent
definitions and hooks — gathered for one working directory."""

from __future__ import annotations

from pathlib import Path

from aerix.adapters.project.agent_definitions import load_agent_definitions
from aerix.adapters.project.instructions import load_instruction_files, project_root, render_instructions
from aerix.adapters.project.plugins import load_plugins
from aerix.adapters.project.project_key import project_key
from aerix.adapters.project.settings_files import SettingsOverrides, load_settings
from aerix.adapters.project.skills import load_skills
from aerix.app.ports.project import Project
from aerix.domain.hook_contract import HookSource, unknown_events, unrunnable_handlers
from aerix.domain.permissions import Permissions
from aerix.domain.settings import hook_listing
from aerix.errors import NotADirectory


class ProjectFiles:
    """:class:`aerix.app.ports.project.ProjectSource` over the files on disk."""

    def __init__(self, overrides: SettingsOverrides | None = None) -> None:
        #: The command line's changes to the settings files (--settings, --setting-sources).
        self.overrides = overrides

    def load(self, cwd: Path) -> Project:
        if not cwd.is_dir():
            raise NotADirectory(cwd)
        cwd = cwd.resolve()
        root = project_root(cwd)
        loaded = load_settings(root, self.overrides, cwd)
        instruction_files, instruction_notes = load_instruction_files(cwd)
        plugins = load_plugins(root, loaded.settings.enabled_plugins)
        skills = load_skills(root, plugins.enabled)
        agents = load_agent_definitions(root, plugins.enabled)
        settings = loaded.settings
        hook_sources = (
            () if settings.disable_all_hooks else (HookSource(settings.hooks), *plugins.hook_sources)
        )
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
            hook_sources=hook_sources,
            notes=(
                *instruction_notes,
                *plugins.notes,
                *skills.notes,
                *agents.notes,
                *hook_notes(hook_sources),
                *permission_notes(loaded.permissions),
            ),
            permissions=loaded.permissions,
        )


def permission_notes(permissions: Permissions) -> list[str]:
    """Deny rules and ``--tools`` names that name no aerix tool: they take nothing away."""
    notes = [
        f"permissions.deny: {rule} names no aerix tool; it denies nothing" for rule in permissions.inert()
    ]
    for name in permissions.base.unknown:
        notes.append(f"--tools: {name} is not an aerix tool; left out")
    return notes


def hook_notes(sources: tuple[HookSource, ...]) -> list[str]:
    """What the configured hooks hold that aerix does not run, a startup line each."""
    notes = []
    for source in sources:
        where = f"plugin {source.plugin}" if source.plugin else "settings"
        for kind, count in unrunnable_handlers(source.hooks).items():
            handlers = "handler is" if count == 1 else "handlers are"
            notes.append(f"hooks ({where}): {count} '{kind}' {handlers} not run; aerix runs command hooks")
        for event in unknown_events(source.hooks):
            notes.append(f"hooks ({where}): {event} is not an event aerix fires; its handlers never run")
    return notes

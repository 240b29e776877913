"""Plugins: folders in Claude Code's plugin layout, found at startup; the enabled ones bring
their skills, commands, agents and hooks.

Where they are found (a later plugin of the same name replaces an earlier one):

1. Claude Code's installed plugins: ``$CLAUDE_CONFIG_DIR/plugins/installed_plugins.json``
   (``~/.claude``) names each ``name@marketplace`` with its ``installPath``. As in Claude Code,
   such a plugin is enabled only when a settings file's ``enabledPlugins`` says true.
2. user     ``$XDG_CONFIG_HOME/aerix/plugins/<folder>/``
3. project  ``<project>/.aerix/plugins/<folder>/``
   These two are enabled unless ``enabledPlugins`` maps the name (or ``name@marketplace``) to false.

A folder there is a plugin when it has a manifest, ``.claude-plugin/plugin.json``, or any of
the components Claude Code puts at a plugin's root: ``skills/<name>/SKILL.md``,
``agents/*.md``, ``commands/*.md``, ``hooks/hooks.json``. The manifest's ``name`` (else the
folder's), ``version`` and ``description`` are read; its other fields are ignored, as Claude
Code ignores unknown ones. A plugin whose manifest or ``hooks/hooks.json`` cannot be used is
broken: one note, and it is skipped; it never stops aerix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from aerix.adapters.paths import claude_projects_dir, config_home
from aerix.app.ports.project import PluginInfo
from aerix.domain.hook_contract import HookSource
from aerix.domain.settings import HooksSettings, hook_listing

MANIFEST = Path(".claude-plugin") / "plugin.json"
HOOKS_FILE = Path("hooks") / "hooks.json"
_HOOKS = TypeAdapter(HooksSettings)


class PluginProblem(Exception):
    """A plugin file that cannot be used; the message names the file."""


CLAUDE_SCOPE = "claude"
"""The scope of a plugin Claude Code installed."""


@dataclass(frozen=True)
class LoadedPlugins:
    plugins: tuple[PluginInfo, ...]
    notes: tuple[str, ...]
    #: The enabled plugins' hooks, each with its plugin's folder (CLAUDE_PLUGIN_ROOT).
    hook_sources: tuple[HookSource, ...] = ()

    @property
    def enabled(self) -> tuple[tuple[str, Path], ...]:
        """The enabled plugins' names and folders, for the skill and agent loaders."""
        return tuple((plugin.name, plugin.path) for plugin in self.plugins if plugin.enabled)


def plugin_folders(project_root: Path) -> tuple[tuple[Path, str], ...]:
    """The folders holding plugins, with their scope, lowest precedence first."""
    return ((config_home() / "plugins", "user"), (project_root / ".aerix" / "plugins", "project"))


def installed_plugins_file() -> Path:
    """Claude Code's record of the plugins it installed."""
    return claude_projects_dir().parent / "plugins" / "installed_plugins.json"


def load_plugins(project_root: Path, enabled: Mapping[str, bool]) -> LoadedPlugins:
    """Every plugin found, sorted by name."""
    found: dict[str, tuple[PluginInfo, HooksSettings]] = {}
    notes: list[str] = []
    candidates = _claude_installed(notes) + [
        (candidate, scope)
        for folder, scope in plugin_folders(project_root)
        if folder.is_dir()
        for candidate in sorted(path for path in folder.iterdir() if path.is_dir())
    ]
    for candidate, scope in candidates:
        if not _looks_like_plugin(candidate):
            continue
        try:
            plugin, hooks = _read_plugin(candidate, scope, enabled)
        except PluginProblem as exc:
            notes.append(f"plugin {candidate}: skipped ({exc})")
            continue
        found[plugin.name] = (plugin, hooks)
    plugins = tuple(found[name][0] for name in sorted(found))
    sources = tuple(
        HookSource(hooks, plugin.name, str(plugin.path))
        for plugin, hooks in (found[name] for name in sorted(found))
        if plugin.enabled and hooks
    )
    return LoadedPlugins(plugins, tuple(notes), sources)


def _claude_installed(notes: list[str]) -> list[tuple[Path, str]]:
    """The folders of the plugins Claude Code installed (``installed_plugins.json``: a map of
    ``name@marketplace`` to a list of installs, or to one install in its first format)."""
    path = installed_plugins_file()
    if not path.exists():
        return []
    try:
        data = _read_json(path)
    except PluginProblem as exc:
        notes.append(f"plugins: {path} left out ({exc})")
        return []
    entries = data.get("plugins") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return []
    folders = []
    for installs in entries.values():
        install = installs[0] if isinstance(installs, list) and installs else installs
        where = install.get("installPath") if isinstance(install, dict) else None
        if isinstance(where, str) and Path(where).is_dir():
            folders.append((Path(where), CLAUDE_SCOPE))
    return folders


def is_enabled(name: str, enabled: Mapping[str, bool], scope: str = "user") -> bool:
    """``enabledPlugins`` keys are a name or Claude Code's ``name@marketplace``. A plugin
    Claude Code installed is off unless enabled there, as in Claude Code; aerix's are on."""
    for key, value in enabled.items():
        if key == name or key.partition("@")[0] == name:
            return value
    return scope != CLAUDE_SCOPE


def _looks_like_plugin(folder: Path) -> bool:
    markers = (MANIFEST, HOOKS_FILE, Path("skills"), Path("agents"), Path("commands"))
    return any((folder / marker).exists() for marker in markers)


def _read_plugin(folder: Path, scope: str, enabled: Mapping[str, bool]) -> tuple[PluginInfo, HooksSettings]:
    manifest = _manifest(folder)
    name = manifest.get("name") or folder.name
    if not isinstance(name, str):
        raise PluginProblem(f"{MANIFEST}: 'name' must be a string")
    version = manifest.get("version")
    description = manifest.get("description")
    hooks = _hooks(folder)
    plugin = PluginInfo(
        name=name,
        path=folder,
        scope=scope,
        enabled=is_enabled(name, enabled, scope),
        version=str(version) if version is not None else None,
        description=description if isinstance(description, str) else "",
        skills=tuple(sorted(path.parent.name for path in folder.glob("skills/*/SKILL.md"))),
        agents=tuple(sorted(path.stem for path in folder.glob("agents/*.md"))),
        commands=tuple(sorted(path.stem for path in folder.glob("commands/*.md"))),
        hooks=hook_listing(hooks, disabled=False),
    )
    return plugin, hooks


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.exists():
        return {}
    data = _read_json(path)
    if not isinstance(data, dict):
        raise PluginProblem(f"{MANIFEST} must hold a JSON object")
    return data


def _hooks(folder: Path) -> HooksSettings:
    """The plugin's ``hooks/hooks.json`` (the settings' ``hooks`` shape plus an optional
    ``description``); one that cannot be used makes the plugin broken."""
    path = folder / HOOKS_FILE
    if not path.exists():
        return {}
    data = _read_json(path)
    raw = data.get("hooks", {}) if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        raise PluginProblem(f'{HOOKS_FILE} must hold {{"hooks": {{<event>: [...]}}}}')
    try:
        return _HOOKS.validate_python(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise PluginProblem(f"{HOOKS_FILE}: '{where}': {error['msg']}") from exc


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginProblem(f"{path.name} cannot be read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise PluginProblem(f"{path.name} is not valid JSON (line {exc.lineno}: {exc.msg})") from exc

"""Plugins: folders in Claude Code's plugin layout, found at startup and listed.

Where they are found (a project plugin replaces a user plugin of the same name):

1. user     ``$XDG_CONFIG_HOME/aerix/plugins/<folder>/``
2. project  ``<project>/.aerix/plugins/<folder>/``

A folder there is a plugin when it has a manifest, ``.claude-plugin/plugin.json``, or any of
the components Claude Code puts at a plugin's root: ``skills/<name>/SKILL.md``,
``agents/*.md``, ``commands/*.md``, ``hooks/hooks.json``. The manifest's ``name`` (else the
folder's), ``version`` and ``description`` are read; its other fields are ignored, as Claude
Code ignores unknown ones. A plugin is enabled unless the settings' ``enabledPlugins`` maps its
name (or ``name@marketplace``) to false.

This is discovery only: what a plugin's skills, agents, commands and hooks do is later work,
so they are listed, not loaded. A plugin whose manifest or ``hooks/hooks.json`` cannot be used
is skipped, or listed without its hooks, with a note; it never stops aerix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from aerix.adapters.paths import config_home
from aerix.app.ports import PluginInfo
from aerix.domain.settings import HooksSettings, hook_listing

MANIFEST = Path(".claude-plugin") / "plugin.json"
HOOKS_FILE = Path("hooks") / "hooks.json"
_HOOKS = TypeAdapter(HooksSettings)


class PluginProblem(Exception):
    """A plugin file that cannot be used; the message names the file."""


@dataclass(frozen=True)
class LoadedPlugins:
    plugins: tuple[PluginInfo, ...]
    notes: tuple[str, ...]


def plugin_folders(project_root: Path) -> tuple[tuple[Path, str], ...]:
    """The folders holding plugins, with their scope, lowest precedence first."""
    return ((config_home() / "plugins", "user"), (project_root / ".aerix" / "plugins", "project"))


def load_plugins(project_root: Path, enabled: Mapping[str, bool]) -> LoadedPlugins:
    """Every plugin in the plugins folders, sorted by name."""
    found: dict[str, PluginInfo] = {}
    notes: list[str] = []
    for folder, scope in plugin_folders(project_root):
        if not folder.is_dir():
            continue
        for candidate in sorted(path for path in folder.iterdir() if path.is_dir()):
            if not _looks_like_plugin(candidate):
                continue
            try:
                plugin, problems = _read_plugin(candidate, scope, enabled)
            except PluginProblem as exc:
                notes.append(f"plugin {candidate}: skipped ({exc})")
                continue
            notes += [f"plugin {plugin.name}: {problem}" for problem in problems]
            found[plugin.name] = plugin
    return LoadedPlugins(tuple(found[name] for name in sorted(found)), tuple(notes))


def is_enabled(name: str, enabled: Mapping[str, bool]) -> bool:
    """``enabledPlugins`` keys are a name or Claude Code's ``name@marketplace``."""
    for key, value in enabled.items():
        if key == name or key.partition("@")[0] == name:
            return value
    return True


def _looks_like_plugin(folder: Path) -> bool:
    markers = (MANIFEST, HOOKS_FILE, Path("skills"), Path("agents"), Path("commands"))
    return any((folder / marker).exists() for marker in markers)


def _read_plugin(folder: Path, scope: str, enabled: Mapping[str, bool]) -> tuple[PluginInfo, list[str]]:
    manifest = _manifest(folder)
    name = manifest.get("name") or folder.name
    if not isinstance(name, str):
        raise PluginProblem(f"{MANIFEST}: 'name' must be a string")
    version = manifest.get("version")
    description = manifest.get("description")
    hooks, problems = _hooks(folder)
    plugin = PluginInfo(
        name=name,
        path=folder,
        scope=scope,
        enabled=is_enabled(name, enabled),
        version=str(version) if version is not None else None,
        description=description if isinstance(description, str) else "",
        skills=tuple(sorted(path.parent.name for path in folder.glob("skills/*/SKILL.md"))),
        agents=tuple(sorted(path.stem for path in folder.glob("agents/*.md"))),
        commands=tuple(sorted(path.stem for path in folder.glob("commands/*.md"))),
        hooks=hooks,
    )
    return plugin, problems


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.exists():
        return {}
    data = _read_json(path)
    if not isinstance(data, dict):
        raise PluginProblem(f"{MANIFEST} must hold a JSON object")
    return data


def _hooks(folder: Path) -> tuple[tuple[str, ...], list[str]]:
    """The plugin's hook events with handler counts; a bad hooks.json is a note."""
    path = folder / HOOKS_FILE
    if not path.exists():
        return (), []
    try:
        data = _read_json(path)
        raw = data.get("hooks", {}) if isinstance(data, dict) else None
        if not isinstance(raw, dict):
            raise PluginProblem(f'{HOOKS_FILE} must hold {{"hooks": {{<event>: [...]}}}}')
        hooks = _HOOKS.validate_python(raw)
    except PluginProblem as exc:
        return (), [f"hooks left out ({exc})"]
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return (), [f"hooks left out ({HOOKS_FILE}: '{where}': {error['msg']})"]
    return hook_listing(hooks, disabled=False), []


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginProblem(f"{path.name} cannot be read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise PluginProblem(f"{path.name} is not valid JSON (line {exc.lineno}: {exc.msg})") from exc

"""Read the settings files and merge them into one ``Settings``.

Files, later ones win (each is optional):

1. user      ``$XDG_CONFIG_HOME/aerix/settings.json``
2. project   ``<project>/.aerix/settings.json``
3. local     ``<project>/.aerix/settings.local.json``

Claude Code's own files are read for their ``hooks``, ``disableAllHooks``, ``enabledPlugins`` and
``permissions`` only: ``~/.claude/settings.json`` (honouring ``CLAUDE_CONFIG_DIR``),
``<project>/.claude/settings.json`` and ``<project>/.claude/settings.local.json``. Hooks merge
rather than override, as in Claude Code: every file's handlers run, and a handler defined
identically in several files runs once. ``permissions.deny`` (and ``allow``, ``ask``) merge too:
every file's rules hold, each remembered with the file it came from.

A key may be written nested (``{"pool": {"main": "x"}}``) or dotted (``{"pool.main": "x"}``).
A bad file is one ``SettingsError`` line naming the file and the key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from aerix.adapters.paths import claude_projects_dir, config_home
from aerix.domain.permission_rules import RuleError, split_rules
from aerix.domain.permissions import (
    DISALLOWED_FLAG,
    NO_RESTRICTIONS,
    BaseTools,
    DenyRule,
    Permissions,
    parse_base_tools,
    rules_from,
)
from aerix.domain.settings import Settings
from aerix.errors import SettingsError

_CLAUDE_KEYS = ("hooks", "disableAllHooks", "enabledPlugins", "permissions")
#: The lists of ``permissions`` that every file adds to rather than replaces.
_PERMISSION_LISTS = ("allow", "deny", "ask")


@dataclass(frozen=True)
class SettingsFile:
    """One settings file aerix looks for."""

    path: Path
    scope: str  # user, project, local
    claude: bool  # Claude Code's file: only hooks and enabledPlugins are read from it


@dataclass(frozen=True)
class LoadedSettings:
    """The merged settings and the files they came from (for the startup block)."""

    settings: Settings
    files: tuple[Path, ...]
    #: The deny rules (each with its file or flag) and ``--tools``, for every agent.
    permissions: Permissions = NO_RESTRICTIONS


def claude_home() -> Path:
    """Claude Code's user folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return claude_projects_dir().parent


def settings_files(project_root: Path) -> tuple[SettingsFile, ...]:
    """Every settings file, lowest precedence first."""
    return (
        SettingsFile(claude_home() / "settings.json", "user", claude=True),
        SettingsFile(config_home() / "settings.json", "user", claude=False),
        SettingsFile(project_root / ".claude" / "settings.json", "project", claude=True),
        SettingsFile(project_root / ".aerix" / "settings.json", "project", claude=False),
        SettingsFile(project_root / ".claude" / "settings.local.json", "local", claude=True),
        SettingsFile(project_root / ".aerix" / "settings.local.json", "local", claude=False),
    )


#: The scopes of the settings files (Claude Code's ``--setting-sources`` names them the same).
SCOPES: Final = ("user", "project", "local")


@dataclass(frozen=True)
class SettingsOverrides:
    """What the command line changes about the settings (Claude Code's flags): ``sources``,
    the scopes read (``--setting-sources``; None: all); ``extra``, one more file or JSON text
    above the local files (``--settings``), read like Claude Code's files for Claude's keys
    and like aerix's for aerix's; ``disallowed``, the rules of ``--disallowedTools`` (added to
    every file's ``permissions.deny``); ``tools``, ``--tools`` (the base tool set; None: all)."""

    sources: frozenset[str] | None = None
    extra: str | None = None
    disallowed: tuple[str, ...] = ()
    tools: str | None = None


def parse_disallowed(values: list[str] | None) -> tuple[str, ...]:
    """``--disallowedTools`` (repeatable; rules split on commas and spaces outside
    parentheses); raises ``SettingsError`` naming a rule it cannot read."""
    rules = tuple(rule for value in values or () for rule in split_rules(value))
    try:
        rules_from(rules, DISALLOWED_FLAG)
    except RuleError as exc:
        raise SettingsError(f"{DISALLOWED_FLAG}: {exc}") from None
    return rules


def parse_sources(text: str) -> frozenset[str]:
    """``--setting-sources user,project``; raises ``SettingsError`` naming a scope it lacks."""
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    unknown = sorted(names - set(SCOPES))
    if unknown:
        raise SettingsError(
            f"--setting-sources: {', '.join(unknown)} is not a settings source; use {', '.join(SCOPES)}"
        )
    return names


def load_settings(
    project_root: Path, overrides: SettingsOverrides | None = None, cwd: Path | None = None
) -> LoadedSettings:
    """Read and merge every settings file that exists (those of ``overrides.sources``, then
    ``overrides.extra``); raises ``SettingsError`` on a bad one."""
    overrides = overrides or SettingsOverrides()
    merged: dict[str, Any] = {}
    read: list[Path] = []
    deny: list[DenyRule] = []
    for source in settings_files(project_root):
        if overrides.sources is not None and source.scope not in overrides.sources:
            continue
        data = _read_json_object(source.path)
        if data is None:
            continue
        if source.claude:
            data = {key: data[key] for key in _CLAUDE_KEYS if key in data}
        candidate = merge_settings(merged, expand_dotted_keys(data))
        _validate(candidate, source.path)  # blames the file that made the merge invalid
        merged = candidate
        read.append(source.path)
        deny += _deny_rules(data, str(source.path))
    if overrides.extra is not None:
        path, data = _extra_settings(overrides.extra, cwd or project_root)
        candidate = merge_settings(merged, expand_dotted_keys(data))
        _validate(candidate, path)
        merged = candidate
        read.append(path)
        deny += _deny_rules(data, str(path))
    deny += rules_from(overrides.disallowed, DISALLOWED_FLAG)
    base = parse_base_tools(overrides.tools) if overrides.tools is not None else BaseTools()
    permissions = Permissions(_first_of_each(deny), base, str(project_root), str(Path.home()))
    return LoadedSettings(_validate(merged, None), tuple(read), permissions)


def _deny_rules(data: Mapping[str, Any], origin: str) -> tuple[DenyRule, ...]:
    """One file's ``permissions.deny`` (already validated), each rule with the file's path."""
    section = expand_dotted_keys(data).get("permissions")
    rules = section.get("deny", ()) if isinstance(section, dict) else ()
    return rules_from(rules, origin)


def _first_of_each(rules: list[DenyRule]) -> tuple[DenyRule, ...]:
    """Each rule once, with the first (lowest) file that has it."""
    seen: dict[str, DenyRule] = {}
    for rule in rules:
        seen.setdefault(rule.rule.text, rule)
    return tuple(seen.values())


def _extra_settings(value: str, cwd: Path) -> tuple[Path, dict[str, Any]]:
    """``--settings``: JSON text (starting with ``{``) or a file, relative to ``cwd``. Claude
    Code's keys are read as from its files; aerix's own keys too; any other key is left out, as
    Claude Code's other settings are left out of its files."""
    text = value.strip()
    if text.startswith("{"):
        path = Path("--settings")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SettingsError(f"--settings: not valid JSON ({exc.msg}, column {exc.colno})") from exc
        if not isinstance(data, dict):
            raise SettingsError('--settings: must hold a JSON object such as {"disableAllHooks": true}')
    else:
        path = cwd / text
        found = _read_json_object(path)
        if found is None:
            raise SettingsError(f"--settings: {path} does not exist; give a settings file or JSON text")
        data = found
    own = {name.split(".", 1)[0] for name in Settings.model_fields}
    kept = {key: item for key, item in data.items() if key in _CLAUDE_KEYS or key.split(".", 1)[0] in own}
    return path, kept


def parse_settings(data: Mapping[str, Any], origin: str = "settings") -> Settings:
    """Validate one settings mapping (as a file would hold it); errors name ``origin``."""
    return _validate(expand_dotted_keys(data), Path(origin))


def _read_json_object(path: Path) -> dict[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"settings: {path}: cannot be read ({exc})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"settings: {path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    if not isinstance(data, dict):
        raise SettingsError(f'settings: {path}: must hold a JSON object such as {{"pool": {{...}}}}')
    return data


def expand_dotted_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """``{"pool.main": x}`` -> ``{"pool": {"main": x}}``, at every level except inside ``hooks``."""
    expanded: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and key != "hooks":
            value = expand_dotted_keys(value)
        parts = key.split(".") if key != "$schema" else [key]
        target = expanded
        for part in parts[:-1]:
            existing = target.get(part)
            if not isinstance(existing, dict):
                existing = target[part] = {}
            target = existing
        last = parts[-1]
        if isinstance(value, dict) and isinstance(target.get(last), dict):
            target[last] = merge_settings(target[last], value)
        else:
            target[last] = value
    return expanded


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``: objects merge key by key, anything else is replaced, except
    ``hooks``, whose matcher groups from both sides are kept (identical handlers once)."""
    merged = dict(base)
    for key, value in override.items():
        if key == "hooks" and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_hooks(merged[key], value)
        elif key == "permissions" and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_permissions(merged[key], value)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_settings(merged[key], value)
        else:
            merged[key] = value
    return merged


def _merge_permissions(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Both sides' rules in each rule list (each rule once); other keys as any object's."""
    merged = merge_settings(base, {k: v for k, v in override.items() if k not in _PERMISSION_LISTS})
    for name in _PERMISSION_LISTS:
        before, after = base.get(name), override.get(name)
        if isinstance(before, list) and isinstance(after, list):
            merged[name] = [*before, *(rule for rule in after if rule not in before)]
        elif name in override:
            merged[name] = after  # validation reports a bad shape against this file
    return merged


def _merge_hooks(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {event: list(groups) for event, groups in base.items()}
    for event, groups in override.items():
        if not isinstance(groups, list):
            merged[event] = groups  # let validation report the bad shape against this file
            continue
        known = merged.setdefault(event, [])
        if not isinstance(known, list):
            merged[event] = known = []
        for group in groups:
            deduped = _without_known_handlers(group, known)
            if deduped is not None:
                known.append(deduped)
    return merged


def _without_known_handlers(group: Any, known_groups: list[Any]) -> Any:
    """The group without the handlers an earlier group with the same matcher already has;
    None when nothing new is left."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return group
    seen = [
        handler
        for earlier in known_groups
        if isinstance(earlier, dict) and earlier.get("matcher", "") == group.get("matcher", "")
        for handler in earlier.get("hooks", [])
    ]
    fresh = [handler for handler in group["hooks"] if handler not in seen]
    if not fresh:
        return None
    return {**group, "hooks": fresh}


def _validate(data: Mapping[str, Any], path: Path | None) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        where = f"{path}" if path is not None else "the merged settings"
        raise SettingsError(f"settings: {where}: {_first_problem(exc)}") from None


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    key = ".".join(str(part) for part in _loc_without_internals(error["loc"]))
    if error["type"] == "extra_forbidden":
        return f"unknown key '{key}'; see docs/configuration.md for the keys"
    message = str(error["msg"]).removeprefix("Value error, ")
    if not key:
        return message
    return f"'{key}': {message} (got {json.dumps(error.get('input'), default=str)[:80]})"


def _loc_without_internals(loc: tuple[int | str, ...]) -> Iterator[int | str]:
    # pydantic adds the model-validator name ("function-after[...]") to some locations.
    return (part for part in loc if not (isinstance(part, str) and "[" in part))

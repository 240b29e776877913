"""Agent definitions: ``*.md`` files whose front matter names an agent and whose body is
appended to its implementer's context.

Where they are found, lowest precedence first (a later definition of the same name wins):
enabled plugins' ``agents/*.md`` (named ``<plugin>:<name>``, as Claude Code namespaces them),
``~/.claude/agents``, ``$XDG_CONFIG_HOME/aerix/agents``, ``<project>/.claude/agents``,
``<project>/.aerix/agents``. Front matter: ``name`` (else the file's stem), ``description``,
``tools`` (a comma list or a YAML list, aerix or Claude Code names; omitted = every tool),
``model`` (a pool member or a model reference; ``inherit`` or omitted = the caller's),
``maxTurns``. Claude Code's other fields (``color``, ``permissionMode``, ``skills`` …) are
accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from aerix.adapters.paths import claude_projects_dir, config_home
from aerix.adapters.project.frontmatter import FrontMatterError, split_front_matter
from aerix.app.ports.project import AgentDefinition
from aerix.domain.claude_tools import aerix_tool_name
from aerix.domain.listing import fit_listing


class AgentCatalog:
    """The agent definitions one run knows, by name."""

    def __init__(self, definitions: Iterable[AgentDefinition], notes: Iterable[str] = ()) -> None:
        self._definitions = {d.name: d for d in sorted(definitions, key=lambda d: d.name)}
        self.notes = tuple(notes)

    def __len__(self) -> int:
        return len(self._definitions)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._definitions)

    def get(self, name: str) -> AgentDefinition | None:
        return self._definitions.get(name)

    def render_listing(self, max_chars: int) -> str:
        """The agent definitions section of the system segment, within ``max_chars``
        characters (the header included); those that do not fit are counted on a last line."""
        header = ["# Agent definitions", "Name one as the agent call's definition when it fits the piece:"]
        entries = [
            f"- {d.name}: {d.description}" if d.description else f"- {d.name}"
            for d in self._definitions.values()
        ]
        return fit_listing(header, entries, lambda left: f"… and {left} more", max_chars)

    def body(self, name: str) -> str | None:
        definition = self.get(name)
        return definition.body if definition is not None else None

    def with_bodies(self, bodies: Mapping[str, str]) -> AgentCatalog:
        """This catalog with the named definitions' bodies replaced (a profile's overlays)."""
        definitions = [replace(d, body=bodies.get(d.name, d.body)) for d in self._definitions.values()]
        return AgentCatalog(definitions, self.notes)


def agent_folders(project_root: Path) -> tuple[Path, ...]:
    return (
        claude_projects_dir().parent / "agents",
        config_home() / "agents",
        project_root / ".claude" / "agents",
        project_root / ".aerix" / "agents",
    )


def load_agent_definitions(project_root: Path, plugins: Sequence[tuple[str, Path]] = ()) -> AgentCatalog:
    """Every definition; a file that cannot be used is skipped with a note. ``plugins``: the
    enabled plugins' names and folders."""
    definitions: dict[str, AgentDefinition] = {}
    notes: list[str] = []
    folders: list[tuple[Path, str | None]] = [(folder / "agents", name) for name, folder in plugins]
    folders += [(folder, None) for folder in agent_folders(project_root)]
    for folder, plugin in folders:
        if not folder.is_dir():
            continue
        for file in sorted(folder.rglob("*.md")):
            try:
                definition, problems = _read_definition(file)
            except (OSError, UnicodeDecodeError, FrontMatterError, ValueError) as exc:
                notes.append(f"agent {file}: skipped ({exc})")
                continue
            if plugin is not None:
                definition = replace(definition, name=f"{plugin}:{definition.name}")
            notes += [f"agent {file}: {problem}" for problem in problems]
            definitions[definition.name] = definition
    return AgentCatalog(definitions.values(), notes)


def _read_definition(file: Path) -> tuple[AgentDefinition, list[str]]:
    fields, body = split_front_matter(file.read_text(encoding="utf-8"))
    tools, problems = _tools(fields.get("tools"))
    max_turns = fields.get("maxTurns")
    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise ValueError(f"maxTurns must be a positive whole number, not {max_turns!r}")
    model = fields.get("model")
    definition = AgentDefinition(
        name=str(fields.get("name") or file.stem),
        description=str(fields.get("description") or ""),
        tools=tools,
        model=None if model in (None, "inherit") else str(model),
        max_turns=max_turns,
        body=body,
        path=file,
    )
    return definition, problems


def _tools(raw: Any) -> tuple[tuple[str, ...] | None, list[str]]:
    if raw is None:
        return None, []
    names = raw if isinstance(raw, list) else str(raw).split(",")
    tools: list[str] = []
    problems: list[str] = []
    for name in (str(item).strip() for item in names):
        if not name:
            continue
        tool = aerix_tool_name(name)
        if tool is None:
            problems.append(f"tool {name!r} is unknown to aerix and was left out")
        elif tool not in tools:
            tools.append(tool)
    return tuple(tools), problems

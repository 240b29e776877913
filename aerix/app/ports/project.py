"""What startup reads from disk for one run: the project, its skills, agent definitions and
plugins, and the prompt texts. ``aerix.adapters.project.project.ProjectFiles`` reads them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aerix.domain.hook_contract import HookSource
from aerix.domain.permissions import NO_RESTRICTIONS, Permissions
from aerix.domain.settings import Settings


class PromptSource(Protocol):
    """The prompt texts by name (``system``, ``routing``, ``planner``, ``brief``, ``verifier``,
    ``retry``, ``compacted``): the release's embedded ones, or a profile commit's in front of them."""

    def get(self, name: str) -> str: ...


class SkillSource(Protocol):
    """The skills one run knows (``aerix.adapters.project.skills.SkillCatalog`` is one)."""

    @property
    def names(self) -> tuple[str, ...]: ...

    def render_listing(self, max_chars: int) -> str: ...

    def expand_prompt(self, prompt: str) -> str: ...

    def run_tool(self, name: str | None, args: str = "", list_all: bool = False) -> str:
        """The ``skill`` tool: a skill's text (``$ARGUMENTS`` replaced), or the listing."""
        ...

    def body(self, name: str) -> str | None:
        """The skill's own text (what a profile overlay replaces), or None when there is none."""
        ...

    def with_bodies(self, bodies: Mapping[str, str]) -> SkillSource:
        """The same skills, with the named ones' bodies replaced by a profile's overlays."""
        ...


@dataclass(frozen=True)
class AgentDefinition:
    """An agent definition (``.aerix/agents/*.md``, ``.claude/agents/*.md`` …): its body is
    appended to its implementer's context."""

    name: str
    description: str
    tools: tuple[str, ...] | None  # None: every tool
    model: str | None  # None: the calling agent's member; a member name or a model reference
    max_turns: int | None  # None: delegation.max_turns
    body: str
    path: Path


class AgentDefinitionSource(Protocol):
    """The agent definitions one run knows (``aerix.adapters.project.agent_definitions.AgentCatalog``)."""

    @property
    def names(self) -> tuple[str, ...]: ...

    def get(self, name: str) -> AgentDefinition | None: ...

    def render_listing(self, max_chars: int) -> str:
        """The system segment's list of the definitions, within ``max_chars`` characters."""
        ...

    def body(self, name: str) -> str | None: ...

    def with_bodies(self, bodies: Mapping[str, str]) -> AgentDefinitionSource:
        """The same definitions, with the named ones' bodies replaced by a profile's overlays."""
        ...


@dataclass(frozen=True)
class PluginInfo:
    """A plugin found at startup, with what it brings when enabled."""

    name: str
    path: Path
    scope: str  # "claude" (installed by Claude Code), "user" or "project"
    enabled: bool
    version: str | None = None
    description: str = ""
    skills: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()  # "PreToolUse (2)", as hook_listing gives them


@dataclass(frozen=True)
class Project:
    """Everything read from disk for one run in ``cwd``."""

    cwd: Path
    root: Path  # the repository root, else cwd: where project settings, skills and agents live
    key: str  # the project key: the folder its sessions live in
    settings: Settings
    settings_files: tuple[Path, ...]
    instruction_files: tuple[Path, ...]
    instructions: str  # the instructions segment's text ('' when there are none)
    skills: SkillSource
    agents: AgentDefinitionSource
    hooks: tuple[str, ...]  # "PreToolUse (2)": configured events and their handler counts
    plugins: tuple[PluginInfo, ...] = ()
    #: Where the hooks that run come from: the settings, then each enabled plugin (none when
    #: ``disableAllHooks`` is set).
    hook_sources: tuple[HookSource, ...] = ()
    notes: tuple[str, ...] = ()
    #: The deny rules and ``--tools`` every agent of the request is held to.
    permissions: Permissions = NO_RESTRICTIONS


class ProjectSource(Protocol):
    """Reads a project's settings and files (``aerix.adapters.project.project.ProjectFiles``)."""

    def load(self, cwd: Path) -> Project: ...

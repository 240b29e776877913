"""Skills: ``<name>/SKILL.md`` folders the model (or a ``/name args`` prompt line) loads.

Where they are found, lowest precedence first (a later skill of the same name wins):
Claude Code's commands, ``~/.claude/commands/**/*.md`` then ``<project>/.claude/commands/**/*.md``
(named after the file); ``~/.claude/skills`` (``$CLAUDE_CONFIG_DIR/skills``),
``$XDG_CONFIG_HOME/aerix/skills``, ``<project>/.claude/skills``, ``<project>/.aerix/skills``. A
skill's name is its folder's name (as in Claude Code); its front matter gives the
``description`` (else the body's first line). An enabled plugin's ``skills/<name>/SKILL.md`` and
``commands/*.md`` are named ``<plugin>:<name>``, as Claude Code namespaces them.

Loading a skill replaces ``$ARGUMENTS`` with the arguments, ``$ARGUMENTS[N]`` and ``$N`` with the
N-th argument (from 0; in a command, ``$1`` is the first, as Claude Code's commands count),
``${CLAUDE_SKILL_DIR}`` with the skill's folder and ``${CLAUDE_PLUGIN_ROOT}`` with its plugin's;
when the body has no ``$ARGUMENTS`` and arguments were given, ``ARGUMENTS: <args>`` is appended.

Agent definitions live in ``aerix.adapters.project.agent_definitions`` and are re-exported here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aerix.adapters.paths import claude_projects_dir, config_home
from aerix.adapters.project.agent_definitions import AgentCatalog, AgentDefinition, load_agent_definitions
from aerix.adapters.project.frontmatter import FrontMatterError, split_front_matter
from aerix.domain.listing import fit_listing

__all__ = [
    "AgentCatalog",
    "AgentDefinition",
    "Skill",
    "SkillCatalog",
    "load_agent_definitions",
    "load_skills",
    "skill_folders",
]

_INVOCATION = re.compile(r"^/([A-Za-z0-9][\w.:-]*)(?:\s+(.*))?$")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path
    #: The number ``$N`` gives the first argument: 0 in a skill, 1 in a Claude Code command.
    first_argument: int = 0
    plugin_root: Path | None = None

    def expand(self, args: str = "") -> str:
        """The skill's text with its arguments substituted."""
        words = _split_args(args)

        def nth(match: re.Match[str]) -> str:
            index = int(match.group(1)) - self.first_argument
            return words[index] if 0 <= index < len(words) else ""

        text = self.body.replace("${CLAUDE_SKILL_DIR}", str(self.folder))
        if self.plugin_root is not None:
            text = text.replace("${CLAUDE_PLUGIN_ROOT}", str(self.plugin_root))
        mentions_arguments = "$ARGUMENTS" in text
        text = re.sub(r"\$ARGUMENTS\[(\d+)\]", nth, text)
        text = text.replace("$ARGUMENTS", args)
        text = re.sub(r"\$(\d+)(?!\d)", nth, text)
        if args and not mentions_arguments and self.first_argument == 0:  # a command never did
            text = f"{text}\n\nARGUMENTS: {args}"
        return text


def _split_args(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError:  # an unbalanced quote: fall back to plain words
        return args.split()


def skill_folders(project_root: Path) -> tuple[Path, ...]:
    """The folders holding skills, lowest precedence first."""
    return (
        claude_projects_dir().parent / "skills",
        config_home() / "skills",
        project_root / ".claude" / "skills",
        project_root / ".aerix" / "skills",
    )


def command_folders(project_root: Path) -> tuple[Path, ...]:
    """Claude Code's command folders, lowest precedence first."""
    return (claude_projects_dir().parent / "commands", project_root / ".claude" / "commands")


def load_skills(project_root: Path, plugins: Sequence[tuple[str, Path]] = ()) -> SkillCatalog:
    """Every skill and command; unreadable ones become notes (warnings for the startup block).
    ``plugins``: the enabled plugins' names and folders."""
    skills: dict[str, Skill] = {}
    notes: list[str] = []

    def take(files: Iterable[Path], prefix: str = "", plugin_root: Path | None = None) -> None:
        for file in files:
            try:
                skill = _read_skill(file, prefix, plugin_root)
            except (OSError, UnicodeDecodeError, FrontMatterError) as exc:
                notes.append(f"{'command' if skill_is_command(file) else 'skill'} {file}: skipped ({exc})")
                continue
            skills[skill.name] = skill

    for name, root in plugins:
        take(sorted((root / "commands").rglob("*.md")), f"{name}:", root)
        take(sorted((root / "skills").glob("*/SKILL.md")), f"{name}:", root)
    for folder in command_folders(project_root):
        take(sorted(folder.rglob("*.md")))
    for folder in skill_folders(project_root):
        take(sorted(folder.glob("*/SKILL.md")))
    return SkillCatalog(skills.values(), notes)


def skill_is_command(file: Path) -> bool:
    return file.name != "SKILL.md"


def _read_skill(file: Path, prefix: str = "", plugin_root: Path | None = None) -> Skill:
    fields, body = split_front_matter(file.read_text(encoding="utf-8"))
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        description = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
    if skill_is_command(file):
        return Skill(prefix + file.stem, description.strip(), body, file.parent, 1, plugin_root)
    return Skill(prefix + file.parent.name, description.strip(), body, file.parent, 0, plugin_root)


class SkillCatalog:
    """The skills one run knows, by name."""

    def __init__(self, skills: Iterable[Skill], notes: Iterable[str] = ()) -> None:
        self._skills = {skill.name: skill for skill in sorted(skills, key=lambda skill: skill.name)}
        self.notes = tuple(notes)

    def __len__(self) -> int:
        return len(self._skills)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._skills)

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name.removeprefix("/"))

    def body(self, name: str) -> str | None:
        skill = self.get(name)
        return skill.body if skill is not None else None

    def with_bodies(self, bodies: Mapping[str, str]) -> SkillCatalog:
        """This catalog with the named skills' bodies replaced (a profile's overlays); a name it
        does not know is left out."""
        skills = [replace(skill, body=bodies.get(skill.name, skill.body)) for skill in self._skills.values()]
        return SkillCatalog(skills, self.notes)

    def render_listing(self, max_chars: int) -> str:
        """The skills section of the system segment, within ``max_chars`` characters (all of it,
        the header included). Skills that do not fit are counted on a last line."""
        header = ["# Skills", "Load one with the skill tool when it fits the task:"]
        entries = [f"- {skill.name}: {skill.description}" for skill in self._skills.values()]
        return fit_listing(
            header, entries, lambda left: f"… and {left} more (skill with list=true shows all)", max_chars
        )

    def run_tool(self, name: str | None, args: str = "", list_all: bool = False) -> str:
        """The skill tool: a skill's expanded text, or the full list."""
        if list_all or not name:
            if not self._skills:
                return "no skills are installed"
            return "\n".join(f"{skill.name}: {skill.description}" for skill in self._skills.values())
        skill = self.get(name)
        if skill is None:
            known = ", ".join(self._skills) or "none"
            return f"error: no skill named {name} (skills: {known})"
        return skill.expand(args or "")

    def expand_prompt(self, prompt: str) -> str:
        """A prompt whose first line is ``/name args`` for a known skill becomes that skill's
        text followed by the prompt's other lines; any other prompt is returned unchanged."""
        first, _, rest = prompt.partition("\n")
        match = _INVOCATION.match(first.strip())
        skill = self.get(match.group(1)) if match else None
        if match is None or skill is None:
            return prompt
        text = skill.expand((match.group(2) or "").strip())
        return f"{text}\n\n{rest}" if rest.strip() else text

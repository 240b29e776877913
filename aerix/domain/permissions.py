"""What a request's agents may not do: Claude Code's deny rules and ``--tools``, applied.

Two effects, as in Claude Code:

- a bare rule (``Bash``, ``Read``) and a tool outside ``--tools`` take the tool away from every
  agent (:meth:`Permissions.restrict`): its turn schema does not offer it (the system segment
  still lists every tool, so every context keeps sharing its prefix);
- a rule with a specifier (``Bash(rm:*)``, ``Read(./.env)``) is checked at each call
  (:meth:`Permissions.denial`): a call it matches does not run, and its result says which rule
  refused it and where the rule came from.

``permissions.allow`` and ``ask`` change nothing: ``aerix -p`` asks no permission.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aerix.domain.claude_tools import GENERAL_PURPOSE, aerix_tool_name, claude_tool_name
from aerix.domain.permission_rules import (
    PermissionRule,
    matches_domain,
    matches_name,
    parse_rule,
    split_rules,
)
from aerix.domain.shell_parts import bash_matches
from aerix.domain.tools import TOOL_NAMES, ToolSpec

#: Where rules given on the command line come from.
DISALLOWED_FLAG: Final = "--disallowedTools"
TOOLS_FLAG: Final = "--tools"


@dataclass(frozen=True)
class DenyRule:
    """A rule and where it came from (a settings file's path, or the flag)."""

    rule: PermissionRule
    origin: str


@dataclass(frozen=True)
class Denial:
    """Why a call does not run: the rule, and where it came from."""

    rule: str
    origin: str
    #: The tool, by Claude Code's name.
    tool: str

    def result_text(self) -> str:
        """The call's result, for the model to read."""
        if self.origin == TOOLS_FLAG:
            return (
                f"error: denied: {self.tool} is not among the tools {TOOLS_FLAG} allows "
                f"({self.rule or 'none'}); the call did not run"
            )
        return f"error: denied by the permission rule {self.rule} (from {self.origin}); the call did not run"


@dataclass(frozen=True)
class BaseTools:
    """``--tools``: the tools every agent starts from (None: all), and the names as given."""

    names: frozenset[str] | None = None
    given: str = "default"
    #: Names given that aerix has no tool for (a note says so).
    unknown: tuple[str, ...] = ()


def parse_base_tools(text: str) -> BaseTools:
    """``--tools``: ``""`` none, ``default`` every tool, else names (Claude Code's or aerix's)
    separated by commas or spaces."""
    if text.strip() == "default":
        return BaseTools()
    names: set[str] = set()
    unknown: list[str] = []
    for name in split_rules(text):
        tool = aerix_tool_name(name)
        if tool is None:
            unknown.append(name)
        else:
            names.add(tool)
    return BaseTools(frozenset(names), text.strip(), tuple(unknown))


def rules_from(texts: Iterable[str], origin: str) -> tuple[DenyRule, ...]:
    """Rules as written in one place; raises ``RuleError`` on one that cannot be read."""
    return tuple(DenyRule(parse_rule(text), origin) for text in texts)


@dataclass(frozen=True)
class Permissions:
    """A request's deny rules and base tool set, with the folders path patterns are read from."""

    deny: tuple[DenyRule, ...] = ()
    base: BaseTools = field(default_factory=BaseTools)
    root: str = "/"
    home: str = "/"

    @property
    def removed(self) -> frozenset[str]:
        """The tools no agent gets: those of bare rules, and those ``--tools`` leaves out."""
        gone = {tool for deny in self.deny if deny.rule.whole_tool for tool in deny.rule.tools}
        if self.base.names is not None:
            gone |= set(TOOL_NAMES) - self.base.names
        return frozenset(gone)

    def restrict(self, tools: Sequence[ToolSpec]) -> tuple[ToolSpec, ...]:
        """``tools`` without the removed ones."""
        removed = self.removed
        return tuple(tool for tool in tools if tool.name not in removed)

    def denial(self, tool: str, tool_input: Mapping[str, Any], cwd: str) -> Denial | None:
        """The rule that refuses this call (aerix's tool name and input), or None."""
        if self.base.names is not None and tool not in self.base.names:
            return Denial(self.base.given, TOOLS_FLAG, claude_tool_name(tool))
        for deny in self.deny:
            if tool in deny.rule.tools and self._matches(deny.rule, tool, tool_input, cwd):
                return Denial(deny.rule.text, deny.origin, claude_tool_name(tool))
        return None

    def _matches(self, rule: PermissionRule, tool: str, tool_input: Mapping[str, Any], cwd: str) -> bool:
        specifier = rule.specifier
        if specifier is None:
            return True
        if rule.path is not None:
            path = tool_input.get("path")
            if not isinstance(path, str) or not path:
                path = "." if tool in ("glob", "grep") else ""
            searched = tool in ("glob", "grep")
            return bool(path) and rule.path.matches(
                path, cwd=cwd, root=self.root, home=self.home, searched=searched
            )
        if tool == "bash":
            return bash_matches(specifier, str(tool_input.get("command", "")))
        if tool == "agent":
            return matches_name(specifier, str(tool_input.get("definition") or GENERAL_PURPOSE))
        if tool == "skill":
            return matches_name(specifier, str(tool_input.get("name") or ""))
        if tool == "web_fetch":
            return matches_domain(specifier, str(tool_input.get("url") or ""))
        return False

    def unsearchable(self, cwd: str) -> Callable[[str], bool] | None:
        """Which files a search from ``cwd`` must not look in (named as the search shows them,
        relative to ``cwd``): those a Read rule denies, since a search of a folder must not show
        what reading its files would not. None when no rule denies any."""
        rules = [deny.rule.path for deny in self.deny if "grep" in deny.rule.tools and deny.rule.path]
        if not rules:
            return None
        return lambda file: any(r.matches(file, cwd=cwd, root=self.root, home=self.home) for r in rules)

    def inert(self) -> list[str]:
        """Rules that name a tool aerix does not have (they deny nothing), for a startup note."""
        return [f"{deny.rule.text} ({deny.origin})" for deny in self.deny if deny.rule.tool is None]


NO_RESTRICTIONS: Final = Permissions()

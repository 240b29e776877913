"""Claude Code's permission rules (``permissions.deny``, ``--disallowedTools``), parsed.

A rule is ``Tool`` (every call of that tool) or ``Tool(specifier)`` (the calls the specifier
matches). ``Tool`` is Claude Code's name (``Bash``, ``Read``, ``Edit``, ``Write``, ``Glob``,
``Grep``, ``Agent`` or ``Task``, ``Skill``, ``WebFetch``, ``WebSearch``) or aerix's own
(``bash``, ``repo_map``…), through :func:`aerix.domain.claude_tools.aerix_tool_name`; a name aerix
has no tool for (``NotebookEdit``, ``mcp__github``) is kept and denies nothing, because a Claude
Code settings file may name tools aerix does not have. ``Tool(*)`` is ``Tool``.

What a specifier means depends on the tool:

- ``Bash``: ``cmd:*`` (Claude Code's legacy prefix form: ``cmd`` or ``cmd …``), a pattern with
  ``*`` wildcards (``git * main``; a single trailing `` *`` also matches the bare command, so
  ``ls *`` matches ``ls`` and ``ls -la`` but not ``lsof``), else the exact command. Compound
  commands are checked part by part (:mod:`aerix.domain.shell_parts`).
- ``Read`` (read, grep, glob), ``Edit`` (edit, write), ``Write``, ``Glob`` and ``Grep``: a
  gitignore-style path pattern (:mod:`aerix.domain.permission_paths`).
- ``Agent`` / ``Task``: an agent definition's name (``general-purpose`` is a call naming none).
- ``Skill``: a skill's name, or ``prefix:*``.
- ``WebFetch``: ``domain:example.com`` (``domain:*.example.com`` for its subdomains).

Inside the parentheses ``\\(``, ``\\)`` and ``\\\\`` stand for ``(``, ``)`` and ``\\``, as in
Claude Code's rule grammar. A rule that cannot be read raises :class:`RuleError`, whose text says
what is wrong and what to write instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from aerix.domain.claude_tools import aerix_tool_name
from aerix.domain.permission_paths import PathPattern, parse_path_pattern

#: The tools each rule's tool name covers: a Read rule also guards grep and glob (they read
#: what is under their path), an Edit rule also write.
COVERED_TOOLS: Final = {
    "read": frozenset({"read", "grep", "glob"}),
    "edit": frozenset({"edit", "write"}),
}
#: Tools whose specifier is a path pattern, and the input field holding the path.
PATH_TOOLS: Final = frozenset({"read", "write", "edit", "glob", "grep"})
#: aerix's tools that take no specifier: a rule names them whole.
_WHOLE_ONLY: Final = frozenset({"repo_map", "plan", "context", "web_search"})
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_EXAMPLE: Final = "write a rule as Tool or Tool(specifier), such as Bash or Bash(rm:*)"


class RuleError(ValueError):
    """A rule that cannot be read; its text says why and how to write it."""


@dataclass(frozen=True)
class PermissionRule:
    """One rule: its text as written, the aerix tool it names (None: a tool aerix lacks), and
    its specifier (None: every call)."""

    text: str
    name: str
    tool: str | None
    specifier: str | None = None
    path: PathPattern | None = None

    @property
    def tools(self) -> frozenset[str]:
        """The aerix tools this rule covers."""
        if self.tool is None:
            return frozenset()
        return COVERED_TOOLS.get(self.tool, frozenset({self.tool}))

    @property
    def whole_tool(self) -> bool:
        """A bare ``Tool``: the tools it covers are taken away altogether."""
        return self.specifier is None


def parse_rule(text: str) -> PermissionRule:
    """One rule; raises :class:`RuleError`."""
    rule = text.strip()
    if not rule:
        raise RuleError(f"an empty rule; {_EXAMPLE}")
    opening = _first_unescaped(rule, "(")
    if opening < 0:
        if ")" in rule:
            raise RuleError(f"{rule!r} has a ')' but no '('; {_EXAMPLE}")
        return PermissionRule(rule, _checked_name(rule, rule), aerix_tool_name(rule))
    name = _checked_name(rule[:opening].strip(), rule)
    if not rule.endswith(")") or rule.endswith("\\)"):
        raise RuleError(f"{rule!r} has no closing ')' at its end; {_EXAMPLE}")
    specifier = _unescape(rule[opening + 1 : -1]).strip()
    if not specifier:
        raise RuleError(f"{rule!r} has nothing between its parentheses; write {name} to deny every call")
    tool = aerix_tool_name(name)
    if specifier == "*" or tool is None:
        return PermissionRule(rule, name, tool, None if specifier == "*" else specifier)
    return _with_specifier(rule, name, tool, specifier)


def _with_specifier(rule: str, name: str, tool: str, specifier: str) -> PermissionRule:
    if tool in _WHOLE_ONLY:
        raise RuleError(f"{rule!r}: {name} takes no specifier; write {name} to deny every call")
    if tool in PATH_TOOLS:
        try:
            path = parse_path_pattern(specifier)
        except ValueError as exc:
            raise RuleError(f"{rule!r}: {exc}") from None
        return PermissionRule(rule, name, tool, specifier, path)
    if tool == "web_fetch" and not specifier.startswith("domain:"):
        raise RuleError(f"{rule!r}: a {name} rule names a host, such as {name}(domain:example.com)")
    return PermissionRule(rule, name, tool, specifier)


def _checked_name(name: str, rule: str) -> str:
    if not _TOOL_NAME.fullmatch(name):
        raise RuleError(f"{rule!r}: {name!r} is not a tool name; {_EXAMPLE}")
    return name


def _first_unescaped(text: str, char: str) -> int:
    index = 0
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == char:
            return index
        index += 1
    return -1


def _unescape(text: str) -> str:
    return re.sub(r"\\([()\\])", r"\1", text)


def split_rules(text: str) -> list[str]:
    """``--disallowedTools``'s value: rules separated by commas or spaces outside parentheses
    (``Bash(git commit -m x),Read`` is two), as Claude Code splits it."""
    return list(_tokens(text))


def _tokens(text: str) -> Iterator[str]:
    depth, start, index = 0, 0, 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and (char == "," or char.isspace()):
            if text[start:index].strip():
                yield text[start:index].strip()
            start = index + 1
        index += 1
    if text[start:].strip():
        yield text[start:].strip()


def matches_name(specifier: str, name: str) -> bool:
    """An Agent or Skill specifier against a definition's or skill's name: exact, or ``prefix:*``."""
    if specifier.endswith(":*"):
        prefix = specifier[:-2]
        return name == prefix or name.startswith(prefix + ":")
    return name == specifier


def matches_domain(specifier: str, url: str) -> bool:
    """``domain:example.com`` against a URL's host (``domain:*.example.com``: its subdomains)."""
    wanted = specifier.removeprefix("domain:").strip().lower()
    host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", url.strip().lower()).split("/", 1)[0]
    host = host.rsplit("@", 1)[-1].split(":", 1)[0]
    if wanted.startswith("*."):
        return host.endswith(wanted[1:])
    return host == wanted

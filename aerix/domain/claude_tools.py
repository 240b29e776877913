"""Claude Code's tool names and input fields, mapped to aerix's and back.

Hook scripts written for Claude Code match tool names such as ``Bash`` or ``Edit|Write`` and read
``tool_input.file_path`` or ``tool_input.old_string``; agent definitions list ``tools: Read, Grep``.
This module is the one translation table. aerix's own names keep working everywhere: a name or
field that is already aerix's passes through unchanged.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

from aerix.domain.tools import TOOLS_BY_NAME

#: aerix tool name -> Claude Code tool name. Tools without a Claude counterpart keep their name.
CLAUDE_TOOL_NAMES: Final[Mapping[str, str]] = {
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "bash": "Bash",
    "glob": "Glob",
    "grep": "Grep",
    "agent": "Agent",
    "skill": "Skill",
    "web_fetch": "WebFetch",
    "web_search": "WebSearch",
}
#: Claude Code tool name (and old aliases) -> aerix tool name.
AERIX_TOOL_NAMES: Final[Mapping[str, str]] = {
    **{claude: aerix for aerix, claude in CLAUDE_TOOL_NAMES.items()},
    "Task": "agent",  # Claude Code's name for Agent before v2.1.63, still used by matchers
}

#: Per tool: aerix field -> Claude Code field, for the fields whose names differ.
_FIELD_NAMES: Final[Mapping[str, Mapping[str, str]]] = {
    "read": {"path": "file_path"},
    "write": {"path": "file_path"},
    "edit": {"path": "file_path", "old": "old_string", "new": "new_string"},
    "bash": {"background": "run_in_background"},
    "grep": {"max_matches": "head_limit"},
    "agent": {"brief": "prompt", "definition": "subagent_type", "member": "model"},
    "skill": {"name": "skill"},
}
_PATH_FIELDS: Final = frozenset({"path"})
#: The Claude Code release whose transcript format aerix writes (the ``version`` of every
#: record): the release of the real transcripts the projection is compared with
#: (tests/fixtures/claude-code). Readers check it is semver and pick the 2.1 layout by it.
CLAUDE_CODE_VERSION: Final = "2.1.39"
#: Claude Code cuts a project folder name past this many characters and adds a hash.
PROJECT_DIR_NAME_CHARS: Final = 200
_NOT_ALPHANUMERIC = re.compile(r"[^A-Za-z0-9]")  # one character at a time
#: Claude Code's subagent type when an Agent call names no definition.
GENERAL_PURPOSE: Final = "general-purpose"
#: The longest ``description`` of an Agent call made from a brief (Claude Code's are a few words).
TASK_DESCRIPTION_CHARS: Final = 60


def task_description(brief: str) -> str:
    """An Agent call's short ``description``: the brief's first line, cut to a few words."""
    first_line = brief.strip().split("\n", 1)[0]
    if len(first_line) <= TASK_DESCRIPTION_CHARS:
        return first_line
    return first_line[: TASK_DESCRIPTION_CHARS - 1] + "…"


def claude_tool_name(tool: str) -> str:
    """Claude Code's name for an aerix tool (``bash`` -> ``Bash``); the aerix name when none."""
    return CLAUDE_TOOL_NAMES.get(tool, tool)


def aerix_tool_name(name: str) -> str | None:
    """The aerix tool a name means, whether it is aerix's (``bash``) or Claude's (``Bash``, ``Task``)."""
    if name in CLAUDE_TOOL_NAMES or name in ("repo_map", "plan", "context"):
        return name
    return AERIX_TOOL_NAMES.get(name)


def tool_name_aliases(tool: str) -> tuple[str, ...]:
    """Every name a hook matcher may use for this tool, aerix's first."""
    names = [tool]
    names += [claude for claude, aerix in AERIX_TOOL_NAMES.items() if aerix == tool and claude != tool]
    return tuple(names)


def to_claude_input(
    tool: str, tool_input: Mapping[str, Any], cwd: str | os.PathLike[str] | None
) -> dict[str, Any]:
    """The input in Claude Code's vocabulary: Claude's field names, bash's timeout in
    milliseconds, and file paths made absolute against ``cwd`` (as given when ``cwd`` is None).
    An ``agent`` call becomes the Agent (Task) shape: a short ``description`` first, the brief
    as ``prompt``, the definition as ``subagent_type`` (``general-purpose`` without one)."""
    renames = _FIELD_NAMES.get(tool, {})
    converted: dict[str, Any] = {}
    if tool == "agent":
        converted["description"] = task_description(str(tool_input.get("brief", "")))
        converted["subagent_type"] = GENERAL_PURPOSE
    for field, value in tool_input.items():
        if cwd is not None and field in _PATH_FIELDS and isinstance(value, str):
            value = _absolute(os.fspath(cwd), value)
        if tool == "bash" and field == "timeout_secs" and isinstance(value, int | float):
            converted["timeout"] = int(value * 1000)
            continue
        converted[renames.get(field, field)] = value
    return converted


#: Paths made absolute, remembered: a session names the same few files again and again, and a
#: transcript's rebuild makes every call's path absolute (``normpath`` and ``join`` are Python
#: code, about half of turning a call's input into Claude's).
_ABSOLUTE_PATHS_KEPT: Final = 4096


@lru_cache(maxsize=_ABSOLUTE_PATHS_KEPT)
def _absolute(cwd: str, path: str) -> str:
    return os.path.normpath(os.path.join(cwd, path))


def from_claude_input(tool: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """An input in either vocabulary, turned into aerix's field names.

    Used for a hook's ``updatedInput`` and for a model that writes Claude Code's calls. Claude-only
    fields aerix has no use for (``description``, ``output_mode``…) are dropped; ``-i`` on grep
    becomes an inline ``(?i)`` flag.
    """
    claude_to_aerix = {claude: aerix for aerix, claude in _FIELD_NAMES.get(tool, {}).items()}
    known = set(_known_fields(tool))
    converted: dict[str, Any] = {}
    for field, value in tool_input.items():
        if tool == "bash" and field == "timeout" and isinstance(value, int | float):
            converted["timeout_secs"] = max(1, math.ceil(value / 1000))
        elif field in claude_to_aerix:
            converted[claude_to_aerix[field]] = value
        elif field in known:
            converted[field] = value
    if tool == "agent" and converted.get("definition") == GENERAL_PURPOSE:
        del converted["definition"]  # Claude Code's name for "no particular definition"
    if tool == "grep" and tool_input.get("-i") is True and isinstance(converted.get("pattern"), str):
        converted["pattern"] = "(?i)" + converted["pattern"]
    return converted


def _known_fields(tool: str) -> tuple[str, ...]:
    spec = TOOLS_BY_NAME.get(tool)
    return tuple(spec.properties) if spec else ()


def claude_project_dir_name(cwd: str) -> str:
    """The folder under Claude Code's ``projects/`` for a working directory: each character
    that is not an ASCII letter or digit becomes ``-`` (one per UTF-16 code unit, as Claude
    Code's JavaScript replaces them: a character past U+FFFF gives two); a name past
    PROJECT_DIR_NAME_CHARS is cut there and followed by ``-`` and Claude Code's hash of the
    whole path (``path_hash``)."""
    name = _NOT_ALPHANUMERIC.sub(lambda found: "--" if ord(found.group()) > 0xFFFF else "-", cwd)
    if len(name) <= PROJECT_DIR_NAME_CHARS:
        return name
    return f"{name[:PROJECT_DIR_NAME_CHARS]}-{path_hash(cwd)}"


def path_hash(text: str) -> str:
    """Claude Code's short hash of a path (the one its SDK's session reader also computes): the
    JavaScript string hash ``h = 31·h + code unit`` over the UTF-16 code units, kept to a signed
    32-bit integer at each step, then its absolute value in base 36."""
    value = 0
    data = text.encode("utf-16-le")
    for index in range(0, len(data), 2):
        value = (value * 31 + int.from_bytes(data[index : index + 2], "little")) & 0xFFFFFFFF
    if value >= 0x80000000:
        value -= 0x100000000
    value = abs(value)
    digits = []
    while True:
        value, digit = divmod(value, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
        if value == 0:
            return "".join(reversed(digits))

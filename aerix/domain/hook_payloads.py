"""The JSON object a hook handler reads on stdin, shaped as Claude Code sends it.

Every event carries the common fields (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``permission_mode``; ``agent_id`` and ``agent_type`` when a subagent fired
it) and its own. Tool events name the tool and its input in Claude Code's vocabulary
(``Bash`` ``{command, description, timeout, run_in_background}``, ``Edit``
``{file_path, old_string, new_string, replace_all}`` …, paths absolute, the schema's defaults
filled in as Claude Code's tools fill theirs), with aerix's own name and input beside them in
``aerix_tool_name``/``aerix_tool_input``; ``tool_response`` is an object of the shape Claude
Code's tool returns. Tools with only aerix names (``repo_map``, ``plan``, ``context``) are sent
under those names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Final

from aerix.domain.claude_tools import claude_tool_name, from_claude_input, to_claude_input
from aerix.domain.tools import TOOLS_BY_NAME

#: Claude Code's Bash input always has these, even when the model gave neither.
_BASH_FILLED: Final = {"description": ""}
_BASH_STATUS = re.compile(r"\[(exit -?\d+|signal \d+|timeout after [^\]]+|cancelled)\]\s*$")
_JOB_STARTED = re.compile(r"^started job (j\d+)")


def common_fields(
    event_name: str,
    *,
    session_id: str,
    transcript_path: str,
    cwd: str,
    permission_mode: str,
    agent_id: str | None = None,
    agent_type: str | None = None,
) -> dict[str, Any]:
    """The fields every hook input starts with."""
    fields: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": transcript_path,
        "cwd": cwd,
        "hook_event_name": event_name,
        "permission_mode": permission_mode,
    }
    if agent_id is not None:
        fields["agent_id"] = agent_id
        fields["agent_type"] = agent_type or "implementer"
    return fields


def with_defaults(tool: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """The input with the tool schema's defaults for the fields the model left out."""
    spec = TOOLS_BY_NAME.get(tool)
    filled = dict(tool_input)
    if spec is None:
        return filled
    for name, schema in spec.properties.items():
        if name not in filled and "default" in schema:
            filled[name] = schema["default"]
    return filled


def claude_tool_input(tool: str, tool_input: Mapping[str, Any], cwd: str) -> dict[str, Any]:
    """The input as Claude Code's tool would have received it."""
    converted = to_claude_input(tool, with_defaults(tool, tool_input), cwd)
    if tool == "bash":
        converted = {**_BASH_FILLED, **converted}
        converted = {key: converted[key] for key in _claude_order(converted)}
    return converted


def _claude_order(fields: Mapping[str, Any]) -> list[str]:
    first = ["command", "description", "timeout", "run_in_background"]
    return [key for key in first if key in fields] + [key for key in fields if key not in first]


def tool_fields(tool: str, tool_input: Mapping[str, Any], cwd: str, tool_use_id: str) -> dict[str, Any]:
    """The fields every tool event carries."""
    return {
        "tool_name": claude_tool_name(tool),
        "tool_input": claude_tool_input(tool, tool_input, cwd),
        "tool_use_id": tool_use_id,
        "aerix_tool_name": tool,
        "aerix_tool_input": dict(tool_input),
    }


def updated_input(tool: str, updated: Mapping[str, Any]) -> dict[str, Any]:
    """A hook's ``updatedInput`` (Claude Code's fields or aerix's) as aerix's input."""
    return from_claude_input(tool, updated)


def tool_response(tool: str, tool_input: Mapping[str, Any], result: str, cwd: str) -> dict[str, Any]:
    """The ``tool_response`` object of a PostToolUse input, in the shape Claude Code's tool
    returns, built from aerix's result text."""
    path = tool_input.get("path")
    file_path = os.path.normpath(os.path.join(cwd, path)) if isinstance(path, str) else None
    if tool == "bash":
        return _bash_response(result)
    if tool == "write":
        kind = "update" if result.startswith("replaced") else "create"
        return {
            "type": kind,
            "filePath": file_path,
            "content": tool_input.get("content", ""),
            "success": True,
        }
    if tool == "edit":
        return {
            "filePath": file_path,
            "oldString": tool_input.get("old", ""),
            "newString": tool_input.get("new", ""),
            "replaceAll": bool(tool_input.get("replace_all", False)),
            "success": True,
        }
    if tool == "read":
        lines = result.splitlines()
        start = tool_input.get("offset", 1)
        file = {"filePath": file_path, "content": result, "numLines": len(lines), "startLine": start}
        return {"type": "text", "file": file}
    if tool == "glob":
        names = [] if result.startswith("no files match") else result.splitlines()
        return {"filenames": names, "numFiles": len(names), "truncated": False}
    if tool == "grep":
        lines = [line for line in result.splitlines() if not line.startswith(("[", "no matches for "))]
        files = sorted({line.split(":", 1)[0] for line in lines if ":" in line})
        return {
            "mode": "content",
            "numFiles": len(files),
            "filenames": files,
            "content": result,
            "numLines": len(lines),
        }
    if tool == "agent":
        return {"status": "completed", "content": [{"type": "text", "text": result}]}
    if tool == "skill":
        return {"success": True, "commandName": tool_input.get("name", ""), "content": result}
    return {"output": result}


def _bash_response(result: str) -> dict[str, Any]:
    started = _JOB_STARTED.match(result)
    if started:
        job = started.group(1)
        return {
            "stdout": result,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "backgroundTaskId": job,
        }
    status = _BASH_STATUS.search(result)
    output = result[: status.start()] if status else result
    interrupted = status is not None and not status.group(1).startswith("exit ")
    return {"stdout": output, "stderr": "", "interrupted": interrupted, "isImage": False}


def tool_error(result: str) -> str:
    """The ``error`` string of a PostToolUseFailure input: the result without its prefix."""
    return result.removeprefix("error:").strip()

"""Claude Code's ``toolUseResult``: the structured copy of a tool's result that Claude Code
keeps beside the ``tool_result`` block, one shape per tool (what transcript viewers render).

aerix's log keeps each result as the text the model was shown, so the fields are filled from
that text and from the call's own input (in Claude's vocabulary, paths absolute): bash's output
is all ``stdout`` (aerix keeps stdout and stderr as one text), a read's ``content`` is the
numbered text the model read. A failed call is Claude's plain ``"Error: …"`` string, and a tool
Claude Code has no counterpart for keeps its text. An agent call's result (Claude's Task) also
reports the subagent's run: how long it took, its tool calls, and its last response's usage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_STATUS_LINE = re.compile(r"\n?\[(?:exit -?\d+|signal \d+|timeout after [^\]]*|cancelled)\]\s*$")
_JOB_STARTED = re.compile(r"^started job (j\d+)")  # bash's answer to a background call
_READ_RANGE = re.compile(r"\[lines (\d+)-(\d+) of (\d+);[^\]]*\]\s*$")


def tool_use_result(tool: str, claude_input: Mapping[str, Any], text: str, is_error: bool) -> Any:
    """The ``toolUseResult`` of one call of ``tool`` (aerix's name) made with ``claude_input``."""
    if is_error:
        return f"Error: {text}"
    shape = _SHAPES.get(tool)
    return shape(claude_input, text) if shape is not None else text


def _bash(claude_input: Mapping[str, Any], text: str) -> dict[str, Any]:
    status = _STATUS_LINE.search(text)
    stdout = text[: status.start()] if status else text
    interrupted = status is not None and ("timeout" in status.group() or "cancelled" in status.group())
    result: dict[str, Any] = {"stdout": stdout, "stderr": "", "interrupted": interrupted, "isImage": False}
    job = _JOB_STARTED.match(text) if claude_input.get("run_in_background") else None
    if job is not None:
        result.update(stdout="", backgroundTaskId=job.group(1))
    return result


def _read(claude_input: Mapping[str, Any], text: str) -> dict[str, Any]:
    lines = text.splitlines()
    shown = len(lines)
    start = int(claude_input.get("offset") or 1)
    total = start + shown - 1
    cut = _READ_RANGE.search(text)
    if cut is not None:
        shown, total = int(cut.group(2)) - int(cut.group(1)) + 1, int(cut.group(3))
    file = {
        "filePath": claude_input.get("file_path", ""),
        "content": text,
        "numLines": shown,
        "startLine": start,
        "totalLines": total,
    }
    return {"type": "text", "file": file}


def _write(claude_input: Mapping[str, Any], text: str) -> dict[str, Any]:
    return {
        "type": "update" if text.startswith("replaced") else "create",
        "filePath": claude_input.get("file_path", ""),
        "content": claude_input.get("content", ""),
        "structuredPatch": [],
        "originalFile": None,
    }


def _edit(claude_input: Mapping[str, Any], text: str) -> dict[str, Any]:
    return {
        "filePath": claude_input.get("file_path", ""),
        "oldString": claude_input.get("old_string", ""),
        "newString": claude_input.get("new_string", ""),
        "originalFile": None,
        "structuredPatch": [],
        "userModified": False,
        "replaceAll": bool(claude_input.get("replace_all", False)),
    }


def _glob(claude_input: Mapping[str, Any], text: str) -> dict[str, Any]:
    names = [] if text.startswith("no files match") else [line for line in text.splitlines() if line]
    return {"filenames": names, "durationMs": 0, "numFiles": len(names), "truncated": False}


def _grep(claude_input: Mapping[str, Any], text: str) -> dict[str, Any]:
    lines = [line for line in text.splitlines() if line and not line.startswith(("[", "no matches for "))]
    files = sorted({line.split(":", 1)[0] for line in lines if ":" in line})
    count = len(lines)
    return {"mode": "content", "numFiles": len(files), "filenames": files, "content": text, "numLines": count}


_SHAPES = {"bash": _bash, "read": _read, "write": _write, "edit": _edit, "glob": _glob, "grep": _grep}


@dataclass
class AgentTally:
    """What Claude Code reports of a subagent in its Task result, kept as the agent runs."""

    started: datetime
    tool_uses: int = 0
    #: The agent's last response's usage, in Claude's keys.
    last_usage: dict[str, int] | None = None


def task_result(
    text: str, is_error: bool, prompt: str, agent_id: str | None, tally: AgentTally | None, ended: datetime
) -> dict[str, Any]:
    """Claude Code's ``toolUseResult`` of a Task (aerix's agent call): ``status``, ``prompt``,
    ``agentId``, the result as ``content``, then the run's figures: ``totalDurationMs``,
    ``totalTokens`` (the last response's prompt and output, as Claude Code counts it),
    ``totalToolUseCount`` and that response's ``usage``."""
    body = text
    try:
        outcome = json.loads(body).get("outcome")
    except (ValueError, AttributeError):
        outcome = None
    failed = is_error or (outcome is not None and outcome != "done")
    result: dict[str, Any] = {"status": "failed" if failed else "completed", "prompt": prompt}
    if agent_id is not None:
        result["agentId"] = agent_id
    result["content"] = [{"type": "text", "text": body}]
    if tally is not None:
        usage = tally.last_usage or {}
        result["totalDurationMs"] = max(0, int((ended - tally.started).total_seconds() * 1000))
        result["totalTokens"] = sum(usage.values())
        result["totalToolUseCount"] = tally.tool_uses
        result["usage"] = usage
    return result

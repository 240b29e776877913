"""What every tool shares: resolving paths, the result header, and the error convention
(a tool error is a result string ``error: …``, never an exception the loop has to catch)."""

from __future__ import annotations

import os
from pathlib import Path

from aerix.domain import bounds


class ToolFailure(Exception):
    """Raised inside a tool for a failure the model should read; becomes ``error: <message>``."""


def resolve_path(cwd: Path, path: str) -> Path:
    """A tool's ``path`` argument as a path: absolute as given, relative to the working
    directory otherwise. ``..`` is allowed and tools reach outside the working directory."""
    if not path:
        raise ToolFailure("path is empty")
    expanded = Path(os.path.expanduser(path))
    return Path(os.path.normpath(expanded if expanded.is_absolute() else cwd / expanded))


def display_path(cwd: Path, path: Path) -> str:
    """A path as tools print it: relative to the working directory (``../x`` outside it)."""
    try:
        return os.path.relpath(path, cwd)
    except ValueError:  # another drive on Windows
        return str(path)


def error_result(message: str) -> str:
    """The result string of a failed call."""
    return f"error: {message}"


def result_header(tool: str, call_id: str) -> str:
    """The first line of an appended result: ``[read c3]``."""
    return f"[{tool} {call_id}]"


def with_header(tool: str, call_id: str, text: str) -> str:
    """A result as the user segment the loop appends: the header, then the result."""
    return f"{result_header(tool, call_id)}\n{text}"


def cut_line(line: str) -> str:
    """A line cut to READ_LINE_MAX_CHARS, saying how much was left out."""
    if len(line) <= bounds.READ_LINE_MAX_CHARS:
        return line
    return (
        line[: bounds.READ_LINE_MAX_CHARS] + f" [… {len(line) - bounds.READ_LINE_MAX_CHARS} more characters]"
    )


def text_or_none(target: Path) -> str | None:
    """The file's text, or None when it is missing or not UTF-8 text."""
    try:
        return target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None

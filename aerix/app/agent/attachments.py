"""Attach the files a task names (``aerix.domain.attachments``): read through the agent's tool
runner, as the ``read`` tool shows them, leaving out what a permission rule would refuse to read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aerix.app.ports.tools import ToolRunner
from aerix.domain import bounds
from aerix.domain.attachments import attachment_text, named_files
from aerix.domain.permissions import Permissions


@dataclass(frozen=True)
class Attached:
    """The text to put after the task, and the paths it shows (the agent has seen them)."""

    text: str = ""
    paths: tuple[str, ...] = ()


def attach_named_files(task: str, tools: ToolRunner, permissions: Permissions, cwd: Path) -> Attached:
    """The first ATTACHED_FILES_MAX files ``task`` names that are files in ``cwd`` the agent may
    read."""
    if "read" in permissions.removed:
        return Attached()
    shown: list[tuple[str, str]] = []
    for name in named_files(task):
        if len(shown) == bounds.ATTACHED_FILES_MAX:
            break
        if not (cwd / name).is_file() or permissions.denial("read", {"path": name}, str(cwd)) is not None:
            continue
        text = tools.run("read", {"path": name})
        if not text.startswith("error:"):
            shown.append((name, text))
    return Attached(attachment_text(shown), tuple(name for name, _ in shown))

"""Files a task names, attached to it: a prompt or a brief that names a file of the project gets
the file's text after it, as ``read`` shows it, so the agent starts from what the file holds.

Measured on qwen2.5-coder-1.5b (docs/benchmarks.md): asked what greet.py does, it wrote its
answer into the thought of its first turn, before the read it called, guessed wrong ("prints
'Hello, world!'"), and copied that guess into its final after the read; with greet.py attached it
answered right. Aider adds the files a chat names the same way; Claude Code does it for
``@``-mentions. A name is a path relative to the project, with an extension (``calc.py``,
``src/app.ts``); absolute paths and ``..`` are never attached.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

#: What stands before the attached files.
ATTACHED_HEADER: Final = "The files named above, as they are now (no need to read them again):"
#: A relative path with an extension: word characters, dots and dashes, segments joined by ``/``.
_NAMED_FILE = re.compile(r"(?<![\w./-])(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]+(?![\w/])")


def named_files(text: str) -> list[str]:
    """The paths ``text`` names, in order, each once: candidates only (the caller attaches the
    first ATTACHED_FILES_MAX that are files it may read; a test run's output names test files the
    project does not hold before the file to fix)."""
    names: list[str] = []
    for match in _NAMED_FILE.finditer(text):
        name = match.group(0)
        if ".." not in name.split("/") and name not in names:
            names.append(name)
    return names


def attachment_text(files: Sequence[tuple[str, str]]) -> str:
    """The attached files after the task's text: each path, then its text as ``read`` showed it
    (numbered lines) in a fence. Not headed ``[read …]`` like a result: the 1.5B took that header
    for a call and read the path "c1" next."""
    if not files:
        return ""
    parts = [ATTACHED_HEADER]
    for path, shown in files:
        parts += ["", f"{path}:", "```", shown, "```"]
    return "\n".join(parts)

"""A request's diff coloured the way git colours it, with its ``untracked:`` lines."""

from __future__ import annotations

from rich.text import Text

from aerix.adapters.terminal.theme import DIFF_ADDED, DIFF_HUNK, DIFF_META, DIFF_REMOVED, DIM
from aerix.domain.diffs import TOUCHED_PREFIX, UNTRACKED_PREFIX, RequestDiff

_META_PREFIXES = (
    "diff --git",
    "index ",
    "--- ",
    "+++ ",
    "new file mode",
    "deleted file mode",
    "similarity",
    "rename ",
)


def diff_text(diff: RequestDiff) -> Text | None:
    """The diff, line by line in git's colours; None when the request changed nothing."""
    rendered = diff.render()
    if not rendered:
        return None
    text = Text(no_wrap=False)
    for index, line in enumerate(rendered.rstrip("\n").split("\n")):
        if index:
            text.append("\n")
        text.append(line, style=_style_of(line))
    return text


def _style_of(line: str) -> str:
    if line.startswith(_META_PREFIXES):
        return DIFF_META
    if line.startswith("@@"):
        return DIFF_HUNK
    if line.startswith("+"):
        return DIFF_ADDED
    if line.startswith("-"):
        return DIFF_REMOVED
    if line.startswith((UNTRACKED_PREFIX, TOUCHED_PREFIX)):
        return DIM
    return ""

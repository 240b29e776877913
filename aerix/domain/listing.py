"""A listing in the system segment (skills, agent definitions) within a character budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def fit_listing(
    header: Sequence[str], entries: Sequence[str], more: Callable[[int], str], max_chars: int
) -> str:
    """``header`` then as many ``entries`` as fit in ``max_chars`` characters (all of it, the
    header included); when some do not fit, ``more(count)`` says how many were left out. When not
    even one entry fits, the section is left out (``""``)."""
    if not entries or max_chars <= 0:
        return ""
    lines = list(header)
    for shown, entry in enumerate(entries):
        left = len(entries) - shown - 1
        tail = f"\n{more(left)}" if left else ""
        if len("\n".join([*lines, entry])) + len(tail) > max_chars:
            rest = more(len(entries) - shown)
            if shown == 0 or len("\n".join([*lines, rest])) > max_chars:
                return ""
            return "\n".join([*lines, rest])
        lines.append(entry)
    return "\n".join(lines)

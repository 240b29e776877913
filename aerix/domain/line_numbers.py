"""Line numbers a model copied into a file it writes.

``read`` and the attachments show a file with its lines numbered (``  1\tdef color_code(color):``).
A small model writing that file back sometimes keeps the numbers: qwen2.5-coder-1.5b's
resistor-color solution came as ``resistor_color.py:`` and then ``1. def color_code(color):``,
``2.     return …``, its code right but no line of it Python. ``without_line_numbers`` gives the
text without them, only when the text is unmistakably numbered: every line that is not empty
starts with a number, the numbers count up by one, and there are at least two. A first line
naming the file (``name.py:``) goes too. Whether the result is used is the caller's to judge
(``aerix.adapters.tools.python_checks``: only when it compiles and the text as sent did not).
"""

from __future__ import annotations

import re

#: A numbered line: the number (``read`` pads it with spaces), then a tab, or a dot or colon and
#: at most one space (the indentation after it is the code's), then the line's text.
_NUMBERED = re.compile(r" *(\d+)(?:\t|[.:] ?)(.*)")
#: A first line that names the file, as a model heads a file it quotes.
_FILE_HEADER = re.compile(r"\S+\.py:")


def without_line_numbers(text: str) -> str | None:
    """``text`` without the line numbers every line of it starts with, or None when it is not
    numbered that way."""
    lines = text.split("\n")
    if lines and _FILE_HEADER.fullmatch(lines[0].strip()):
        lines = lines[1:]
    kept: list[str] = []
    expected: int | None = None
    for line in lines:
        if not line.strip():
            continue  # a model puts blank lines between numbered ones; the numbered ones hold the file
        numbered = _NUMBERED.fullmatch(line)
        if numbered is None:
            return None
        number = int(numbered.group(1))
        if expected is not None and number != expected:
            return None
        expected = number + 1
        kept.append(numbered.group(2))
    if len(kept) < 2:
        return None
    return "\n".join(kept) + ("\n" if text.endswith("\n") else "")

"""Python written inside JSON: string literals a small model breaks, mended when that is sure.

A turn's ``write`` carries the file as a JSON string, where ``\\n`` is the line break between
lines. A model that means Python's own ``'\\n'`` in the code has to write ``\\\\n``; the 1.5B
coder writes ``\\n``, and the file gets a real line break inside a one-line string literal
(transpose.py: ``rows = text.split('`` on one line, ``')`` on the next). Python never allows a
line break there, so the only reading that keeps every character is the escape the model meant.

The same model closes a single-quoted string early on an English apostrophe (bob.py:
``'Calm down, I know what I'm doing!'``). A quote between two letters is not where a string
ends; the only reading that keeps every character is ``\\'``.

:func:`mend_strings` makes those two mends, string by string from the top, and keeps them only
when the whole file then compiles; anything else that breaks a file is left as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: At most this many mends are made in one file; past it the text is left as it is.
MAX_STRING_MENDS = 32

_UNTERMINATED = "unterminated string literal"
#: A single quote with a letter or digit on each side: an apostrophe, not a string's end.
_APOSTROPHE = re.compile(r"(?<=[^\W_])'(?=[^\W_])")


@dataclass(frozen=True)
class MendedText:
    """The mended text and the lines (1-based, in it) of each kind of mend."""

    text: str
    #: Lines where a line break inside a string was written back as ``\\n``.
    joined: tuple[int, ...] = ()
    #: Lines where an apostrophe inside a single-quoted string was written as ``\\'``.
    escaped: tuple[int, ...] = ()
    #: Whether the line numbers the text was written with were left out (``line_numbers``).
    unnumbered: bool = False
    #: Standard-library modules used unimported whose ``import`` lines were added
    #: (``missing_imports``), and the line the first of them is on.
    imported: tuple[str, ...] = ()
    imported_line: int = 0


def mend_strings(text: str) -> MendedText | None:
    """``text`` with its broken one-line string literals mended, when that makes the whole text
    compile; None when it already compiles or does not compile for any other reason."""
    lines = text.split("\n")
    joined: list[int] = []
    escaped: list[int] = []
    for _ in range(MAX_STRING_MENDS + 1):
        error = _syntax_error("\n".join(lines))
        if error is None:
            if not joined and not escaped:
                return None
            return MendedText("\n".join(lines), tuple(joined), tuple(escaped))
        number = error.lineno or 0
        if not error.msg.startswith(_UNTERMINATED) or not 1 <= number <= len(lines):
            return None
        apostrophe = _escaped_apostrophe(lines, number)
        if apostrophe is not None:
            lines[number - 1] = apostrophe
            _note(escaped, number)
        elif number < len(lines):
            lines[number - 1 : number + 1] = [lines[number - 1] + "\\n" + lines[number]]
            _note(joined, number)
        else:
            return None
    return None


def _escaped_apostrophe(lines: list[str], number: int) -> str | None:
    """Line ``number`` with the first apostrophe escaped whose escape ends this line's
    unterminated string (the file compiles, or breaks only further down), or None."""
    line = lines[number - 1]
    for match in _APOSTROPHE.finditer(line):
        candidate = line[: match.start()] + "\\'" + line[match.end() :]
        trial = [*lines[: number - 1], candidate, *lines[number:]]
        error = _syntax_error("\n".join(trial))
        if error is None or (error.lineno or 0) > number:
            return candidate
    return None


def _note(numbers: list[int], number: int) -> None:
    if not numbers or numbers[-1] != number:
        numbers.append(number)


def _syntax_error(text: str) -> SyntaxError | None:
    try:
        compile(text, "<file>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except ValueError:  # a NUL byte: not ours to mend
        return SyntaxError("source code cannot contain null bytes")
    return None

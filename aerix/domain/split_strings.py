"""Python written inside JSON: a ``\\n`` meant for a string literal, decoded as a line break.

A turn's ``write`` carries the file as a JSON string, where ``\\n`` is the line break between
lines. A model that means Python's own ``'\\n'`` in the code has to write ``\\\\n``; the
1.5B coder writes ``\\n``, and the file gets a real line break inside a one-line string literal
(transpose.py: ``rows = text.split('`` on one line, ``')`` on the next). Python never allows a
line break there, so the only reading that keeps every character is the escape the model meant:
:func:`rejoin_split_strings` puts it back, and only when the whole file then compiles.
"""

from __future__ import annotations

from dataclasses import dataclass

#: At most this many line breaks are written back in one file; past it the text is left as it is.
MAX_SPLIT_STRINGS = 32

_UNTERMINATED = "unterminated string literal"


@dataclass(frozen=True)
class RejoinedText:
    """The mended text and the lines (1-based, in the mended text) where a string was joined."""

    text: str
    lines: tuple[int, ...]


def rejoin_split_strings(text: str) -> RejoinedText | None:
    """``text`` with every line break that splits a one-line string literal written back as
    ``\\n``, when that makes the whole text compile; None when it does not compile for any
    other reason (an apostrophe that ends a string early, say) or already compiles."""
    lines = text.split("\n")
    joined: list[int] = []
    for _ in range(MAX_SPLIT_STRINGS + 1):
        error = _syntax_error("\n".join(lines))
        if error is None:
            return RejoinedText("\n".join(lines), tuple(joined)) if joined else None
        number = error.lineno or 0
        if not error.msg.startswith(_UNTERMINATED) or not 1 <= number < len(lines):
            return None
        lines[number - 1 : number + 1] = [lines[number - 1] + "\\n" + lines[number]]
        if not joined or joined[-1] != number:
            joined.append(number)
    return None


def _syntax_error(text: str) -> SyntaxError | None:
    try:
        compile(text, "<file>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except ValueError:  # a NUL byte: not ours to mend
        return SyntaxError("source code cannot contain null bytes")
    return None

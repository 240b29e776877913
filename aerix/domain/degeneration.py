"""Telling a degenerating turn while it streams (aerix's own bound, not the spec's).

A small model that has lost its way keeps writing until ``max_new_tokens``: the same few
tokens over and over, or one JSON string that never closes. On a CPU that is minutes per turn,
and a cut turn is asked again, so the loop watches each turn's token frames and closes the
generation as soon as one of these shows:

- **A repeating span**: the last tokens are one span of at most DEGENERATE_SPAN_MAX_TOKENS
  tokens repeated back to back at least DEGENERATE_REPEATS times, over at least
  DEGENERATE_RUN_MIN_TOKENS tokens (``make make make …``, ``\\n\\n\\n…``, a sentence again and
  again).
- **A string that never closes**: one JSON string has run OPEN_STRING_LINE_MAX_CHARS
  characters without its closing quote or a line break (a ``\\n`` escape).

Each token frame's text is taken as one token (the pool sends one frame per token, joining only
the pieces of a UTF-8 character). The watch is pure: it is fed text and says why it would stop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aerix.domain import bounds


@dataclass
class DegenerationWatch:
    """Fed each token's text as a turn streams; ``feed`` returns why the turn should be stopped,
    or None while it looks sane."""

    span_max: int = bounds.DEGENERATE_SPAN_MAX_TOKENS
    repeats: int = bounds.DEGENERATE_REPEATS
    run_min: int = bounds.DEGENERATE_RUN_MIN_TOKENS
    line_max: int = bounds.OPEN_STRING_LINE_MAX_CHARS
    tokens: list[str] = field(default_factory=list)
    #: For each span length p: how many tokens in a row equal the token p before them.
    _matching: dict[int, int] = field(default_factory=dict)
    _in_string: bool = False
    _escaped: bool = False
    _line_chars: int = 0

    @property
    def count(self) -> int:
        """Tokens fed so far."""
        return len(self.tokens)

    def feed(self, text: str) -> str | None:
        self.tokens.append(text)
        return self._repeating() or self._open_string(text)

    def _repeating(self) -> str | None:
        tokens, last = self.tokens, len(self.tokens) - 1
        found: str | None = None
        for span in range(1, min(self.span_max, last) + 1):
            matching = self._matching.get(span, 0) + 1 if tokens[last] == tokens[last - span] else 0
            self._matching[span] = matching
            run = matching + span
            if found is None and run >= max(self.run_min, self.repeats * span):
                found = f"the same {_tokens(span)} repeated {run // span} times"
        return found

    def _open_string(self, text: str) -> str | None:
        for char in text:
            if self._escaped:
                self._escaped = False
                self._line_chars = 0 if char == "n" else self._line_chars + 2
            elif not self._in_string:
                self._in_string = char == '"'
                self._line_chars = 0
            elif char == "\\":
                self._escaped = True
            elif char == '"':
                self._in_string = False
            else:
                self._line_chars += 1
            if self._in_string and self._line_chars >= self.line_max:
                return f"a string ran {self.line_max} characters without closing or a line break"
        return None


def _tokens(span: int) -> str:
    return "token" if span == 1 else f"{span}-token span"

"""The degeneration guard: telling, token by token, that a generation is going nowhere.

A small model that has lost its way keeps writing until ``max_new_tokens``: the same span of
tokens over and over, or one JSON string that never closes. On a CPU that is minutes of decode
for nothing, so a ``generate`` that asks for the guard (its ``guard`` field) ends with
``finish: "degenerate"`` as soon as one of these shows:

- **A repeating span**: the last tokens are one span of at most ``span_max_tokens`` tokens
  repeated back to back at least ``repeats`` times, over at least ``run_min_tokens`` tokens
  (``make make make …``, ``\\n\\n\\n…``, a sentence again and again, a pair of tool calls
  written over and over); a long span, once it has come twice and the run is ``long_run_tokens``
  long (a file's methods written again and again inside one write).
- **A string that never closes**: one quoted string has run ``open_string_chars`` characters
  without its closing quote or a line break (a newline, or a ``\\n`` escape).
- **Lines that differ only in their numbers**: ``similar_lines`` lines in a row (empty ones
  aside), each with at least ``similar_line_letters`` letters, are the same once every run of
  digits is read as one (``assertEqual(convert(22), 'PlingPlong')``, then 23, 24 …): a count
  that goes on, which no span check sees. A line ends at a newline or a ``\\n`` escape, as code
  inside a JSON string spells it.

The span check is an incremental walk over occurrences: each token is compared only with the
earlier occurrences of the same token within ``span_max_tokens`` (each such occurrence, at
distance p, extends the run of period p by one), so a token costs as many steps as it occurred
in that window — a handful in real text — not one step per possible period. A token is
anything hashable: a token id on a local member, a text piece on a remote one.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Hashable

from caldrix.engine_seam import GuardLimits

_NUMBER = re.compile(r"\d+")
_LETTER = re.compile(r"[^\W\d_]")
#: A line longer than this is no line of a count; its shape is not kept.
_SHAPE_MAX_CHARS = 400


class DegenerationGuard:
    """Fed each output token and its text as a generation decodes; :meth:`feed` returns why the
    generation should stop, or None while it looks sane."""

    def __init__(self, limits: GuardLimits) -> None:
        self.limits = limits
        self._count = 0
        #: Positions of each token within the last ``span_max_tokens`` tokens, oldest first.
        self._seen: dict[Hashable, deque[int]] = {}
        #: For each period p: the length of the run of tokens equal to the token p before them,
        #: and the position that run last reached (a run not extended at the last position is over).
        self._run = [0] * (self.limits.span_max_tokens + 1)
        self._run_end = [-2] * (self.limits.span_max_tokens + 1)
        self._in_string = False
        self._escaped = False
        self._line_chars = 0
        #: The line being written, the shape of the last one and how many in a row had it.
        self._line: list[str] = []
        self._line_escaped = False
        self._shape: str | None = None
        self._same_shape = 0

    @property
    def count(self) -> int:
        """Tokens fed so far."""
        return self._count

    def feed(self, token: Hashable, text: str) -> str | None:
        position = self._count
        self._count += 1
        return self._repeating(token, position) or self._open_string(text) or self._similar_lines(text)

    def _repeating(self, token: Hashable, position: int) -> str | None:
        limits = self.limits
        seen = self._seen.get(token)
        if seen is None:
            self._seen[token] = deque((position,))
            return None
        oldest = position - limits.span_max_tokens
        while seen and seen[0] < oldest:
            seen.popleft()
        run, run_end = self._run, self._run_end
        found: str | None = None
        for earlier in reversed(seen):  # nearest first: the shortest period is the one named
            period = position - earlier
            length = run[period] + 1 if run_end[period] == position - 1 else 1
            run[period] = length
            run_end[period] = position
            covered = length + period
            needed = limits.repeats * period
            if limits.long_run_tokens > 0:
                needed = min(needed, max(limits.long_run_tokens, 2 * period))
            if found is None and covered >= max(limits.run_min_tokens, needed):
                found = f"the same {_span(period)} repeated {covered // period} times"
        seen.append(position)
        return found

    def _open_string(self, text: str) -> str | None:
        most = self.limits.open_string_chars
        if most <= 0:
            return None
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
            elif char == "\n":
                self._line_chars = 0
            else:
                self._line_chars += 1
            if self._in_string and self._line_chars >= most:
                return f"a string ran {most} characters without closing or a line break"
        return None

    def _similar_lines(self, text: str) -> str | None:
        most = self.limits.similar_lines
        if most <= 0:
            return None
        for char in text:
            if self._line_escaped:
                self._line_escaped = False
                if char == "n":
                    found = self._end_line()
                    if found is not None:
                        return found
                    continue
                self._line.append("\\")
            elif char == "\\":
                self._line_escaped = True
                continue
            if char == "\n":
                found = self._end_line()
                if found is not None:
                    return found
            elif len(self._line) <= _SHAPE_MAX_CHARS:
                self._line.append(char)
        return None

    def _end_line(self) -> str | None:
        line = "".join(self._line).strip()
        self._line.clear()
        if not line:
            return None  # an empty line neither breaks nor extends a run
        letters = len(_LETTER.findall(line))
        shape = _NUMBER.sub("#", line) if len(line) <= _SHAPE_MAX_CHARS else None
        if shape is None or letters < self.limits.similar_line_letters or shape != self._shape:
            self._shape, self._same_shape = shape, 1
            return None
        self._same_shape += 1
        if self._same_shape >= self.limits.similar_lines:
            return f"{self._same_shape} lines in a row the same but for their numbers"
        return None


def _span(period: int) -> str:
    return "token" if period == 1 else f"{period}-token span"

"""Turning generated token bytes into streamed text: UTF-8 complete, stop strings cut.

A token may end in the middle of a multibyte character, and the text generated so far may end
with the start of a stop string. Neither may be streamed yet: the first would be invalid text,
the second would show text that the stop string then takes back. :class:`TextStream` holds
both back until the next token settles them.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence


class TextStream:
    """Accumulates output bytes; says what text may be streamed and whether a stop string
    has appeared (the text is then cut just before it)."""

    def __init__(self, stop: Sequence[str]) -> None:
        self._stops = [s for s in stop if s]
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text = ""
        self._streamed = 0
        self.stopped = False
        self.stopped_by: str | None = None
        """The stop string that ended the text, once one has."""

    @property
    def text(self) -> str:
        """The output text so far (without a stop string and what followed it)."""
        return self._text

    def feed(self, data: bytes) -> str:
        """Add a token's bytes; return the text that may be streamed now (maybe empty)."""
        if self.stopped:
            return ""
        before = len(self._text)
        self._text += self._decoder.decode(data)
        if self._cut_at_stop(before):
            self.stopped = True
            return self._take(len(self._text))
        return self._take(len(self._text) - self._held_for_stop())

    def finish(self) -> str:
        """The generation ended: flush what was held back (a partial character becomes U+FFFD)."""
        if not self.stopped:
            before = len(self._text)
            self._text += self._decoder.decode(b"", final=True)
            if self._cut_at_stop(before):
                self.stopped = True
        return self._take(len(self._text))

    def _take(self, end: int) -> str:
        piece = self._text[self._streamed : end]
        self._streamed = max(self._streamed, end)
        return piece

    def _cut_at_stop(self, new_from: int) -> bool:
        earliest = -1
        for stop in self._stops:
            # Only a stop string that ends in the new text can be new.
            found = self._text.find(stop, max(0, new_from - len(stop) + 1))
            if found >= 0 and (earliest < 0 or found < earliest):
                earliest = found
                self.stopped_by = stop
        if earliest < 0:
            return False
        self._text = self._text[:earliest]
        return True

    def _held_for_stop(self) -> int:
        """Length of the longest end of the text that some stop string starts with."""
        held = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(self._text)), held, -1):
                if self._text.endswith(stop[:n]):
                    held = n
                    break
        return held

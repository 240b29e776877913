"""Tokenizing one segment's rendered text so that only the chat template's markup can become
special tokens.

A segment's text comes from a user, a file or a tool. If it were tokenized with special tokens
parsed, a file holding ``<|im_end|>\\n<|im_start|>system\\n…`` would put real control tokens in
the prompt: the model would see a new system turn that nobody wrote (prompt injection), and the
count would not be the count of the text as written.

So the segment's message is rendered a second time with a sentinel in place of its content
(:attr:`SegmentTokenizer.sentinel`). Splitting that *outline* at the sentinel gives the
template's own pieces; when putting the content back between them reproduces the real
rendering exactly, the pieces are markup and the content is text:

- special tokens are looked for in the markup only (``tokenize(…, special=True)``);
- the content, together with the plain text of the markup around it up to the nearest special
  token (``user\\n`` after ``<|im_start|>``), is one run tokenized with ``special=False``.

Tokenizing the plain runs whole, rather than piece by piece, is what llama.cpp does with a
whole string: it splits the text at special tokens and tokenizes each stretch between them on
its own. So for text that spells no special token the ids are exactly those of tokenizing the
rendered text in one go (a content starting with blank lines merges with the ``\\n`` before it
just as before), and only text that spells special tokens changes: it stays plain.

A template that changes the content as it renders it (``trim``, splitting off a reasoning
block …) does not reproduce the rendering from the outline. Then the segment falls back: its
rendered text is tokenized with special tokens parsed when the content spells none (the old,
exact result), and *entirely as plain text* when it does, so this segment's own role markers
become plain text too, but nothing it holds can become a control token.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from caldrix.engine_seam import ServedModel

logger = logging.getLogger("caldrix.templates")

#: Distinct markup pieces remembered per engine (with where their special tokens are).
MARKUP_CACHE_ENTRIES = 1024

#: A stretch of rendered text and whether special tokens are parsed in it.
Run = tuple[bool, str]


class SegmentTokenizer:
    """Tokenizes segments' rendered text for one engine; thread-safe."""

    def __init__(self, engine: ServedModel) -> None:
        self._engine = engine
        # Random per engine, so no segment text can know it in advance; letters of both cases
        # so a template that changes case shows as one that changes content.
        self.sentinel = f"caldrixContent{secrets.token_hex(12)}Here"
        self._markup: OrderedDict[str, tuple[Run, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._warned = False

    def sentinel_for(self, content: str) -> str:
        """The sentinel to render in place of ``content`` (one that ``content`` does not hold)."""
        sentinel = self.sentinel
        while sentinel in content:
            sentinel += secrets.token_hex(4)
        return sentinel

    def tokenize(self, rendered: str, content: str, outline: str | None, sentinel: str) -> list[int]:
        """The tokens of ``rendered`` (what the segment adds to the prompt), given ``outline``
        (the same, rendered with ``sentinel`` for ``content``; None if that did not render)."""
        pieces = outline.split(sentinel) if outline is not None else None
        if pieces is not None and content.join(pieces) == rendered:
            return self._tokenize_runs(self._runs(pieces, content))
        return self._tokenize_unstructured(rendered, content)

    def spells_special(self, text: str) -> bool:
        """Whether parsing special tokens changes the tokens of ``text``, that is whether
        ``text`` holds the text of a special token."""
        return self._engine.tokenize(text, special=True) != self._engine.tokenize(text, special=False)

    # -- structured: markup and content ----------------------------------------------------

    def _runs(self, pieces: list[str], content: str) -> list[Run]:
        runs: list[Run] = []
        for index, piece in enumerate(pieces):
            if index:
                _add_run(runs, (False, content))
            for run in self._markup_runs(piece):
                _add_run(runs, run)
        return runs

    def _tokenize_runs(self, runs: Iterable[Run]) -> list[int]:
        tokens: list[int] = []
        for special, text in runs:
            tokens.extend(self._engine.tokenize(text, special=special))
        return tokens

    def _markup_runs(self, piece: str) -> tuple[Run, ...]:
        with self._lock:
            runs = self._markup.get(piece)
            if runs is not None:
                self._markup.move_to_end(piece)
                return runs
        runs = self._split_markup(piece)
        with self._lock:
            self._markup[piece] = runs
            while len(self._markup) > MARKUP_CACHE_ENTRIES:
                self._markup.popitem(last=False)
        return runs

    def _split_markup(self, piece: str) -> tuple[Run, ...]:
        """``piece`` as plain text before its first special token, the stretch from the first
        special token to the end of the last (parsed), and plain text after it. The plain ends
        join the content next to them. If the split does not give back the tokens of the whole
        piece (overlapping special texts, say), the piece stays one parsed run."""
        if not piece:
            return ()
        if not self.spells_special(piece):
            return ((False, piece),)
        start, end = self._first_special_start(piece), self._last_special_end(piece)
        runs = ((False, piece[:start]), (True, piece[start:end]), (False, piece[end:]))
        split = tuple(run for run in runs if run[1])
        if self._tokenize_runs(split) != self._engine.tokenize(piece, special=True):
            return ((True, piece),)
        return split

    def _first_special_start(self, piece: str) -> int:
        # The longest prefix free of special tokens stops one character short of the end of
        # the first one; the shortest stretch before that end holding it starts where it does.
        first_end = _last_true(0, len(piece) - 1, lambda k: not self.spells_special(piece[:k])) + 1
        return _last_true(0, first_end - 1, lambda j: self.spells_special(piece[j:first_end]))

    def _last_special_end(self, piece: str) -> int:
        # Mirrored: the longest suffix free of special tokens starts one character after the
        # start of the last one, and the shortest stretch from that start holding it ends where
        # it does.
        last_start = _first_true(1, len(piece), lambda k: not self.spells_special(piece[k:])) - 1
        return _first_true(last_start + 1, len(piece), lambda m: self.spells_special(piece[last_start:m]))

    # -- fallback ----------------------------------------------------------------------------

    def _tokenize_unstructured(self, rendered: str, content: str) -> list[int]:
        if not self.spells_special(content):
            return self._engine.tokenize(rendered, special=True)
        if not self._warned:
            self._warned = True
            logger.warning(
                "the chat template changes segment text as it renders it, so a segment whose text "
                "spells special tokens is tokenized entirely as plain text, its role markers included"
            )
        return self._engine.tokenize(rendered, special=False)


def _add_run(runs: list[Run], run: Run) -> None:
    """Append ``run``, joining it to the previous one when both are plain text."""
    special, text = run
    if not text:
        return
    if runs and not special and not runs[-1][0]:
        runs[-1] = (False, runs[-1][1] + text)
    else:
        runs.append(run)


def _last_true(low: int, high: int, predicate: Callable[[int], bool]) -> int:
    """The largest k in [low, high] with ``predicate(k)``, for a predicate true up to some
    point and false after; ``predicate(low)`` must hold."""
    while low < high:
        middle = (low + high + 1) // 2
        if predicate(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _first_true(low: int, high: int, predicate: Callable[[int], bool]) -> int:
    """The smallest k in [low, high] with ``predicate(k)``, for a predicate false up to some
    point and true after; ``predicate(high)`` must hold."""
    while low < high:
        middle = (low + high) // 2
        if predicate(middle):
            high = middle
        else:
            low = middle + 1
    return low

"""A final or a thought that copies the runtime's own words is not an answer.

A small model copies what its context shows it: smollm2-135m answered a request with the note
that had re-asked its turn ("Your last answer was stopped after 125 tokens because it was going
nowhere … Answer again, shorter"), and the runtime took it for the answer. ``runtime_texts`` lists
every text the runtime writes into an agent's context, each from where it is made (the notes'
templates, the ``# Turns`` section, the compaction markers, the profile's note prompts), and
``refuse_copies`` refuses a turn whose final (a verdict's reason) or thought is mostly a span of
one of them, as ``parse_turn`` refuses one that only echoes a placeholder: the turn is asked again.

A copy is measured on the texts with their whitespace collapsed and their case folded: the runs
of at least COPIED_RUN_MIN_CHARS characters the answer shares, in order, with the runtime text's
fixed words (its placeholders match nothing) must cover COPIED_WORDS_MIN_SHARE of the answer, be
COPIED_WORDS_MIN_CHARS or more, and come from one stretch of it at most COPIED_STRETCH_RATIO
times the answer's length. Spans of several texts count together: smollm2-135m ended a request
``done`` on the final "..." after a thought stitched from two re-ask notes, neither of which made
up 60 % of it alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache

from aerix.domain import bounds
from aerix.domain.compaction import TOOL_RESULT_MARKER, TURN_MARKER
from aerix.domain.templates import fixed_parts
from aerix.domain.turn_notes import (
    CHANGE_NEXT_NOTE,
    CHANGED_NEXT_NOTE,
    CUT_TURN_NOTE,
    DROPPED_CALLS_NOTE,
    INVALID_TURN_NOTE,
    NO_CHANGE_NOTE,
    NO_PIECE_NOTE,
    STOPPED_TURN_NOTE,
)
from aerix.domain.turns import Turn, TurnParseError, render_turns_section

#: The prompts whose text the runtime adds to a context as a note, and what each is.
NOTE_PROMPTS: Mapping[str, str] = {
    "planner": "the planner's note",
    "compacted": "the note after a compaction",
    "retry": "the note after a failed verification",
}
#: Where nothing of the answer may match: a template's placeholder.
_GAP = "\0"
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class RuntimeText:
    """One text the runtime writes, as a template; ``what`` names it in the refusal."""

    what: str
    template: str


def runtime_texts(note_prompts: Mapping[str, str]) -> tuple[RuntimeText, ...]:
    """Every text the runtime writes into an agent's context; ``note_prompts``: the texts of
    NOTE_PROMPTS in use (the profile's, or the release's)."""
    return (
        RuntimeText("the note after a cut answer", CUT_TURN_NOTE),
        RuntimeText("the note after a stopped answer", STOPPED_TURN_NOTE),
        RuntimeText("the note after an answer that was not a valid turn", INVALID_TURN_NOTE),
        RuntimeText("the note about dropped calls", DROPPED_CALLS_NOTE),
        RuntimeText("the note on the next step of a change", CHANGE_NEXT_NOTE),
        RuntimeText("the note on the next step after a change", CHANGED_NEXT_NOTE),
        RuntimeText("the note on a final with no file changed", NO_CHANGE_NOTE),
        RuntimeText("the note on a final with nothing handed out", NO_PIECE_NOTE),
        RuntimeText("the # Turns section and its examples", render_turns_section()),
        RuntimeText("a compaction marker", TOOL_RESULT_MARKER),
        RuntimeText("a compaction marker", TURN_MARKER),
        *(RuntimeText(NOTE_PROMPTS[name], text) for name, text in note_prompts.items()),
    )


def refuse_copies(turn: Turn, texts: Sequence[RuntimeText], *, verifier: bool = False) -> None:
    """Raise ``TurnParseError`` when the turn's final (a verdict's reason) or its thought copies
    one of ``texts``; the final is named first, as ``parse_turn`` names it first. A final long
    enough to be judged (COPIED_WORDS_MIN_CHARS) that is the model's own words stands whatever
    its thought copies: the 1.5B, its edit made, thought the next-step note back and answered
    what it had changed; refused, it went on to add a function nobody asked for. A shorter
    final ("...", after a thought stitched from two re-ask notes) is judged by its thought."""
    answer = turn.verdict.reason if turn.verdict is not None else turn.final
    copied = copied_text(answer, texts) if answer is not None else None
    if copied is not None:
        raise TurnParseError(copied_final(copied), verifier=verifier)
    if answer is not None and len(_plain(answer).strip()) >= bounds.COPIED_WORDS_MIN_CHARS:
        return
    copied = copied_text(turn.thought, texts)
    if copied is not None:
        raise TurnParseError(copied_thought(copied), verifier=verifier)


def copied_final(what: str) -> str:
    return f"the final copies the runtime's own words ({what}); write your own answer"


def copied_thought(what: str) -> str:
    return f"the thought copies the runtime's own words ({what}); write your own reasoning"


def copied_text(text: str, texts: Sequence[RuntimeText]) -> str | None:
    """What ``text`` copies: the first of ``texts`` it is mostly a span of, else the texts whose
    spans together make up most of it (a model that saw two notes stitched them), or None."""
    plain = _plain(text).strip()
    if len(plain) < bounds.COPIED_WORDS_MIN_CHARS:
        return None
    needed = max(bounds.COPIED_WORDS_MIN_CHARS, bounds.COPIED_WORDS_MIN_SHARE * len(plain))
    shared = {runtime: _shared_at_most(plain, _fixed_words(runtime.template)) for runtime in texts}
    if sum(shared.values()) < needed:
        return None  # too little in common with all of them together: no need to align
    spans: dict[str, list[tuple[int, int]]] = {}
    for runtime in texts:
        if shared[runtime] < bounds.COPIED_RUN_MIN_CHARS:
            continue
        copied = _copied_span(plain, _fixed_words(runtime.template))
        if _covered(copied) >= needed:
            return runtime.what
        if copied:
            spans.setdefault(runtime.what, []).extend(copied)
    # The fewest texts that make up the copy, the most copied first, each adding at least
    # COPIED_WORDS_MIN_CHARS of its own (the runtime's texts share phrases, and any answer may
    # share a few words with each): name what was stitched.
    named: list[str] = []
    runs: list[tuple[int, int]] = []
    while spans and _covered(runs) < needed:
        what = max(spans, key=lambda name: _covered(runs + spans[name]))
        if _covered(runs + spans[what]) - _covered(runs) < bounds.COPIED_WORDS_MIN_CHARS:
            break
        runs += spans.pop(what)
        named.append(what)
    return " and ".join(named) if _covered(runs) >= needed else None


def _copied_span(plain: str, fixed: str) -> list[tuple[int, int]]:
    """The runs (start in ``plain``, length) of COPIED_RUN_MIN_CHARS or more that ``plain``
    shares with the one stretch of ``fixed``, at most COPIED_STRETCH_RATIO times ``plain``'s
    length, that it shares the most with."""
    blocks = [
        block
        for block in SequenceMatcher(None, plain, fixed, autojunk=False).get_matching_blocks()
        if block.size >= bounds.COPIED_RUN_MIN_CHARS
    ]
    longest = bounds.COPIED_STRETCH_RATIO * len(plain)
    best: list[tuple[int, int]] = []
    for first, start in enumerate(blocks):
        within = [(b.a, b.size) for b in blocks[first:] if b.b + b.size - start.b <= longest]
        if _covered(within) > _covered(best):
            best = within
    return best


def _covered(runs: Sequence[tuple[int, int]]) -> int:
    """How many characters the runs cover, each counted once."""
    covered, reach = 0, 0
    for start, size in sorted(runs):
        covered += max(0, start + size - max(reach, start))
        reach = max(reach, start + size)
    return covered


@cache
def _fixed_words(template: str) -> str:
    return _GAP.join(_plain(part) for part in fixed_parts(template))


@cache
def _runs(fixed: str) -> frozenset[str]:
    """Every run of COPIED_RUN_MIN_CHARS characters in ``fixed``."""
    size = bounds.COPIED_RUN_MIN_CHARS
    return frozenset(fixed[start : start + size] for start in range(len(fixed) - size + 1))


def _shared_at_most(plain: str, fixed: str) -> int:
    """How many of ``plain``'s characters lie in a run it shares with ``fixed``: at least what
    any alignment of the two can copy, found in one pass."""
    size, runs = bounds.COPIED_RUN_MIN_CHARS, _runs(fixed)
    covered, reach = 0, 0
    for start in range(len(plain) - size + 1):
        if plain[start : start + size] in runs:
            covered += start + size - max(reach, start)
            reach = start + size
    return covered


def _plain(text: str) -> str:
    return _SPACES.sub(" ", text).casefold()

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
times the answer's length.
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
from aerix.domain.turn_notes import CUT_TURN_NOTE, DROPPED_CALLS_NOTE, INVALID_TURN_NOTE, STOPPED_TURN_NOTE
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
        RuntimeText("the # Turns section and its examples", render_turns_section()),
        RuntimeText("a compaction marker", TOOL_RESULT_MARKER),
        RuntimeText("a compaction marker", TURN_MARKER),
        *(RuntimeText(NOTE_PROMPTS[name], text) for name, text in note_prompts.items()),
    )


def refuse_copies(turn: Turn, texts: Sequence[RuntimeText], *, verifier: bool = False) -> None:
    """Raise ``TurnParseError`` when the turn's final (a verdict's reason) or its thought copies
    one of ``texts``; the final is named first, as ``parse_turn`` names it first."""
    answer = turn.verdict.reason if turn.verdict is not None else turn.final
    copied = copied_text(answer, texts) if answer is not None else None
    if copied is not None:
        raise TurnParseError(copied_final(copied), verifier=verifier)
    copied = copied_text(turn.thought, texts)
    if copied is not None:
        raise TurnParseError(copied_thought(copied), verifier=verifier)


def copied_final(copied: RuntimeText) -> str:
    return f"the final copies the runtime's own words ({copied.what}); write your own answer"


def copied_thought(copied: RuntimeText) -> str:
    return f"the thought copies the runtime's own words ({copied.what}); write your own reasoning"


def copied_text(text: str, texts: Sequence[RuntimeText]) -> RuntimeText | None:
    """The first of ``texts`` that ``text`` is mostly a span of, or None."""
    plain = _plain(text).strip()
    if len(plain) < bounds.COPIED_WORDS_MIN_CHARS:
        return None
    return next((runtime for runtime in texts if _copies(plain, runtime.template)), None)


def _copies(plain: str, template: str) -> bool:
    fixed = _fixed_words(template)
    needed = max(bounds.COPIED_WORDS_MIN_CHARS, bounds.COPIED_WORDS_MIN_SHARE * len(plain))
    if len(fixed) < needed or _shared_at_most(plain, fixed) < needed:
        return False  # too little in common to be a copy: no need to align the two
    blocks = [
        block
        for block in SequenceMatcher(None, plain, fixed, autojunk=False).get_matching_blocks()
        if block.size >= bounds.COPIED_RUN_MIN_CHARS
    ]
    if sum(block.size for block in blocks) < needed:
        return False
    longest = bounds.COPIED_STRETCH_RATIO * len(plain)
    for first, start in enumerate(blocks):
        within = [block for block in blocks[first:] if block.b + block.size - start.b <= longest]
        if sum(block.size for block in within) >= needed:
            return True
    return False


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

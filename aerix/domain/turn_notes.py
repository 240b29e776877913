"""What the runtime tells a model about a turn it could not take as it was.

Each note is a template (``aerix.domain.templates``): the code fills its ``{placeholders}``, and
``aerix.domain.runtime_words`` reads its fixed words to refuse an answer that copies them.

- the re-ask after an answer cut at ``max_new_tokens``, or stopped while it degenerated
  (``aerix.app.agent.asking``), both asking for a shorter answer;
- the re-ask after an answer that is not a valid turn (``TurnParseError``'s message);
- the note after the calls a turn had past ``MAX_CALLS_PER_TURN`` were dropped;
- the next step, after each turn's results, for an agent whose work is a change to files
  (``CHANGE_NEXT_NOTE``, or ``CHANGED_NEXT_NOTE`` after a turn whose changes were all made).
  Measured on qwen2.5-coder-1.5b (docs/agent-loop.md): without it the model answered its second
  turn with a copy of its first (the same ``read`` of the file it had just read) until the
  repeat rule ended it; with it, the second turn wrote the whole file.
"""

from __future__ import annotations

from collections.abc import Sequence

from aerix.domain import bounds
from aerix.domain.templates import fill

CUT_TURN_NOTE = (
    "Your last answer was cut off at {max_new_tokens} tokens, before its JSON object closed, and was "
    "removed. Answer again, shorter (at most {next_ask} tokens): a brief thought and fewer or smaller "
    "calls (write a long file in several steps)."
)
STOPPED_TURN_NOTE = (
    "Your last answer was stopped after {tokens} tokens because it was going nowhere ({reason}), and "
    "was removed. Answer again, shorter (at most {next_ask} tokens) and without repeating yourself: a "
    "brief thought and fewer or smaller calls."
)
INVALID_TURN_NOTE = (
    "Your answer was not a valid turn: {problem}. Answer again with exactly one JSON object: "
    '{"thought": "...", "calls": [{"tool": "<name>", "input": {...}}]} or '
    '{"thought": "...", "final": {final}}.'
)
DROPPED_CALLS_NOTE = (
    "{dropped} calls after the first {kept} were dropped and not run ({names}); call them again in your "
    "next turn if you still need them."
)
CHANGE_NEXT_NOTE = (
    "Next: if the change the request asks for is not made yet, make it now by writing the whole new file: "
    '{"thought": ..., "calls": [{"tool": "write", "input": {"path": ..., "content": ...}}]}. '
    'When it is made and checked, answer {"thought": ..., "final": ...}.'
)
#: The next step after a turn whose every write and edit was made: with CHANGE_NEXT_NOTE there
#: ("make it now by writing the whole new file"), the 1.5B sent the write it had just made once
#: more, word for word, a whole file's tokens decoded to be told "already answered".
CHANGED_NEXT_NOTE = (
    "Next: your change is made. If the request needs nothing more, answer "
    '{"thought": ..., "final": ...} now; if it does, make the next change.'
)
#: Told once to a change root whose final came before it changed any file.
NO_CHANGE_NOTE = (
    "You have not changed any file yet. If the request needs a change, make it now by writing the whole "
    "new file; if it needs none, give your final again and say why."
)
#: Told once to a planner of a change whose final came before any piece ran or any file changed.
NO_PIECE_NOTE = (
    "Nothing has been changed yet: no agent has made the change the request asks for. If it needs a "
    "change, hand it to an agent now: an agent call whose brief says the whole change and which files "
    "it is in. If it needs none, give your final again and say why."
)
#: What ``{final}`` shows in INVALID_TURN_NOTE: a text, or a verifier's verdict.
_FINAL_SHAPES = {False: '"..."', True: '{"verdict": "pass" or "fail", "reason": "..."}'}


def cut_turn_note(max_new_tokens: int, next_ask: int) -> str:
    return fill(CUT_TURN_NOTE, {"max_new_tokens": max_new_tokens, "next_ask": next_ask})


def stopped_turn_note(tokens: int, reason: str, next_ask: int) -> str:
    return fill(STOPPED_TURN_NOTE, {"tokens": tokens, "reason": reason, "next_ask": next_ask})


def turn_retry_message(problem: str, *, verifier: bool = False) -> str:
    """The text sent back to a model whose turn did not parse."""
    return fill(INVALID_TURN_NOTE, {"problem": problem, "final": _FINAL_SHAPES[verifier]})


def next_step_note(change_failed: Sequence[bool], *, has_changed: bool) -> str:
    """The next step of a change agent, from whether each write or edit of its last turn failed
    and whether it has changed a file in this run: CHANGED_NEXT_NOTE once a change is made and the
    last turn's changes (if any) all were, CHANGE_NEXT_NOTE otherwise. A turn of checks keeps
    the change made: told "make it now" after its ``python pig_latin.py`` printed nothing, the
    1.5B wrote the same file again, checked again, and so on until the repeated-change rule."""
    if change_failed:
        return CHANGE_NEXT_NOTE if any(change_failed) else CHANGED_NEXT_NOTE
    return CHANGED_NEXT_NOTE if has_changed else CHANGE_NEXT_NOTE


def dropped_calls_note(names: list[str]) -> str:
    """The calls past MAX_CALLS_PER_TURN, by tool name, were not run."""
    values = {"dropped": len(names), "kept": bounds.MAX_CALLS_PER_TURN, "names": ", ".join(names)}
    return fill(DROPPED_CALLS_NOTE, values)

"""A final or a thought that copies the runtime's own words is refused: the pure check over every
text the runtime writes, and a request whose every answer copies the re-ask note, through the
real ``aerix -p`` and daemon, ending ``failed`` with a line that says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aerix.adapters.prompts import EmbeddedPrompts
from aerix.domain import bounds
from aerix.domain.compaction import marker_text
from aerix.domain.runtime_words import NOTE_PROMPTS, RuntimeText, copied_text, refuse_copies, runtime_texts
from aerix.domain.segments import ContextSegment, SegmentKind
from aerix.domain.templates import fill
from aerix.domain.turn_notes import (
    NO_CHANGE_NOTE,
    NO_PIECE_NOTE,
    cut_turn_note,
    dropped_calls_note,
    stopped_turn_note,
    turn_retry_message,
)
from aerix.domain.turns import Turn, TurnParseError, Verdict, render_turns_section
from tests.aerix.request_world import (
    aerix,
    make_world,
    scripted_project,
    session_events,
    start_scripted_pool,
    stop_pool,
)

RELEASE_NOTES = {name: EmbeddedPrompts().get(name) for name in NOTE_PROMPTS}
TEXTS = runtime_texts(RELEASE_NOTES)
#: What smollm2-135m answered setup's main job with (the issue's words).
COPIED_NOTE = (
    "Your last answer was stopped after 125 tokens because it was going nowhere … Answer again, shorter"
)


def _what(text: str, texts: tuple[RuntimeText, ...] = TEXTS) -> str | None:
    return copied_text(text, texts)


def _segment(kind: SegmentKind) -> ContextSegment:
    return ContextSegment("a1.c4", "user", kind, "text", tokens=412, call="c4", tool="grep")


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (COPIED_NOTE, "the note after a stopped answer"),
        (
            stopped_turn_note(71, "the same 2-token span repeated 33 times", 1024),
            "the note after a stopped answer",
        ),
        (cut_turn_note(2048, 1024), "the note after a cut answer"),
        (
            "Your last answer was cut off at 512 tokens, before its JSON object closed",
            "the note after a cut answer",
        ),
        (turn_retry_message("no JSON object found"), "the note after an answer that was not a valid turn"),
        (dropped_calls_note(["read", "write", "read"]), "the note about dropped calls"),
        (NO_CHANGE_NOTE, "the note on a final with no file changed"),
        (
            "You have not changed any file yet. If the request needs a change, make it now",
            "the note on a final with no file changed",
        ),
        (NO_PIECE_NOTE, "the note on a final with nothing handed out"),
        (
            "Nothing has been changed yet: no agent has made the change the request asks for.",
            "the note on a final with nothing handed out",
        ),
        (marker_text(_segment(SegmentKind.TOOL_RESULT)), "a compaction marker"),
        (marker_text(_segment(SegmentKind.ASSISTANT)), "a compaction marker"),
        (
            "Answer every turn with exactly one JSON object and nothing before or after it.",
            "the # Turns section and its examples",
        ),
        ("what you did and what you checked", "the # Turns section and its examples"),
        (
            fill(RELEASE_NOTES["planner"], {"tools": "repo_map, agent, plan and context"}),
            "the planner's note",
        ),
        ("Some earlier tool results and turns were replaced by markers", "the note after a compaction"),
        (
            fill(RELEASE_NOTES["retry"], {"reason": "the test still fails"}),
            "the note after a failed verification",
        ),
    ],
)
def test_a_text_that_is_mostly_a_span_of_a_runtime_text_is_a_copy(text: str, what: str) -> None:
    assert _what(text) == what
    # Whitespace and case do not hide a copy.
    assert _what(" ".join(text.upper().split()).replace(" ", "\n  ")) == what


@pytest.mark.parametrize(
    "text",
    [
        "The file was removed.",  # shares " was removed." with a note: too little to be a copy
        "greet.py defines greet(name), which returns a greeting; main() prints it for the argument.",
        "I read calc.py: it adds two numbers. I checked by running python calc.py 2 3, which printed 5.",
        "I did what you asked and checked it by running the tests.",
        # A thought that says what happened in its own words, quoting a little of the note.
        "My last answer was cut off, so I'll write a brief thought and fewer calls.",
        "Answer again? No: the tests pass, and the README now documents the --verbose flag.",
        # The final the no-change notes ask for: again, and why, in the model's own words.
        "No change is needed: add() already returns a + b, and add(2, 3) prints 5.",
        "x = 1\n" * 500,
        "",
    ],
)
def test_an_answer_in_its_own_words_is_not_a_copy(text: str) -> None:
    assert _what(text) is None


def test_a_copy_must_be_mostly_the_runtime_s_words() -> None:
    own = " I then read greet.py: it prints a greeting for the name it is given on its command line."
    assert _what(COPIED_NOTE + own) is None  # the note is under 60 % of it
    assert len(COPIED_NOTE) < bounds.COPIED_WORDS_MIN_SHARE * len(COPIED_NOTE + own)
    assert _what(COPIED_NOTE + " I read greet.py.") == "the note after a stopped answer"


def test_phrases_picked_from_all_over_a_long_text_are_no_span_of_it() -> None:
    """Two far-apart sentences of the # Turns section, joined: not one span of it."""
    section = render_turns_section()
    first = "Answer every turn with exactly one JSON object"
    last = "A verifier's final is a verdict instead of text"
    assert first in section and last in section
    assert _what(f"{first}. {last}.") is None


def test_spans_of_two_runtime_texts_stitched_together_are_a_copy() -> None:
    """smollm2-135m's thought on "Say hello in one short sentence.": the start of the stopped-answer
    note, then the end of the invalid-turn note; neither alone is 60 % of it."""
    stopped = stopped_turn_note(96, "the same 3-token span repeated 20 times", 256)
    invalid = turn_retry_message("the final says nothing (not one word in it); write your answer")
    first = stopped[: stopped.index(" and was removed")]
    last = invalid[invalid.index("Answer again with exactly") :]
    thought = f"{first}. {last}"
    # Either part with as many words of the model's own is not a copy.
    assert _what(first + " I will greet the user with one short and friendly sentence now." * 3) is None
    assert _what("I will greet the user with one short, friendly sentence. " * 2 + last) is None
    assert _what(thought) == (
        "the note after an answer that was not a valid turn and the note after a stopped answer"
    )
    turn = Turn(thought=thought, final="Hello!")
    with pytest.raises(TurnParseError) as raised:
        refuse_copies(turn, TEXTS)
    assert raised.value.problem.startswith(
        "the thought copies the runtime's own words (the note after an answer"
    )


def test_own_words_around_short_quotes_of_two_notes_are_not_a_copy() -> None:
    thought = (
        "My last answer was stopped because it was going nowhere, and it was not a valid turn, so "
        "this time I read greet.py first and then answer with what its main function prints."
    )
    assert _what(thought) is None


def test_the_prompts_in_use_are_the_ones_checked() -> None:
    """A profile's edited planner note is what its agents see, so that is the text refused."""
    edited = {**RELEASE_NOTES, "planner": "Plan the work in small steps and hand each one to an agent call."}
    texts = runtime_texts(edited)
    assert (
        _what("Plan the work in small steps and hand each one to an agent call.", texts)
        == "the planner's note"
    )
    release_planner = fill(RELEASE_NOTES["planner"], {"tools": "repo_map and agent"})
    assert _what(release_planner, texts) is None


def test_a_refused_final_is_named_before_the_thought_and_a_verdict_s_reason_counts() -> None:
    turn = Turn(thought=cut_turn_note(512, 256), final=COPIED_NOTE)
    with pytest.raises(TurnParseError) as raised:
        refuse_copies(turn, TEXTS)
    assert raised.value.problem.startswith(
        "the final copies the runtime's own words (the note after a stopped"
    )
    with pytest.raises(TurnParseError) as raised:
        refuse_copies(Turn(thought=cut_turn_note(512, 256), final="done"), TEXTS)
    assert raised.value.problem == (
        "the thought copies the runtime's own words (the note after a cut answer); write your own reasoning"
    )
    verdict = Turn(thought="Checked.", verdict=Verdict("pass", COPIED_NOTE))
    with pytest.raises(TurnParseError) as raised:
        refuse_copies(verdict, TEXTS, verifier=True)
    assert '"verdict"' in raised.value.message
    refuse_copies(Turn(thought="Read it.", final="a.txt holds one line"), TEXTS)  # no error
    # A final in its own words, long enough to be judged, stands whatever its thought copies.
    own = "I changed add() in calc.py to return a + b instead of a - b."
    refuse_copies(Turn(thought=cut_turn_note(512, 256), final=own), TEXTS)


@pytest.mark.e2e
def test_a_request_whose_every_answer_copies_the_re_ask_note_ends_failed_saying_so(tmp_path: Path) -> None:
    world = make_world(tmp_path / "world", {"context": {"max_new_tokens": 256}})
    proj, socket = scripted_project(tmp_path)
    copy = json.dumps({"thought": "Done.", "final": COPIED_NOTE})
    start_scripted_pool(world, socket, ["answer", copy, copy, copy])
    try:
        done = aerix(world, proj, "-p", "What does a.txt hold?", "--output-format", "json")
    finally:
        stop_pool(world, socket)
    assert done.returncode == bounds.EXIT_FAILED, done.stderr
    result = json.loads(done.stdout)
    refusal = (
        "the final copies the runtime's own words (the note after a stopped answer); write your own answer"
    )
    reason = f"turn 1 was asked 3 times and never parsed: {refusal}"
    assert (result["outcome"], result["is_error"]) == ("failed", True)
    [line] = [line for line in done.stderr.splitlines() if line.startswith("aerix: failed")]
    assert line.startswith(f"aerix: failed: {reason} · route answer")
    events = session_events(world, result["session_id"])
    attempts = [e for e in events if e["type"] == "message" and e["role"] == "assistant"]
    assert [(e["attempt"], e["parse_error"]) for e in attempts] == [(n, refusal) for n in range(3)]
    assert not any("final" in e for e in attempts)
    [end] = [e for e in events if e["type"] == "agent.end"]
    assert (end["outcome"], end["reason"]) == ("failed", reason)

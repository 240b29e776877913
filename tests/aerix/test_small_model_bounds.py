"""The pure rules behind aerix's own bounds for small models: the repeat watch and the shorter
re-ask (the degeneration guard is the pool's: tests/caldrix/test_degeneration.py)."""

from __future__ import annotations

from typing import Any

from aerix.domain import bounds
from aerix.domain.compaction import retry_ask
from aerix.domain.repeats import RepeatCheck, RepeatWatch, changes_things
from aerix.domain.turns import ToolCall


def test_a_retry_asks_half_but_never_under_the_cut_minimum() -> None:
    assert [retry_ask(n) for n in (2048, 512, 100, 64)] == [1024, 256, 64, 64]
    assert bounds.CUT_RETRY_DIVISOR == 2 and bounds.MIN_CUT_TURN_TOKENS == 64


def _call(number: int, tool: str, **tool_input: Any) -> ToolCall:
    return ToolCall(f"c{number}", tool, tool_input)


def test_a_call_repeated_from_the_previous_turn_is_unchanged_since_the_one_that_ran() -> None:
    watch = RepeatWatch()
    assert watch.check([_call(1, "read", path="a"), _call(2, "grep", pattern="x")]).unchanged == {}
    second = watch.check([_call(3, "grep", pattern="x"), _call(4, "read", path="b")])
    assert (second.unchanged, second.failure) == ({"c3": "c2"}, None)
    # Two turns back does not count: only the previous turn's calls.
    assert watch.check([_call(5, "read", path="a")]).unchanged == {}


def test_the_same_input_in_another_key_order_is_the_same_call() -> None:
    watch = RepeatWatch()
    watch.check([ToolCall("c1", "grep", {"pattern": "x", "path": "src"})])
    assert watch.check([ToolCall("c2", "grep", {"path": "src", "pattern": "x"})]).unchanged == {"c2": "c1"}


def test_a_change_after_a_call_or_before_its_repeat_makes_it_a_new_question() -> None:
    watch = RepeatWatch()
    watch.check([_call(1, "read", path="a"), _call(2, "edit", path="a", old_string="1", new_string="2")])
    # The read came before the edit: its result may have changed. The edit itself repeats.
    assert watch.check([_call(3, "read", path="a")]).unchanged == {}
    again = watch.check([_call(4, "write", path="b", content=""), _call(5, "read", path="a")])
    assert again.unchanged == {}  # the write ran first in this turn
    assert watch.check([_call(6, "read", path="a"), _call(7, "write", path="b", content="")]).unchanged == {
        "c6": "c5",
        "c7": "c4",
    }


def test_the_third_identical_turn_in_a_row_fails_and_a_reset_forgets() -> None:
    watch = RepeatWatch()
    looking = [_call(1, "read", path="README.md")]
    assert watch.check(looking).failure is None
    assert watch.check([_call(2, "read", path="README.md")]).failure is None
    third = watch.check([_call(3, "read", path="README.md")])
    assert third.unchanged == {"c3": "c1"}
    assert (
        third.failure == 'the same call 3 turns in a row, unchanged since call c1: read {"path": "README.md"}'
    )
    watch.reset()  # say a background job reported: the same read is worth running again
    assert watch.check([_call(4, "read", path="README.md")]) == RepeatCheck({})


def test_only_looking_calls_change_nothing() -> None:
    assert not changes_things(_call(1, "read", path="a"))
    assert not changes_things(_call(1, "plan", op="read"))
    assert not changes_things(_call(1, "context", op="status"))
    assert changes_things(_call(1, "plan", op="write", text="x"))
    assert changes_things(_call(1, "context", op="drop", ids=["a1.c1"]))
    assert all(changes_things(_call(1, tool)) for tool in ("bash", "write", "edit", "agent"))


def test_the_reason_names_a_long_repeated_call_shortened_to_one_line() -> None:
    watch = RepeatWatch()
    content = "This is a new version of your favorite game. " * 10
    for number in (1, 2, 3):
        check = watch.check([_call(number, "write", path="w.txt", content=content)])
    assert check.failure is not None
    shown = check.failure.split(": ", 1)[1]
    assert shown.startswith('write {"content": "This is a new version') and shown.endswith("…")
    assert len(shown) == bounds.REPEATED_CALL_SHOWN_CHARS

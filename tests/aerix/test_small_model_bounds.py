"""The pure rules behind aerix's own bounds for small models: the repeat watch, the failing-call
watch and the shorter re-ask (the degeneration guard is the pool's:
tests/caldrix/test_degeneration.py)."""

from __future__ import annotations

from typing import Any

from aerix.domain import bounds
from aerix.domain.compaction import retry_ask
from aerix.domain.repeats import (
    FailureWatch,
    RepeatCheck,
    RepeatWatch,
    changes_things,
    twin_result,
    twins_in_turn,
)
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


def test_the_same_call_failing_three_times_in_a_run_fails_even_when_alternated() -> None:
    watch = FailureWatch()
    a = _call(1, "agent", brief="x", check="y")
    b = _call(2, "read", path="missing.txt")
    missing = "error: no such file: missing.txt"
    unknown = "error: no agent definition named 'The function' (definitions: none are installed)"
    assert [watch.check([(call, text, True)]) for call, text in ((a, unknown), (b, missing))] == [None, None]
    assert watch.check([(a, unknown, True)]) is None
    assert watch.check([(b, missing, True)]) is None
    # A, B, A, B, A: no turn repeats the one before it, and A has failed three times.
    assert watch.check([(_call(5, "agent", check="y", brief="x"), unknown, True)]) == (
        'the same failing call 3 times: agent {"brief": "x", "check": "y"} '
        "(error: no agent definition named 'The function' (definitions: none are installed))"
    )
    assert bounds.REPEATED_FAILURES == 3


def test_a_success_of_the_call_clears_its_failures() -> None:
    watch = FailureWatch()
    read = _call(1, "read", path="x.txt")
    assert watch.check([(read, "error: no such file: x.txt", True)]) is None
    assert watch.check([(read, "error: no such file: x.txt", True)]) is None
    assert watch.check([(_call(2, "write", path="x.txt", content=""), "created x.txt", False)]) is None
    assert watch.check([(read, "1\tx", False)]) is None  # it worked: what failed before is history
    assert watch.check([(read, "error: no such file: x.txt", True)]) is None
    assert watch.check([(read, "error: no such file: x.txt", True)]) is None
    # Another input is another call; a result that is no error counts for nothing.
    assert watch.check([(_call(3, "read", path="y.txt"), "error: no such file: y.txt", True)]) is None
    assert watch.check([(_call(4, "bash", command="false"), "[exit 1]", False)] * 5) is None


def test_the_failing_call_and_its_error_are_shown_shortened() -> None:
    watch = FailureWatch(limit=1)
    content = "A whole solution written into the wrong field. " * 10
    reason = watch.check(
        [(_call(1, "agent", brief="b", check="c", definition=content), "error: x\n" * 80, True)]
    )
    assert reason is not None
    shown_call, shown_error = reason.removeprefix("the same failing call 1 times: ").split(" (error: ", 1)
    assert shown_call.startswith('agent {"brief": "b", "check": "c", "definition": "A whole solution')
    assert len(shown_call) == bounds.REPEATED_CALL_SHOWN_CHARS and shown_call.endswith("…")
    # The error on one line, cut the same way, in its brackets.
    shown_error = "error: " + shown_error.removesuffix(")")
    assert shown_error.startswith("error: x error: x") and shown_error.endswith("…")
    assert len(shown_error) == bounds.REPEATED_CALL_SHOWN_CHARS


def test_a_call_repeating_an_earlier_one_of_its_turn_runs_once_except_bash() -> None:
    brief = {"brief": "Fix add() in calc.py.", "check": "add(2, 3) is 5"}
    calls = [
        _call(1, "agent", **brief),
        _call(2, "read", path="calc.py"),
        _call(3, "agent", **dict(reversed(brief.items()))),
        _call(4, "bash", command="echo x >> log"),
        _call(5, "bash", command="echo x >> log"),
        _call(6, "agent", **brief),
        _call(7, "read", path="calc.py", limit=5),
    ]
    assert twins_in_turn(calls) == {"c3": "c1", "c6": "c1"}
    assert twin_result("agent", "c1") == (
        "the same agent with the same input as call c1 in this turn, so it ran once: see that result"
    )

"""A turn that copies a call of the turn before it makes the next turn sampled, not greedy: under
greedy decoding the same context gives the same turn (qwen2.5-coder-1.5b sent the same read,
thought and all, until the repeat rule ended it). Run on the real pool with a scripted member;
the pool takes the sampling the turn is asked with, and the turn's event records it."""

from __future__ import annotations

import pytest

from aerix.domain import bounds
from aerix.domain.repeats import Sampling, copies_previous, copy_sampling
from aerix.domain.turns import ToolCall
from tests.aerix.agent_harness import Make, final, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def _call(call_id: str, tool: str, **tool_input: str) -> ToolCall:
    return ToolCall(call_id, tool, tool_input)


def test_a_turn_copies_when_one_call_has_the_same_tool_and_input_as_the_turn_before() -> None:
    before = [_call("c1", "read", path="a.py"), _call("c2", "bash", command="ls")]
    assert copies_previous([_call("c3", "read", path="a.py")], before)
    assert copies_previous(
        [_call("c3", "write", path="b.py", content="x"), _call("c4", "bash", command="ls")], before
    )
    assert not copies_previous([_call("c3", "read", path="b.py")], before)
    assert not copies_previous([_call("c3", "read", path="a.py")], [])
    assert copy_sampling(7) == Sampling(bounds.COPY_TEMPERATURE, bounds.COPY_TOP_K, bounds.COPY_TOP_P, seed=7)


async def test_the_turn_after_a_copied_call_is_sampled_and_the_one_after_a_new_call_is_not(
    make: Make,
) -> None:
    run = await make(
        [
            turn("Look.", ("read", {"path": "a.txt"})),
            turn("Look.", ("read", {"path": "a.txt"})),  # copied: held as unchanged
            turn("Change it.", ("write", {"path": "a.txt", "content": "two\n"})),  # sampled
            turn("Check it.", ("bash", {"command": "cat a.txt"})),  # greedy again
            final("Done.", "a.txt holds two"),
        ]
    )
    (run.cwd / "a.txt").write_text("one\n")
    result = await run.run(makes_changes=True)
    assert result.outcome == "done"
    assert [(m.turn, m.sampled_at) for m in run.messages()] == [
        (1, None),
        (2, None),
        (3, bounds.COPY_TEMPERATURE),
        (4, None),
        (5, None),
    ]
    assert (run.cwd / "a.txt").read_text() == "two\n"
    await run.assert_log_rebuilds_the_context()


async def test_a_write_that_failed_and_was_sent_again_makes_the_next_turn_sampled(make: Make) -> None:
    broken = turn("Write it.", ("write", {"path": "a.py", "content": "def f(:\n"}))
    run = await make(
        [
            broken,
            broken,
            turn("Write it.", ("write", {"path": "a.py", "content": "x = 1\n"})),
            final("Done.", "a.py set"),
        ]
    )
    result = await run.run(makes_changes=True)
    assert result.outcome == "done"
    assert [m.sampled_at for m in run.messages()] == [None, None, bounds.COPY_TEMPERATURE, None]
    assert [m.is_error for m in run.messages("tool")] == [True, True, False]

"""Context management in the loop against the real daemon: compaction with markers, tool
output caps and the spool, fitting a result to the room left, the context floor, the context
tool's ops and the plan tool. After each run the context projection over the session log must
hold exactly what the pool holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.pool.client import CaldrixPool
from aerix.domain import events as ev
from aerix.domain.compaction import ContextBudget
from tests.aerix.agent_harness import (
    SYSTEM_TEXT,
    Make,
    OpeningSegment,
    final,
    opening,
    settings_with,
    turn,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def _write_lines(path: Path, lines: int, words: str = "alpha beta gamma delta epsilon") -> str:
    text = "".join(f"{words} {n}\n" for n in range(lines))
    path.write_text(text)
    return text


async def test_compaction_replaces_the_oldest_tool_results_with_markers(make: Make) -> None:
    run = await make(
        [
            turn("Read a.", ("read", {"path": "a.txt"})),
            turn("Read b.", ("read", {"path": "b.txt"})),
            turn("Read c.", ("read", {"path": "c.txt"})),
            final("All read.", "three files"),
        ],
        ctx=1024,
    )
    for name in ("a.txt", "b.txt", "c.txt"):
        _write_lines(run.cwd / name, 28)
    settings = settings_with(max_new_tokens=128)
    budget = ContextBudget.from_settings(run.window, settings.context)
    result = await run.run(settings=settings)
    assert result.outcome == "done"
    [compaction, *_] = run.of(ev.Compaction)
    assert compaction.trigger == "auto"
    before = compaction.tokens_before
    assert before > budget.soft_limit or before + budget.ask >= budget.window
    assert compaction.tokens_after <= budget.target
    first = compaction.replaced[0]
    assert first.id == "a1.c1"
    assert first.marker.startswith("[compacted tool result of call c1 (read, ")
    original = next(s for s in run.of(ev.Segment) if s.id == "a1.c1")
    assert first.marker == f"[compacted tool result of call c1 (read, {original.tokens} tokens)]"
    assert first.tokens is not None and original.tokens is not None and first.tokens < original.tokens / 4
    pool = {s["id"]: s for s in await run.pool_segments()}
    assert pool["a1.c1"]["text"] == first.marker
    notes = [s for s in run.of(ev.Segment) if s.label == "note"]
    assert notes and notes[0].text.startswith("Some earlier tool results and turns were replaced by markers")
    await run.assert_log_rebuilds_the_context()


async def test_a_result_over_its_tool_cap_is_cut_and_spooled_whole(make: Make) -> None:
    run = await make([turn("Read it.", ("read", {"path": "big.txt"})), final("Read.", "cut")])
    _write_lines(run.cwd / "big.txt", 80)
    await run.run(settings=settings_with(read=400))
    [message] = run.messages("tool")
    assert message.spool is not None
    spooled = Path(message.spool).read_text()
    assert spooled.startswith(" 1\talpha beta gamma delta epsilon 0\n") and spooled.endswith("epsilon 79")
    body = message.text.removeprefix("[read c1]\n")
    assert len(body.encode()) <= 400
    head, pointer = body.rsplit("\n", 1)
    assert spooled.startswith(head + "\n")
    hidden = len(spooled.encode()) - len(head.encode()) - 1  # the head was cut after a whole line
    assert pointer == f'[truncated: {hidden} more bytes; read with read(path="{message.spool}", offset=1)]'
    await run.assert_log_rebuilds_the_context()


async def test_a_result_is_fitted_to_the_room_the_window_leaves(make: Make) -> None:
    run = await make([turn("Read it.", ("read", {"path": "big.txt"})), final("Read.", "fitted")], ctx=1024)
    _write_lines(run.cwd / "big.txt", 150)  # about 6 KB: under read's 16,000-byte cap, over the room
    settings = settings_with(max_new_tokens=128)
    budget = ContextBudget.from_settings(run.window, settings.context)
    result = await run.run(settings=settings)
    assert result.outcome == "done"
    [message] = run.messages("tool")
    assert message.spool is not None and "[truncated: " in message.text
    result_segment = next(s for s in run.of(ev.Segment) if s.id == "a1.c1")
    assert result_segment.tokens is not None and result_segment.tokens < budget.window - budget.ask
    await run.assert_log_rebuilds_the_context()


async def _prompt_leaving(pool: CaldrixPool, member: str, room: int) -> str:
    """A prompt after which a context of SYSTEM_TEXT and it leaves ``room`` tokens (by the pool's
    count): measured, not estimated."""
    window = next(m for m in await pool.members.loaded() if m.name == member).n_ctx
    words = 10
    for _ in range(6):
        prompt = "word " * words
        counts = await pool.contexts.create(member, [s.wire() for s in opening(prompt)])
        await pool.contexts.drop(counts.context)
        left = window - 1 - counts.tokens
        if left == room:
            return prompt
        words += left - room
    raise AssertionError("could not size the prompt")


async def test_the_second_hard_limit_hit_kills_the_agent_at_the_context_floor(
    make: Make, pool: CaldrixPool, tmp_path: Path
) -> None:
    # Room for 100 tokens, less than a turn's ask (128) but more than 64: the first turn is cut
    # to the room left; its result leaves less, and the next turn hits the floor.
    run = await make(
        [turn("Look.", ("glob", {"pattern": "*"})), final("never", "never")],
        ctx=512,
        segments=[OpeningSegment("a1.system", "system", "system", SYSTEM_TEXT, True, "system")],
    )
    prompt = await _prompt_leaving(pool, run.member, 100)
    await pool.contexts.drop(run.context)
    await run.start(opening(prompt, pin_prompt=True))
    result = await run.run(settings=settings_with(max_new_tokens=128))
    assert result.outcome == "killed" and result.turns == 1
    assert result.reason is not None
    assert result.reason.startswith("context floor: no room for a turn after compacting")
    assert result.reason.endswith("hard-limit hit 2)")
    [end] = run.of(ev.AgentEnd)
    assert (end.outcome, end.reason) == ("killed", result.reason)


async def test_the_context_tool_notes_pins_summarizes_and_drops(make: Make) -> None:
    run = await make(
        [
            turn(
                "Look, and remember.",
                ("glob", {"pattern": "*"}),
                ("context", {"op": "note", "text": "check the tests"}),
            ),
            turn("Keep it.", ("context", {"op": "pin", "ids": ["a1.c1"]}), ("context", {"op": "status"})),
            turn(
                "Tidy up.",
                ("context", {"op": "drop", "ids": ["a1.system"]}),
                (
                    "context",
                    {"op": "summarize", "ids": ["a1.c1", "a1.m1", "a1.c2"], "text": "Nothing here yet."},
                ),
            ),
            turn(
                "More.",
                ("context", {"op": "drop", "ids": ["a1.c4"]}),
                ("context", {"op": "unpin", "ids": ["a1.m1"]}),
                ("context", {"op": "note", "text": "then ship"}),
            ),
            final("Tidy.", "tidied"),
        ]
    )
    result = await run.run()
    assert result.outcome == "done"
    ops = run.of(ev.ContextOp)
    assert [(o.op, o.ids, o.refused is None) for o in ops] == [
        ("note", [], True),
        ("pin", ["a1.c1"], True),
        ("status", [], True),
        ("drop", ["a1.system"], False),
        ("summarize", ["a1.m1", "a1.c1", "a1.c2"], True),
        ("drop", ["a1.c4"], True),
        ("unpin", ["a1.m1"], True),
        ("note", [], True),
    ]
    assert ops[3].refused == "drop refuses the system, instructions and scratchpad segments (a1.system)"
    assert ops[4].segment == "a1.m1" and ops[4].tokens
    results = {m.call: m.text for m in run.messages("tool")}
    assert results["c4"].startswith("[context c4]\ncontext: ")
    assert "a1.c1  glob c1" in results["c4"] and ", pinned" in results["c4"]
    assert results["c5"].startswith("[context c5]\nerror: drop refuses")
    pool = {s["id"]: s for s in await run.pool_segments()}
    assert pool["a1.scratchpad"]["text"] == "check the tests\nthen ship" and pool["a1.scratchpad"]["pinned"]
    assert pool["a1.m1"]["text"] == "Nothing here yet." and pool["a1.m1"]["role"] == "user"
    assert not pool["a1.m1"]["pinned"]
    assert "a1.c1" not in pool and "a1.c4" not in pool and "a1.system" in pool
    await run.assert_log_rebuilds_the_context()


async def test_the_plan_tool_reads_and_writes_with_a_plan_event(make: Make) -> None:
    run = await make(
        [
            turn("Plan.", ("plan", {"op": "read"}), ("plan", {"op": "write", "text": "1. look\n2. fix"})),
            turn("Check.", ("plan", {"op": "read"}), ("plan", {"op": "write"})),
            final("Planned.", "planned"),
        ]
    )
    result = await run.run()
    assert result.plan == "1. look\n2. fix"
    assert [p.text for p in run.of(ev.Plan)] == ["1. look\n2. fix"]
    texts = [m.text.split("\n", 1)[1] for m in run.messages("tool")]
    assert texts == [
        "(no plan yet; write one with op write)",
        "plan saved (2 lines)",
        "1. look\n2. fix",
        "error: plan write needs the whole new plan in text",
    ]


async def test_a_resumed_context_continues_its_turn_and_call_numbers(make: Make) -> None:
    earlier: list[Any] = [
        *opening("First request."),
        OpeningSegment("a1.m3", "assistant", "assistant", final("old", "old answer"), False, "turn 3"),
        OpeningSegment("a1.c5", "user", "tool_result", "[glob c5]\nno files match *", False, "glob c5"),
        OpeningSegment("a1.p2", "user", "prompt", "Second request.", False, "prompt 2"),
    ]
    run = await make([turn("Look.", ("glob", {"pattern": "*.md"})), final("Done.", "done")], segments=earlier)
    await run.run()
    assistant = [m for m in run.of(ev.Message) if m.role == "assistant"]
    assert [(m.turn, m.segment) for m in assistant] == [(4, "a1.m4"), (5, "a1.m5")]
    assert [m.call for m in run.messages("tool")] == ["c6"]

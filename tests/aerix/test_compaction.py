"""The compaction planner and the hard-limit rules, on hand-made segment lists."""

from __future__ import annotations

from aerix.domain.compaction import ContextBudget, check_room, marker_text, needs_compaction, plan_compaction
from aerix.domain.segments import ContextSegment, SegmentKind, SegmentRole
from aerix.domain.settings import ContextSettings

BUDGET = ContextBudget.from_settings(8192, ContextSettings())


def seg(
    id: str, kind: SegmentKind, tokens: int, pinned: bool = False, call: str | None = None
) -> ContextSegment:
    roles: dict[str, SegmentRole] = {"assistant": "assistant", "system": "system", "instructions": "system"}
    role = roles.get(kind.value, "user")
    return ContextSegment(
        id, role, kind, pinned=pinned, tokens=tokens, call=call, tool="read" if call else None
    )


def test_budget_figures() -> None:
    assert (BUDGET.soft_limit, BUDGET.target, BUDGET.ask) == (5734, 4096, 2048)
    assert ContextBudget(2000, 0.7, 0.5, 4096).ask == 500  # W / 4 wins over max_new_tokens
    assert BUDGET.room(8000) == 191 and BUDGET.room(9000) == 0


def test_when_to_compact() -> None:
    assert not needs_compaction(5734, BUDGET)
    assert needs_compaction(5735, BUDGET)  # over the soft limit
    tight = ContextBudget(1000, 0.99, 0.5, 400)  # ask 250
    assert not needs_compaction(749, tight) and needs_compaction(750, tight)  # tokens + ask must stay under W


def test_marker_text() -> None:
    assert marker_text(seg("a1.r12", SegmentKind.TOOL_RESULT, 3210, call="c12")) == (
        "[compacted tool result of call c12 (read, 3210 tokens)]"
    )
    assert (
        marker_text(seg("a1.m4", SegmentKind.ASSISTANT, 850))
        == "[compacted assistant turn a1.m4 (850 tokens)]"
    )


def test_tool_results_oldest_first_then_assistant_turns_until_the_target() -> None:
    segments = [
        seg("sys", SegmentKind.SYSTEM, 1000),
        seg("ins", SegmentKind.INSTRUCTIONS, 500),
        seg("prompt", SegmentKind.PROMPT, 300),
        seg("m1", SegmentKind.ASSISTANT, 1500),
        seg("r1", SegmentKind.TOOL_RESULT, 3000, call="c1"),
        seg("m2", SegmentKind.ASSISTANT, 400),
        seg("r2", SegmentKind.TOOL_RESULT, 200, pinned=True, call="c2"),
        seg("r3", SegmentKind.TOOL_RESULT, 20, call="c3"),  # too small to bother
        seg("r4", SegmentKind.TOOL_RESULT, 900, call="c4"),
        seg("m3", SegmentKind.ASSISTANT, 600),
        seg("pad", SegmentKind.SCRATCHPAD, 500),
    ]
    plan = plan_compaction(segments, BUDGET)
    assert plan.tokens_before == 8920
    # r2 is pinned and r3 too small; tool results go first, then the oldest assistant turn is enough.
    assert [r.segment_id for r in plan.replacements] == ["r1", "r4", "m1"]
    assert plan.replacements[0].marker == "[compacted tool result of call c1 (read, 3000 tokens)]"
    assert plan.reaches_target and plan.tokens_after <= BUDGET.target


def test_nothing_protected_is_ever_taken() -> None:
    protected = [
        seg(kind.value, kind, 3000)
        for kind in SegmentKind
        if kind not in (SegmentKind.TOOL_RESULT, SegmentKind.ASSISTANT)
    ]
    protected.append(seg("pinned", SegmentKind.ASSISTANT, 3000, pinned=True))
    plan = plan_compaction(protected, BUDGET)
    assert plan.replacements == () and not plan.reaches_target


def test_hard_limit_cuts_once_then_hits_the_floor() -> None:
    assert check_room(4000, BUDGET, 0).outcome == "ok"
    first = check_room(8000, BUDGET, 0)
    assert (first.outcome, first.max_new_tokens, first.hard_limit_hits) == ("cut", 191, 1)
    second = check_room(8000, BUDGET, first.hard_limit_hits)
    assert second.outcome == "floor" and second.hard_limit_hits == 2
    assert second.reason is not None and second.reason.startswith("context floor: no room")


def test_a_room_under_64_tokens_is_the_floor_at_once() -> None:
    check = check_room(8150, BUDGET, 0)
    assert check.outcome == "floor" and check.reason is not None and "41 left" in check.reason

"""The turn loop against the real daemon, with scripted members: finals, calls, re-asks, cut
turns, the call limit, the turn budget, tool errors, background jobs and cancel."""

from __future__ import annotations

import json

import anyio
import jsonschema
import pytest

from aerix.domain import bounds
from aerix.domain import events as ev
from aerix.domain.tools import TOOLS
from aerix.domain.turns import turn_schema
from tests.aerix.agent_harness import (
    Make,
    final,
    settings_with,
    turn,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_final_on_the_first_turn_ends_the_agent_done(make: Make) -> None:
    run = await make([final("Simple arithmetic.", "2 + 2 = 4")])
    result = await run.run()
    assert (result.outcome, result.final, result.turns) == ("done", "2 + 2 = 4", 1)
    [message] = run.messages()
    assert (message.turn, message.final, message.segment, message.attempt) == (1, "2 + 2 = 4", "a1.m1", 0)
    usage = message.usage
    assert usage is not None and usage.member == run.member
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.recomputed_from is not None and usage.prefill_ms is not None
    assert result.usage.generations == 1 and result.usage.completion_tokens == usage.completion_tokens
    [end] = run.of(ev.AgentEnd)
    assert (end.agent, end.outcome, end.summary, end.turns) == ("a1", "done", "2 + 2 = 4", 1)
    await run.assert_log_rebuilds_the_context()


async def test_the_json_constraint_wins_over_a_script_that_breaks_it(make: Make) -> None:
    # Prose around the object, then no object at all: the member has the json constraint, so
    # what it emits is still one valid turn each time.
    run = await make(["Sure! " + final("ok", "first") + " Hope that helps.", "no JSON here at all"], ctx=1024)
    result = await run.run(max_turns=1)
    [message] = run.messages()
    assert json.loads(message.text) == {"thought": "ok", "final": "first"}
    assert result.outcome == "done"

    run = await make(["no JSON here at all"])
    await run.run(max_turns=1)
    [message] = run.messages()
    assert message.parse_error is None
    jsonschema.validate(json.loads(message.text), turn_schema(TOOLS))


async def test_a_call_then_a_final_runs_the_tools_on_real_files(make: Make) -> None:
    run = await make(
        [
            turn(
                "Write the file, then read it back.",
                ("write", {"path": "notes/hello.txt", "content": "hello\nworld\n"}),
                ("read", {"path": "notes/hello.txt"}),
            ),
            final("The file holds two lines.", "Wrote notes/hello.txt."),
        ]
    )
    result = await run.run()
    assert (run.cwd / "notes" / "hello.txt").read_text() == "hello\nworld\n"
    assert (result.outcome, result.turns, result.files_touched) == ("done", 2, ("notes/hello.txt",))
    results = run.messages("tool")
    assert [(m.call, m.tool, m.segment) for m in results] == [
        ("c1", "write", "a1.c1"),
        ("c2", "read", "a1.c2"),
    ]
    assert results[0].text.startswith("[write c1]\ncreated notes/hello.txt")
    assert results[1].text == "[read c2]\n1\thello\n2\tworld"
    first = run.messages()[0]
    assert [(c.id, c.tool) for c in first.calls] == [("c1", "write"), ("c2", "read")]
    segments = {s.id: s for s in run.of(ev.Segment)}
    assert segments["a1.c2"].kind == "tool_result" and segments["a1.c2"].tokens
    await run.assert_log_rebuilds_the_context()


async def test_a_tool_error_is_a_result_and_the_loop_goes_on(make: Make) -> None:
    run = await make(
        [
            turn(
                "Read it.",
                ("read", {"path": "missing.txt"}),
                ("edit", {"path": "missing.txt", "old": "a", "new": "b"}),
            ),
            final("It does not exist.", "There is no missing.txt."),
        ]
    )
    result = await run.run()
    assert result.outcome == "done"
    errors = run.messages("tool")
    assert [m.is_error for m in errors] == [True, True]
    assert errors[0].text.startswith("[read c1]\nerror: no such file: missing.txt")


async def test_a_member_without_the_json_constraint_is_told_the_parse_error_and_asked_again(
    make: Make,
) -> None:
    run = await make(
        [
            "I think the answer is 4.",
            turn("Read with a bad offset.", ("read", {"path": "x.txt", "offset": 0})),
            final("Plain arithmetic.", "4"),
        ],
        constraints=["one_of", "regex", "lark"],
    )
    result = await run.run()
    assert (result.outcome, result.final, result.turns) == ("done", "4", 1)
    attempts = run.messages()
    assert [(m.turn, m.attempt) for m in attempts] == [(1, 0), (1, 1), (1, 2)]
    assert attempts[0].parse_error == "no JSON object found"
    # An input the schema forbids, caught without the constraint: read's offset counts from 1.
    assert attempts[1].parse_error is not None and "offset" in attempts[1].parse_error
    assert attempts[2].parse_error is None and attempts[2].segment == "a1.m1"
    # The failed answers left the context; the notes telling the model why stayed.
    pool = await run.pool_segments()
    assert [s["id"] for s in pool] == ["a1.system", "a1.p1", "a1.n1", "a1.n2", "a1.m1"]
    assert pool[2]["text"].startswith("Your answer was not a valid turn: no JSON object found.")
    await run.assert_log_rebuilds_the_context()


async def test_three_answers_that_never_parse_fail_the_agent(make: Make) -> None:
    run = await make(["nope", "still nope", "nope again", final("late", "too late")], constraints=["regex"])
    result = await run.run()
    assert result.outcome == "failed"
    assert result.reason == "turn 1 was asked 3 times and never parsed: no JSON object found"
    assert len(run.messages()) == bounds.TURN_RETRIES + 1
    [end] = run.of(ev.AgentEnd)
    assert (end.outcome, end.reason) == ("failed", result.reason)


async def test_a_turn_cut_by_max_new_tokens_is_removed_and_asked_again(make: Make) -> None:
    long_thought = "I will think about this at great length. " * 20
    run = await make([final(long_thought, "never seen"), final("Short now.", "done")])
    result = await run.run(settings=settings_with(max_new_tokens=64))
    assert (result.outcome, result.final) == ("done", "done")
    cut, kept = run.messages()
    assert cut.parse_error == "cut at max_new_tokens (64) before its JSON closed"
    assert cut.usage is not None and cut.usage.completion_tokens == 64 and cut.segment is None
    assert (kept.attempt, kept.segment) == (1, "a1.m1")
    pool = await run.pool_segments()
    assert [s["id"] for s in pool] == ["a1.system", "a1.p1", "a1.n1", "a1.m1"]
    assert pool[2]["text"].startswith("Your last answer was cut off at 64 tokens")
    assert "never seen" not in json.dumps(pool)
    await run.assert_log_rebuilds_the_context()


async def test_more_than_eight_calls_keeps_eight_and_tells_the_model(make: Make) -> None:
    """Without the JSON constraint the parse rule keeps eight calls (with the constraint the
    schema's maxItems stops the array at eight: the next test)."""
    calls = [("glob", {"pattern": f"*{n}.txt"}) for n in range(10)]
    run = await make(
        [turn("Look everywhere.", *calls), final("Nothing there.", "no files")],
        constraints=["one_of", "regex", "lark"],
    )
    result = await run.run()
    assert result.outcome == "done"
    first = run.messages()[0]
    assert [c.id for c in first.calls] == [f"c{n}" for n in range(1, 9)]
    assert [m.call for m in run.messages("tool")] == [f"c{n}" for n in range(1, 9)]
    notes = [s for s in run.of(ev.Segment) if s.label == "note"]
    assert len(notes) == 1 and notes[0].text.startswith("2 calls after the first 8 were dropped and not run")
    await run.assert_log_rebuilds_the_context()


def _runaway_calls(chars: int) -> str:
    """A turn whose ``calls`` array of read/write pairs runs ``chars`` characters, as
    smollm2-135m wrote one (5,573 characters, far more than eight calls), cut mid-call."""
    pairs = []
    for n in range(200):
        name = f"calc{n}.py"
        pairs += [("read", {"path": name}), ("write", {"path": name, "content": f"x = {n}\n"})]
    text = turn("Read and write calc.py.", *pairs)
    start = text.index('"calls": [') + len('"calls": [')
    return text[: start + chars]


async def test_under_the_json_constraint_a_runaway_calls_array_ends_at_eight_calls(make: Make) -> None:
    script = _runaway_calls(5573)
    settings = settings_with(max_new_tokens=1024)
    # Without the constraint the same answer runs to max_new_tokens and is cut.
    unconstrained = await make([script], ctx=4096, constraints=["one_of", "regex", "lark"])
    await unconstrained.run(max_turns=1, settings=settings)
    assert unconstrained.messages()[0].parse_error == "cut at max_new_tokens (1024) before its JSON closed"
    # With it, maxItems closes the array after the eighth call: one whole turn, no re-ask.
    run = await make([script, final("Done.", "wrote them")], ctx=4096)
    result = await run.run(settings=settings)
    assert (result.outcome, result.final) == ("done", "wrote them")
    first = run.messages()[0]
    assert (first.attempt, first.parse_error, len(first.calls)) == (0, None, bounds.MAX_CALLS_PER_TURN)
    pair = [(c.tool, c.input["path"]) for c in first.calls[:2]]
    assert pair == [("read", "calc0.py"), ("write", "calc0.py")]
    assert first.text.endswith('"content": "x = 3\\n"}}]}')
    assert first.usage is not None and first.usage.completion_tokens < 1024 // 2
    assert [m.call for m in run.messages("tool")] == [f"c{n}" for n in range(1, 9)]
    assert (run.cwd / "calc3.py").read_text() == "x = 3\n"
    assert not [s for s in run.of(ev.Segment) if s.label == "note"]  # nothing dropped, no note


async def test_call_ids_continue_across_turns(make: Make) -> None:
    run = await make(
        [
            turn("One.", ("glob", {"pattern": "*.md"})),
            turn("Two.", ("glob", {"pattern": "*.py"}), ("glob", {"pattern": "*.rs"})),
            final("Done.", "none"),
        ]
    )
    await run.run()
    assert [m.call for m in run.messages("tool")] == ["c1", "c2", "c3"]
    assert [m.turn for m in run.messages()] == [1, 2, 3]


async def test_the_turn_budget_ends_the_agent_with_budget(make: Make) -> None:
    looking = turn("Keep looking.", ("glob", {"pattern": "*"}))
    run = await make([looking, looking, looking])
    result = await run.run(max_turns=2)
    assert (result.outcome, result.turns, result.reason) == ("budget", 2, "the turn budget ran out (2 turns)")
    [end] = run.of(ev.AgentEnd)
    assert (end.outcome, end.turns) == ("budget", 2)


async def test_agent_calls_without_a_delegator_are_refused(make: Make) -> None:
    run = await make(
        [
            turn(
                "Delegate and look.",
                ("agent", {"brief": "fix it", "check": "make test"}),
                ("glob", {"pattern": "*"}),
            ),
            final("Could not delegate.", "no delegation"),
        ]
    )
    await run.run()
    results = run.messages("tool")
    assert [(m.call, m.tool) for m in results] == [("c1", "agent"), ("c2", "glob")]
    assert results[0].text == "[agent c1]\nerror: delegation is not available yet"


async def test_a_final_waits_for_a_running_background_job(make: Make) -> None:
    run = await make(
        [
            turn("Start it.", ("bash", {"command": "sleep 1; echo built", "background": True})),
            final("Started; done.", "waiting"),
            final("The job printed built.", "built"),
        ]
    )
    result = await run.run()
    assert (result.outcome, result.final, result.turns) == ("done", "built", 3)
    jobs = run.of(ev.Job)
    assert [(j.job, j.state, j.exit, j.call) for j in jobs] == [
        ("j1", "started", None, "c1"),
        ("j1", "exited", 0, "c1"),
    ]
    report = [m for m in run.messages("tool") if m.segment == "a1.c1.j1"]
    assert len(report) == 1 and report[0].text == "[job j1 exited 0]\nbuilt"
    await run.assert_log_rebuilds_the_context()


async def test_jobs_still_running_when_the_agent_ends_are_killed(make: Make) -> None:
    run = await make([turn("Start it.", ("bash", {"command": "sleep 30", "background": True}))])
    result = await run.run(max_turns=1)
    assert result.outcome == "budget"
    assert [(j.state, j.job) for j in run.of(ev.Job)] == [("started", "j1"), ("killed", "j1")]


async def test_cancel_is_checked_between_turns(make: Make) -> None:
    run = await make([turn("Look.", ("glob", {"pattern": "*"})), final("x", "y")])
    cancel = anyio.Event()
    seen: list[str] = []

    def on_token(agent: str, text: str) -> None:
        seen.append(agent)
        cancel.set()

    result = await run.run(environment={"cancel": cancel, "on_token": on_token})
    assert (result.outcome, result.reason) == ("killed", "cancelled")
    assert set(seen) == {"a1"}
    [end] = run.of(ev.AgentEnd)
    assert (end.outcome, end.reason) == ("killed", "cancelled")

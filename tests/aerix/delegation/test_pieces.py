"""Delegation's pieces, one by one: pass, retry, fail, the verifier's verdicts, and what the
implementer starts from."""

from __future__ import annotations

import pytest

from aerix.adapters.clock import utc_now
from aerix.adapters.prompts import embedded_prompt
from aerix.app.sessions.writer import reopen_session
from aerix.domain import events as ev
from aerix.domain.attachments import attachment_text
from aerix.domain.repeats import twin_result
from aerix.domain.tools import TOOL_NAMES, VERIFIER_TOOLS
from aerix.projections.contexts import Contexts, contexts_at
from tests.aerix.agent_harness import final, turn
from tests.aerix.delegation.world import (
    BRIEF,
    CHECK,
    CHECKED,
    LOOK,
    WRITE,
    World,
    delegate,
    ends,
    results,
    spawns,
)
from tests.aerix.delegation_harness import (
    agent_call,
    assert_every_subagent_context_rebuilt,
    piece_result,
    verdict,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_piece_that_passes_first_time(world: World) -> None:
    run = await world.root(
        [
            turn("Delegate the file.", agent_call(BRIEF, CHECK)),
            WRITE,
            final("Written.", "I wrote hello.txt."),
            CHECKED,
            verdict("It prints hi.", True, "cat hello.txt printed hi"),
            final("The piece passed.", "hello.txt is there."),
        ]
    )
    result = await delegate(run, world)
    assert (result.outcome, result.final) == ("done", "hello.txt is there.")
    assert (world.cwd / "hello.txt").read_text() == "hi\n"

    [message] = results(run)
    assert piece_result(message) == {
        "summary": "I wrote hello.txt.",
        "files_touched": ["hello.txt"],
        "checks_run": ["cat hello.txt"],
        "outcome": "done",
    }
    spawned = spawns(run)
    assert list(spawned) == ["a1", "a1.c1", "a1.c1.v1"]
    implementer, verifier = spawned["a1.c1"], spawned["a1.c1.v1"]
    assert (implementer.kind, implementer.parent, implementer.call, implementer.depth) == (
        "implementer",
        "a1",
        "c1",
        1,
    )
    assert (implementer.brief, implementer.check, implementer.attempt) == (BRIEF, CHECK, 1)
    assert implementer.tools == list(TOOL_NAMES) and implementer.max_turns == 40
    assert (verifier.kind, verifier.tools, verifier.attempt) == ("verifier", list(VERIFIER_TOOLS), 1)
    ended = ends(run)
    assert (ended["a1.c1"].outcome, ended["a1.c1"].files_touched) == ("done", ["hello.txt"])
    assert (ended["a1.c1.v1"].outcome, ended["a1.c1.v1"].verdict) == ("done", "pass")
    assert ended["a1.c1.v1"].checks_run == ["cat hello.txt"]

    # The implementer's context: the root's shared prefix (forked, same ids), then brief.md.
    segments = [s for s in run.of(ev.Segment) if s.agent == "a1.c1"]
    assert [s.id for s in segments[:3]] == ["a1.system", "a1.instructions", "a1.c1.brief"]
    root_prefix = [s for s in run.of(ev.Segment) if s.agent == "a1"][:2]
    assert [(s.text, s.tokens) for s in segments[:2]] == [(s.text, s.tokens) for s in root_prefix]
    assert segments[2].kind == "brief" and segments[2].text.startswith(f"# Your task\n{BRIEF}")
    assert f"# How it will be checked\n{CHECK}" in segments[2].text
    # The verifier's: the same prefix, then verifier.md with the summary and the files.
    brief = next(s for s in run.of(ev.Segment) if s.id == "a1.c1.v1.brief")
    assert "It reported:\nI wrote hello.txt." in brief.text and "Files it touched: hello.txt" in brief.text
    verdicts = [m for m in run.of(ev.Message) if m.agent == "a1.c1.v1" and m.verdict]
    assert [(m.verdict, m.reason) for m in verdicts] == [("pass", "cat hello.txt printed hi")]

    assert assert_every_subagent_context_rebuilt(run.events(), world.pool) == {"a1.c1", "a1.c1.v1"}
    await run.assert_log_rebuilds_the_context()


async def test_a_file_the_brief_names_is_attached_to_it_and_may_be_written_at_once(world: World) -> None:
    (world.cwd / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    brief, check = (
        "Fix add() in calc.py: it must add.",
        "python3 -c 'import calc; print(calc.add(2, 3))' prints 5",
    )
    fixed = "def add(a, b):\n    return a + b\n"
    run = await world.root(
        [
            turn("Delegate the fix.", agent_call(brief, check)),
            turn("Write it.", ("write", {"path": "calc.py", "content": fixed})),
            final("Fixed.", "add() adds."),
            turn("Run it.", ("bash", {"command": "python3 -c 'import calc; print(calc.add(2, 3))'"})),
            verdict("It prints 5.", True, "it printed 5"),
            final("The piece passed.", "add() is fixed."),
        ]
    )
    result = await delegate(run, world)
    assert result.outcome == "done" and (world.cwd / "calc.py").read_text() == fixed
    opening = next(s for s in run.of(ev.Segment) if s.id == "a1.c1.brief")
    assert opening.text.endswith(attachment_text([("calc.py", "1\tdef add(a, b):\n2\t    return a - b")]))
    [write] = [m for m in run.of(ev.Message) if m.agent == "a1.c1" and m.role == "tool"]
    assert write.text.startswith("[write c1]\nreplaced calc.py")
    await run.assert_log_rebuilds_the_context()


async def test_two_identical_agent_calls_in_one_turn_run_one_piece(world: World) -> None:
    run = await world.root(
        [
            turn("Delegate the file, twice.", agent_call(BRIEF, CHECK), agent_call(BRIEF, CHECK)),
            WRITE,
            final("Written.", "I wrote hello.txt."),
            CHECKED,
            verdict("It prints hi.", True, "cat hello.txt printed hi"),
            final("The piece passed.", "hello.txt is there."),
        ]
    )
    result = await delegate(run, world)
    assert (result.outcome, result.final) == ("done", "hello.txt is there.")
    assert list(spawns(run)) == ["a1", "a1.c1", "a1.c1.v1"]
    first, twin = results(run)
    assert piece_result(first)["outcome"] == "done"
    assert (twin.text, twin.unchanged_since) == ("[agent c2]\n" + twin_result("agent", "c1"), "c1")
    await run.assert_log_rebuilds_the_context()


#: The root delegates; the implementer claims there is nothing to do, its verifier fails it, and
#: the retry writes the file and passes.
RETRIED_PIECE = [
    turn("Delegate.", agent_call(BRIEF, CHECK)),
    final("Nothing to do.", "done already"),
    LOOK,
    verdict("No file.", False, "hello.txt does not exist"),
    WRITE,
    final("Written now.", "I wrote hello.txt."),
    CHECKED,
    verdict("It prints hi.", True, "cat hello.txt printed hi"),
    final("Passed on the retry.", "ok"),
]


async def test_a_failed_check_reruns_the_implementer_with_the_reason(world: World) -> None:
    run = await world.root(RETRIED_PIECE)
    result = await delegate(run, world)
    assert result.outcome == "done"
    assert list(spawns(run)) == ["a1", "a1.c1", "a1.c1.v1", "a1.c1.r1", "a1.c1.v2"]
    assert [spawns(run)[a].attempt for a in ("a1.c1", "a1.c1.v1", "a1.c1.r1", "a1.c1.v2")] == [1, 1, 2, 2]
    retry = [s for s in run.of(ev.Segment) if s.agent == "a1.c1.r1"]
    assert [s.id for s in retry[:4]] == ["a1.system", "a1.instructions", "a1.c1.r1.brief", "a1.c1.r1.retry"]
    assert "hello.txt does not exist" in retry[3].text
    assert retry[3].text.startswith(embedded_prompt("retry").split("{reason}")[0].strip())
    body = piece_result(results(run)[0])
    assert (body["outcome"], body["summary"], body["files_touched"]) == (
        "done",
        "I wrote hello.txt.",
        ["hello.txt"],
    )
    assert assert_every_subagent_context_rebuilt(run.events(), world.pool) == {
        "a1.c1",
        "a1.c1.v1",
        "a1.c1.r1",
        "a1.c1.v2",
    }


async def test_the_contexts_view_is_every_agents_context_the_log_rebuilds(world: World) -> None:
    """The session's ``contexts`` view, which every agent's live context read while the root
    delegated a piece twice, is ``Contexts`` folded from the log, agent for agent; reopened, the
    session's new view catches up from the log to the same."""
    run = await world.root(RETRIED_PIECE)
    assert (await delegate(run, world)).outcome == "done"
    assert run.contexts == contexts_at(run.events())
    assert list(run.contexts.agents) == ["a1", "a1.c1", "a1.c1.v1", "a1.c1.r1", "a1.c1.v2"]

    run.writer.close()
    reopened = reopen_session(run.writer.storage, utc_now, run.writer.ref.id)
    late = Contexts()
    reopened.attach("contexts", late)
    reopened.close()
    assert late == run.contexts


async def test_failing_past_the_retries_fails_the_piece(world: World) -> None:
    run = await world.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            final("Tried.", "attempt one"),
            LOOK,
            verdict("No.", False, "still missing"),
            final("Tried again.", "attempt two"),
            LOOK,
            verdict("No.", False, "missing again"),
            final("The piece failed.", "could not do it"),
        ]
    )
    await delegate(run, world, retries=1)
    assert list(spawns(run))[1:] == ["a1.c1", "a1.c1.v1", "a1.c1.r1", "a1.c1.v2"]
    body = piece_result(results(run)[0])
    assert body["outcome"] == "failed"
    assert body["summary"] == "verification failed after 2 attempts: missing again"
    # Its only piece failed and it changed nothing itself: its final does not make the work done.
    root = ends(run)["a1"]
    assert (root.outcome, root.reason, root.summary) == (
        "failed",
        "no piece it ran was done (1 ran: failed)",
        "could not do it",
    )


async def test_an_implementer_out_of_turns_ends_the_piece_without_a_retry(world: World) -> None:
    looking = turn("Look around.", ("glob", {"pattern": "*"}))
    run = await world.root(
        [turn("Delegate.", agent_call(BRIEF, CHECK)), looking, looking, final("x", "gave up")]
    )
    await delegate(run, world, max_turns=2)
    assert list(spawns(run)) == ["a1", "a1.c1"]  # no verifier, no retry
    assert (ends(run)["a1.c1"].outcome, ends(run)["a1.c1"].turns) == ("budget", 2)
    body = piece_result(results(run)[0])
    assert (body["outcome"], body["summary"]) == ("budget", "the turn budget ran out (2 turns)")


async def test_a_verifier_that_ends_without_a_verdict_counts_as_fail(world: World) -> None:
    run = await world.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            final("Done.", "wrote nothing"),
            CHECKED,  # the verifier's one turn runs a check and never gives a verdict
            final("Failed.", "no"),
        ]
    )
    await delegate(run, world, max_turns=1, retries=0)
    verifier = ends(run)["a1.c1.v1"]
    assert (verifier.outcome, verifier.verdict) == ("budget", None)
    body = piece_result(results(run)[0])
    assert body["outcome"] == "failed" and body["checks_run"] == ["cat hello.txt"]
    assert body["summary"] == (
        "verification failed after 1 attempt: the verifier ended without a verdict "
        "(budget: the turn budget ran out (1 turns))"
    )


async def test_a_pass_given_without_inspecting_anything_counts_as_fail(world: World) -> None:
    """On a member without the json constraint the model can answer before it looks."""
    run = await world.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            final("Done.", "I wrote hello.txt."),
            verdict("The check passes.", True, "looks fine"),  # no tool call before it
            final("Failed.", "no"),
        ],
        constraints=["one_of", "regex", "lark"],
    )
    await delegate(run, world, retries=0)
    assert (ends(run)["a1.c1.v1"].outcome, ends(run)["a1.c1.v1"].verdict) == ("done", "pass")
    body = piece_result(results(run)[0])
    assert body["outcome"] == "failed"
    assert body["summary"] == (
        "verification failed after 1 attempt: the verifier passed the work without inspecting anything "
        "(no tool calls)"
    )


async def test_a_constrained_verifier_cannot_give_its_verdict_before_it_looks(world: World) -> None:
    """Under the json constraint a verifier's first turn has no final branch: the scripted
    verdict cannot come out as one, so its first turn is a call, and its verdict comes after."""
    run = await world.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            final("Done.", "I wrote hello.txt."),
            verdict("The check passes.", True, "looks fine"),  # what the model would say unasked
            verdict("The check passes.", True, "hello.txt is there"),
            final("Done.", "the piece passed"),
        ]
    )
    await delegate(run, world, retries=0)
    verifier_turns = [m for m in run.messages() if m.agent == "a1.c1.v1"]
    assert verifier_turns[0].calls, verifier_turns[0].text
    assert ends(run)["a1.c1.v1"].verdict == "pass"
    assert piece_result(results(run)[0])["outcome"] == "done"

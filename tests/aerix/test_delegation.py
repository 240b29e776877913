"""Delegation against the real daemon with scripted members: an agent call runs a piece — an
implementer on a fork of the caller's shared prefix, a verifier on a fresh context, retries —
and its result comes back as {summary, files_touched, checks_run, outcome}.

Each generation on a member takes that member's next completion, so a script lists the root's,
the implementer's and the verifier's answers in the order they run. After each run the log must
rebuild every agent's context exactly as the pool held it."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from aerix.adapters.clock import utc_now
from aerix.adapters.project.agent_definitions import AgentCatalog, load_agent_definitions
from aerix.adapters.prompts import embedded_prompt
from aerix.app.agent.env import AgentResult
from aerix.app.sessions.writer import reopen_session
from aerix.domain import events as ev
from aerix.domain.attachments import attachment_text
from aerix.domain.repeats import twin_result
from aerix.domain.settings import ContextSettings, DelegationSettings, Settings, ToolCaps
from aerix.domain.tools import TOOL_NAMES, VERIFIER_TOOLS
from aerix.projections.contexts import Contexts, contexts_at
from tests.aerix.agent_harness import (
    AgentRun,
    final,
    load_member,
    new_writer,
    opening,
    start_scripted_pool,
    turn,
    unload_member,
)
from tests.aerix.delegation_harness import (
    KeepingPool,
    agent_call,
    assert_every_subagent_context_rebuilt,
    piece_result,
    verdict,
)
from tests.caldrix.pool_harness import PoolProcess, start_pool
from tests.default_model import default_model_path

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

INSTRUCTIONS = "Project rules: keep files short; run the checks you are given."
NO_JSON = ["one_of", "regex", "lark"]


def settings(**delegation: Any) -> Settings:
    return Settings(
        context=ContextSettings(max_new_tokens=512, tool_caps=ToolCaps()),
        delegation=DelegationSettings(**delegation),
    )


@dataclass
class World:
    """One test's pool adapter, members, session and working folder."""

    pool: KeepingPool
    process: PoolProcess
    folder: Path
    cwd: Path
    loaded: list[str] = field(default_factory=list)
    runs: list[AgentRun] = field(default_factory=list)

    async def member(self, completions: Sequence[str], constraints: Sequence[str] | None = None) -> str:
        name, _window = await load_member(self.pool, self.folder, completions, constraints=constraints)
        self.loaded.append(name)
        return name

    async def root(self, completions: Sequence[str], *, constraints: Sequence[str] | None = None) -> AgentRun:
        name = await self.member(completions, constraints)
        [info] = [m for m in await self.pool.members.loaded() if m.name == name]
        writer = new_writer(self.folder, self.cwd)
        run = AgentRun(self.pool, self.process.socket_path, name, info.n_ctx, writer, self.cwd)
        await run.start(opening("Do the task.", instructions=INSTRUCTIONS))
        self.runs.append(run)
        return run


Make = Callable[[], Awaitable[World]]


@pytest.fixture(scope="module")
def pool_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    """This module's pool keeps no prefix snapshots (scripted members compute no rows), so six
    members fit its memory limit side by side: the fit counts one context budget per member."""
    process = start_scripted_pool(tmp_path_factory.mktemp("delegation-pool"), "--context-budget", "0")
    yield process
    process.stop()


@pytest.fixture
async def world(pool_process: PoolProcess, tmp_path: Path) -> AsyncIterator[World]:
    work = tmp_path / "work"
    work.mkdir()
    pool = KeepingPool(pool_process.socket_path)
    built = World(pool, pool_process, tmp_path, work)
    yield built
    for run in built.runs:
        run.writer.close()
    for name in built.loaded:
        await unload_member(pool_process.socket_path, name)
    await pool.aclose()


async def delegate(
    run: AgentRun, world: World, definitions: AgentCatalog | None = None, **delegation: Any
) -> AgentResult:
    return await run.run(settings=settings(**delegation), definitions=definitions or AgentCatalog(()))


def spawns(run: AgentRun) -> dict[str, ev.AgentSpawn]:
    return {spawn.agent: spawn for spawn in run.of(ev.AgentSpawn)}


def ends(run: AgentRun) -> dict[str, ev.AgentEnd]:
    return {end.agent: end for end in run.of(ev.AgentEnd)}


def results(run: AgentRun, agent: str = "a1") -> list[ev.Message]:
    return [m for m in run.of(ev.Message) if m.agent == agent and m.role == "tool" and m.tool == "agent"]


WRITE = turn("Write it.", ("write", {"path": "hello.txt", "content": "hi\n"}))
CHECKED = turn("Run the check.", ("bash", {"command": "cat hello.txt"}))
LOOK = turn("Look first.", ("glob", {"pattern": "*"}))
BRIEF = "Create hello.txt holding the line hi."
CHECK = "cat hello.txt prints hi"


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
            verdict("No.", False, "still missing"),
            final("Tried again.", "attempt two"),
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
    run = await world.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            final("Done.", "I wrote hello.txt."),
            verdict("The check passes.", True, "looks fine"),  # no tool call before it
            final("Failed.", "no"),
        ]
    )
    await delegate(run, world, retries=0)
    assert (ends(run)["a1.c1.v1"].outcome, ends(run)["a1.c1.v1"].verdict) == ("done", "pass")
    body = piece_result(results(run)[0])
    assert body["outcome"] == "failed"
    assert body["summary"] == (
        "verification failed after 1 attempt: the verifier passed the work without inspecting anything "
        "(no tool calls)"
    )


async def test_at_the_depth_limit_an_agent_cannot_call_agent(world: World) -> None:
    # A member without the json constraint, so an agent call is not prevented by the schema but
    # refused by the parser: the deepest implementer's tools have no agent.
    deeper = agent_call("Write hello.txt.", CHECK)
    run = await world.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            turn("Delegate deeper.", deeper),
            turn("And deeper still.", deeper),
            final("Then I do it myself.", "nothing written"),
            LOOK,
            verdict("Fine.", True, "ok"),
            final("The inner piece passed.", "inner done"),
            LOOK,
            verdict("Fine.", True, "ok"),
            final("All passed.", "all done"),
        ],
        constraints=NO_JSON,
    )
    result = await delegate(run, world, depth=2)
    assert result.outcome == "done"
    spawned = spawns(run)
    assert list(spawned) == ["a1", "a1.c1", "a1.c1.c1", "a1.c1.c1.v1", "a1.c1.v1"]
    assert "agent" in spawned["a1.c1"].tools and spawned["a1.c1"].depth == 1
    assert "agent" not in spawned["a1.c1.c1"].tools and spawned["a1.c1.c1"].depth == 2
    refused = [m for m in run.of(ev.Message) if m.agent == "a1.c1.c1" and m.parse_error]
    assert len(refused) == 1 and "tool 'agent' cannot be called here" in (refused[0].parse_error or "")
    inner = piece_result(results(run, "a1.c1")[0])
    assert (inner["outcome"], inner["summary"]) == ("done", "nothing written")
    assert assert_every_subagent_context_rebuilt(run.events(), world.pool) == {
        "a1.c1",
        "a1.c1.c1",
        "a1.c1.c1.v1",
        "a1.c1.v1",
    }


async def test_four_pieces_with_parallel_two_never_run_more_than_two_and_answer_in_call_order(
    world: World,
) -> None:
    names = []
    for n in range(1, 5):
        # Piece 1 takes longer than the others: its implementer looks around first.
        extra = [turn("Look.", ("glob", {"pattern": "*"}))] * (2 if n == 1 else 0)
        names.append(
            await world.member([*extra, final("Done.", f"piece {n} done"), LOOK, verdict("ok", True, "ok")])
        )
    calls = [agent_call(f"Piece {n}.", "nothing to check", member=names[n - 1]) for n in range(1, 5)]
    run = await world.root([turn("Four pieces.", *calls), final("All four passed.", "done")])
    result = await delegate(run, world, parallel=2)
    assert result.outcome == "done"
    assert [piece_result(m)["summary"] for m in results(run)] == [f"piece {n} done" for n in range(1, 5)]
    assert [m.call for m in results(run)] == ["c1", "c2", "c3", "c4"]
    # Replay the log: a piece runs from its implementer's spawn to its verifier's end.
    running: set[str] = set()
    most = 0
    for event in run.events():
        if isinstance(event, ev.AgentSpawn) and event.kind == "implementer":
            running.add(event.agent)
            most = max(most, len(running))
        elif isinstance(event, ev.AgentEnd) and event.agent.endswith(".v1"):
            running.discard(event.agent.removesuffix(".v1"))
    assert most == 2
    assert {s.agent: s.member for s in run.of(ev.AgentSpawn) if s.kind == "implementer"} == {
        f"a1.c{n}": names[n - 1] for n in range(1, 5)
    }


async def test_a_definition_restricts_the_implementers_tools(world: World) -> None:
    agents = world.folder / "project" / ".aerix" / "agents"
    agents.mkdir(parents=True)
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads and reports\ntools: Read, Grep\nmaxTurns: 3\n"
        "color: blue\n---\nYou only read files; you never change them.\n"
    )
    definitions = load_agent_definitions(world.folder / "project")
    reader = agent_call("Read hello.txt.", "say what it holds", definition="reader")
    run = await world.root(
        [
            turn("Two pieces.", reader, agent_call("Anything.", "none", definition="no-such-agent")),
            turn("The reader, then.", reader),
            turn("Write it.", ("write", {"path": "x.txt", "content": "x"})),  # refused: not its tool
            final("Read nothing.", "hello.txt does not exist"),
            LOOK,
            verdict("Right.", True, "there is no hello.txt"),
            final("Done.", "ok"),
        ],
        constraints=NO_JSON,
    )
    await delegate(run, world, definitions)
    implementer = spawns(run)["a1.c1"]
    assert (implementer.definition, implementer.tools, implementer.max_turns) == (
        "reader",
        ["read", "grep"],
        3,
    )
    [refused] = [m for m in run.of(ev.Message) if m.agent == "a1.c1" and m.parse_error]
    assert "tool 'write' cannot be called here (tools: read, grep)" in (refused.parse_error or "")
    assert not (world.cwd / "x.txt").exists()
    body = next(s for s in run.of(ev.Segment) if s.id == "a1.c1.definition")
    assert (body.kind, body.text) == ("instructions", "You only read files; you never change them.")
    # The definition field names the installed ones: a member without the JSON constraint that
    # names another is told so, and its turn is asked again (under the constraint it could not).
    [unknown] = [m for m in run.of(ev.Message) if m.agent == "a1" and m.parse_error]
    assert unknown.parse_error == "call 2 (agent): 'definition' must be one of reader"
    [first] = results(run)
    assert (first.call, piece_result(first)["outcome"]) == ("c1", "done")
    assert "a1.c2" not in spawns(run)


def definition_file(folder: Path, name: str, model: str) -> AgentCatalog:
    """The definitions of a project holding one, ``name``, that runs on ``model``."""
    agents = folder / "project" / ".aerix" / "agents"
    agents.mkdir(parents=True)
    (agents / f"{name}.md").write_text(f"---\nname: {name}\nmodel: {model}\n---\nDo the piece.\n")
    return load_agent_definitions(folder / "project")


async def test_a_member_on_the_call_runs_the_piece_on_that_member(world: World) -> None:
    """The call names a loaded member (its field offers only those); a model to load is a
    definition's ``model``, and one that cannot be loaded fails its piece in one line."""
    other = await world.member([final("On the other member.", "did it"), LOOK, verdict("ok", True, "ok")])
    definitions = definition_file(world.folder, "elsewhere", "no-such-model.gguf")
    run = await world.root(
        [
            turn(
                "Two pieces.",
                agent_call(BRIEF, CHECK, member=other),
                agent_call(BRIEF, CHECK, definition="elsewhere"),
            ),
            final("Done.", "ok"),
        ]
    )
    await delegate(run, world, definitions)
    spawned = spawns(run)
    assert (spawned["a1.c1"].member, spawned["a1.c1.v1"].member) == (other, other)
    piece_turns = [m for m in run.of(ev.Message) if m.agent.startswith("a1.c1") and m.role == "assistant"]
    assert piece_turns and all(m.usage is not None and m.usage.member == other for m in piece_turns)
    root_turns = [m for m in run.of(ev.Message) if m.agent == "a1" and m.role == "assistant"]
    assert all(m.usage is not None and m.usage.member == run.member for m in root_turns)
    first, second = (piece_result(m) for m in results(run))
    assert first["outcome"] == "done"
    assert second["outcome"] == "failed" and "\n" not in second["summary"]
    assert second["summary"].startswith("member no-such-model.gguf could not be loaded: ")
    # On another member the prefix is created, not forked; the log still rebuilds it.
    assert "a1.c1" in assert_every_subagent_context_rebuilt(run.events(), world.pool)


async def test_cancel_during_a_piece_stops_it_and_records_every_end(world: World) -> None:
    started = world.cwd / "started"
    command = f"echo $$ > pid; touch {started}; sleep 30"
    run = await world.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            turn("Run it.", ("bash", {"command": command})),
            final("never", "never"),
        ]
    )
    cancel = anyio.Event()

    async def cancel_once_started() -> None:
        while not started.exists():
            await anyio.sleep(0.05)
        cancel.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(cancel_once_started)
        result = await run.run(
            settings=settings(), definitions=AgentCatalog(()), environment={"cancel": cancel}
        )
    assert (result.outcome, result.reason) == ("killed", "cancelled")
    ended = ends(run)
    assert set(ended) == set(spawns(run)) == {"a1", "a1.c1"}  # every spawn ended; no verifier
    assert (ended["a1.c1"].outcome, ended["a1.c1"].reason) == ("killed", "cancelled")
    [bash] = [m for m in run.of(ev.Message) if m.agent == "a1.c1" and m.tool == "bash"]
    assert bash.text.endswith("[cancelled]")
    pid = int((world.cwd / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    body = piece_result(results(run)[0])
    assert (body["outcome"], body["summary"]) == ("killed", "cancelled")


async def test_a_long_result_is_capped_under_tool_caps_agent(world: World) -> None:
    # Steps that differ: the same sentence forty times is a degenerating turn, stopped early.
    summary = " ".join(f"Step {n} went well." for n in range(40))
    run = await world.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            final("Done.", summary),
            LOOK,
            verdict("ok", True, "ok"),
            final("Done.", "ok"),
        ]
    )
    capped = Settings(
        context=ContextSettings(max_new_tokens=512, tool_caps=ToolCaps(agent=300)),
        delegation=DelegationSettings(),
    )
    await run.run(settings=capped, definitions=AgentCatalog(()))
    [message] = results(run)
    assert len(message.text.split("\n", 1)[1].encode()) <= 300
    assert message.spool is not None
    whole = json.loads(Path(message.spool).read_text())
    assert whole["summary"] == summary and whole["outcome"] == "done"
    assert message.outcome == "done"  # read from the whole result, not the capped text


async def test_the_repo_map_is_computed_once_for_the_whole_request(world: World) -> None:
    (world.cwd / "before.txt").write_text("here from the start\n")
    run = await world.root(
        [
            turn("Map first.", ("repo_map", {})),
            turn("Delegate.", agent_call(BRIEF, CHECK)),
            WRITE,
            turn("Map again.", ("repo_map", {})),
            final("Written.", "I wrote hello.txt."),
            CHECKED,
            verdict("ok", True, "ok"),
            final("Done.", "ok"),
        ]
    )
    await delegate(run, world)
    maps = [m for m in run.of(ev.Message) if m.role == "tool" and m.tool == "repo_map"]
    assert [m.agent for m in maps] == ["a1", "a1.c2"]  # the second turn's call is c2
    # The implementer's map is the request's, computed before it wrote hello.txt.
    assert maps[0].text.split("\n", 1)[1] == maps[1].text.split("\n", 1)[1]
    assert "before.txt" in maps[1].text and "hello.txt" not in maps[1].text


async def test_a_member_that_does_not_fit_fails_the_piece_in_one_line(tmp_path: Path) -> None:
    """A pool whose memory limit holds one member: a piece naming another model is refused by
    the pool's fit rules (``no_fit``), and the piece fails with that one line."""
    script = tmp_path / "script.json"
    other_model = tmp_path / "other.gguf"
    other_model.symlink_to(default_model_path())
    definitions = definition_file(tmp_path, "big", str(other_model))
    call = agent_call(BRIEF, CHECK, definition="big")
    script.write_text(json.dumps([turn("Delegate.", call), final("It did not fit.", "no room")]))
    process = start_pool(
        tmp_path,
        "--load",
        "smollm2-135m",
        "--engine",
        "scripted",
        "--script",
        str(script),
        "--ctx",
        "1024",
        "--idle-timeout",
        "0",
        "--context-budget",
        "0",
        "--memory-limit",
        str(300 * 1024 * 1024),
    )
    pool = KeepingPool(process.socket_path)
    work = tmp_path / "work"
    work.mkdir()
    writer = new_writer(tmp_path, work)
    try:
        run = AgentRun(pool, process.socket_path, "main", 1024, writer, work)
        await run.start(opening("Do the task.", instructions=INSTRUCTIONS))
        result = await delegate(run, World(pool, process, tmp_path, work), definitions)
        assert (result.outcome, result.reason) == ("failed", "no piece it ran was done (1 ran: failed)")
        body = piece_result(results(run)[0])
        assert body["outcome"] == "failed" and "\n" not in body["summary"]
        assert body["summary"].startswith(f"member {other_model} could not be loaded: the model needs ")
        assert "over the" in body["summary"] and "limit" in body["summary"]
        assert list(spawns(run)) == ["a1"]
        assert [m.name for m in await pool.members.loaded()] == ["main"]
    finally:
        writer.close()
        await pool.aclose()
        process.stop()

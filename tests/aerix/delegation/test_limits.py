"""Delegation's limits and choices: depth, parallel pieces, definitions and members, cancel,
caps, and the request's one repo map."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from aerix.adapters.project.agent_definitions import AgentCatalog, load_agent_definitions
from aerix.domain import events as ev
from aerix.domain.settings import ContextSettings, DelegationSettings, Settings, ToolCaps
from tests.aerix.agent_harness import (
    AgentRun,
    final,
    new_writer,
    opening,
    turn,
)
from tests.aerix.delegation.world import (
    BRIEF,
    CHECK,
    CHECKED,
    INSTRUCTIONS,
    LOOK,
    NO_JSON,
    WRITE,
    World,
    delegate,
    ends,
    results,
    settings,
    spawns,
)
from tests.aerix.delegation_harness import (
    KeepingPool,
    agent_call,
    assert_every_subagent_context_rebuilt,
    piece_result,
    verdict,
)
from tests.caldrix.pool_harness import start_pool
from tests.default_model import default_model_path

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


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

"""Under the JSON constraint an ``agent`` call cannot name what does not exist: against the real
daemon, whose scripted member's completions go through llguidance (a completion that breaks the
constraint loses), the prose a small model wrote into ``definition`` and ``member`` never comes
out, and no ``no agent definition named …`` or ``could not be loaded`` result follows.

Each test starts its own pool, so the members loaded are the ones the test names: ``main`` (the
root's) and, for the member test, one more."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.pool.client import CaldrixPool
from aerix.adapters.project.agent_definitions import AgentCatalog, load_agent_definitions
from aerix.app.agent.env import AgentResult
from aerix.domain import events as ev
from tests.aerix.agent_harness import AgentRun, final, load_member, new_writer, opening, settings_with, turn
from tests.aerix.delegation_harness import agent_call, piece_result, verdict
from tests.caldrix.pool_harness import PoolProcess, start_pool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

#: What Qwen2.5-Coder-1.5B wrote into the agent call's definition and member fields.
PROSE = "The function should take a string as input"
BRIEF = "Create hello.txt holding the line hi."
CHECK = "cat hello.txt prints hi"


def piece_answers(brief: str = BRIEF) -> list[Any]:
    """A piece's implementer and verifier answers, taken only by that piece's agents."""
    return [
        {"text": turn("Write it.", ("write", {"path": "hello.txt", "content": "hi\n"})), "when": brief},
        {"text": final("Written.", "I wrote hello.txt."), "when": f"# Your task\n{brief}"},
        {
            "text": turn("Check.", ("bash", {"command": "cat hello.txt"})),
            "when": f"given this task:\n{brief}",
        },
        {"text": verdict("It prints hi.", True, "cat hello.txt printed hi"), "when": "given this task:"},
    ]


@dataclass
class Scene:
    """A pool of its own whose ``main`` answers ``script``; the root runs on it."""

    folder: Path
    processes: list[PoolProcess] = field(default_factory=list)
    pools: list[CaldrixPool] = field(default_factory=list)

    async def root(self, script: Sequence[Any]) -> AgentRun:
        path = self.folder / "main-script.json"
        path.write_text(json.dumps(list(script)))
        process = start_pool(
            self.folder,
            *("--load", "smollm2-135m", "--engine", "scripted", "--script", str(path)),
            *("--ctx", "2048", "--idle-timeout", "0", "--context-budget", "0"),
        )
        self.processes.append(process)
        pool = CaldrixPool(process.socket_path)
        self.pools.append(pool)
        work = self.folder / "work"
        work.mkdir()
        run = AgentRun(pool, process.socket_path, "main", 2048, new_writer(self.folder, work), work)
        await run.start(opening("Make hello.txt."))
        return run


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    made = Scene(tmp_path)
    yield made
    for pool in made.pools:
        await pool.aclose()
    for process in made.processes:
        process.stop()


def agent_calls(run: AgentRun) -> list[dict[str, Any]]:
    """The inputs of the root's agent calls, as the constrained turns gave them."""
    return [
        dict(c.input) for m in run.messages() if m.agent == "a1" for c in m.calls or () if c.tool == "agent"
    ]


def agent_results(run: AgentRun) -> list[str]:
    return [m.text for m in run.messages("tool") if m.agent == "a1" and m.tool == "agent"]


async def delegate(run: AgentRun, definitions: AgentCatalog) -> AgentResult:
    return await run.run(settings=settings_with(), definitions=definitions)


async def test_prose_in_definition_does_not_come_out_when_none_is_installed(scene: Scene) -> None:
    # The prose comes first: the constraint allows only "brief" there, and the scripted engine
    # resumes its completion after the key it was made to write. Written last, what is left of
    # the completion once the constraint closed the input would run on as a second call: an
    # artifact of a script that cannot change its mind, which a model does not share.
    run = await scene.root(
        [
            turn("Delegate.", ("agent", {"definition": PROSE, "brief": BRIEF, "check": CHECK})),
            *piece_answers(),
            final("The piece passed.", "hello.txt is there."),
        ]
    )
    result = await delegate(run, AgentCatalog(()))
    assert (result.outcome, result.final) == ("done", "hello.txt is there.")
    # No definition is installed and main is the only member: the call has neither field.
    assert agent_calls(run) == [{"brief": BRIEF, "check": CHECK}]
    [text] = agent_results(run)
    assert "no agent definition named" not in text
    assert piece_result(next(m for m in run.messages("tool") if m.tool == "agent"))["outcome"] == "done"
    assert (run.cwd / "hello.txt").read_text() == "hi\n"
    spawns = {s.agent: s for s in run.of(ev.AgentSpawn)}
    assert (spawns["a1.c1"].definition, spawns["a1.c1"].member) == (None, "main")
    await run.assert_log_rebuilds_the_context()


async def test_prose_in_definition_comes_out_as_an_installed_one(scene: Scene) -> None:
    agents = scene.folder / "project" / ".aerix" / "agents"
    agents.mkdir(parents=True)
    (agents / "writer.md").write_text(
        "---\nname: writer\ndescription: Writes files\n---\nWrite what is asked.\n"
    )
    run = await scene.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK, definition=PROSE)),
            *piece_answers(),
            final("The piece passed.", "hello.txt is there."),
        ]
    )
    result = await delegate(run, load_agent_definitions(scene.folder / "project"))
    assert result.outcome == "done"
    # The only name the constraint allows there: the installed definition's.
    assert agent_calls(run) == [{"brief": BRIEF, "check": CHECK, "definition": "writer"}]
    assert not any("no agent definition named" in text for text in agent_results(run))
    spawns = {s.agent: s for s in run.of(ev.AgentSpawn)}
    assert spawns["a1.c1"].definition == "writer"
    body = next(s for s in run.of(ev.Segment) if s.id == "a1.c1.definition")
    assert body.text == "Write what is asked."


async def test_prose_in_member_comes_out_as_a_loaded_member(scene: Scene) -> None:
    run = await scene.root(
        [
            turn("Delegate.", agent_call(BRIEF, CHECK, member=PROSE)),
            *piece_answers(),
            final("The piece passed.", "hello.txt is there."),
        ]
    )
    helper, _window = await load_member(run.pool, scene.folder, piece_answers())
    result = await delegate(run, AgentCatalog(()))
    assert result.outcome == "done"
    [call] = agent_calls(run)
    assert call.keys() == {"brief", "check", "member"} and call["member"] in {"main", helper}
    [text] = agent_results(run)
    assert "could not be loaded" not in text and PROSE not in text
    body = piece_result(next(m for m in run.messages("tool") if m.agent == "a1" and m.tool == "agent"))
    assert body["outcome"] == "done"
    spawns = {s.agent: s for s in run.of(ev.AgentSpawn)}
    assert spawns["a1.c1"].member == spawns["a1.c1.v1"].member == call["member"]
    # The only members the pool holds: nothing was loaded under the prose's name.
    assert sorted(m.name for m in await run.pool.members.loaded()) == sorted(["main", helper])

"""The world a delegation test runs in: a scripted root on the real pool, its members, and
the helpers that read a run's events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aerix.adapters.project.agent_definitions import AgentCatalog
from aerix.app.agent.env import AgentResult
from aerix.domain import events as ev
from aerix.domain.settings import ContextSettings, DelegationSettings, Settings, ToolCaps
from tests.aerix.agent_harness import (
    AgentRun,
    load_member,
    new_writer,
    opening,
    turn,
)
from tests.aerix.delegation_harness import KeepingPool
from tests.caldrix.pool_harness import PoolProcess

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

"""Run agents against the real pool daemon with scripted members.

One pool process serves a test module (``caldrix pool --engine scripted``, on a socket in a
temporary folder). Each test loads its own member with its own script — the real GGUF
vocabulary, the real daemon, tokenizer and llguidance constraint, with answers taken from the
script — and unloads it afterwards. Agents run through the real pool adapter
(``aerix.adapters.pool.client.CaldrixPool``) and record into a real session log, which the tests read
back line by line (``parse_event`` validates each one).
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aerix.adapters.clock import utc_now
from aerix.adapters.pool.client import CaldrixPool, client_bounds
from aerix.adapters.project.skills import SkillCatalog
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.adapters.tools import LocalToolsFactory
from aerix.app.agent.env import AgentEnvironment, AgentResult, AgentSpec
from aerix.app.agent.live_context import LiveContext, record_segments
from aerix.app.agent.loop import _AgentRun
from aerix.app.delegation import delegating
from aerix.app.ports.project import AgentDefinitionSource
from aerix.app.sessions.writer import SessionWriter, start_session
from aerix.domain import events as ev
from aerix.domain.segments import ContextSegment, SegmentKind
from aerix.domain.settings import ContextSettings, PoolSettings, Settings, ToolCaps
from aerix.domain.tools import TOOLS, ToolSpec
from aerix.projections.contexts import Contexts, contexts_at
from caldrix.protocol import connect
from tests.caldrix.pool_harness import PoolProcess, start_pool

#: The tests' embedded model's file: the scripted engine reads its vocabulary.
MODEL_REFERENCE = "smollm2-135m"
#: A short system segment: the scripted member computes nothing, but every token is counted.
SYSTEM_TEXT = "You are Aerix, a coding agent. Answer each turn with one JSON object."

_names = itertools.count(1)


def start_scripted_pool(folder: Path, *extra: str) -> PoolProcess:
    """A pool whose ``main`` is a scripted member with an empty script (tests load their own);
    ``extra``: more ``caldrix pool`` arguments."""
    empty = folder / "empty-script.json"
    empty.write_text("[]")
    return start_pool(
        folder,
        "--load",
        MODEL_REFERENCE,
        "--engine",
        "scripted",
        "--script",
        str(empty),
        "--ctx",
        "1024",
        "--idle-timeout",
        "0",
        *extra,
    )


#: An opening segment as a caller knows it: the request builds the same kind for its root.
OpeningSegment = ContextSegment


def opening(
    prompt: str, system: str = SYSTEM_TEXT, *, pin_prompt: bool = False, instructions: str | None = None
) -> list[OpeningSegment]:
    segments = [OpeningSegment("a1.system", "system", SegmentKind.SYSTEM, system, True, "system")]
    if instructions is not None:
        segments.append(
            OpeningSegment(
                "a1.instructions", "system", SegmentKind.INSTRUCTIONS, instructions, True, "instructions"
            )
        )
    segments.append(OpeningSegment("a1.p1", "user", SegmentKind.PROMPT, prompt, pin_prompt, "prompt 1"))
    return segments


def settings_with(max_new_tokens: int = 512, **caps: int) -> Settings:
    return Settings(context=ContextSettings(max_new_tokens=max_new_tokens, tool_caps=ToolCaps(**caps)))


@dataclass
class AgentRun:
    """One test's member, session and agent, ready to run."""

    pool: CaldrixPool
    socket: Path
    member: str
    window: int
    writer: SessionWriter
    cwd: Path
    segments: list[OpeningSegment] = field(default_factory=list)
    context: str = ""
    #: The session's ``contexts`` view, attached to the writer as a held session attaches it.
    contexts: Contexts = field(default_factory=Contexts)
    #: The last run's live context, as the agent left it.
    live: LiveContext | None = None

    def __post_init__(self) -> None:
        self.writer.attach("contexts", self.contexts)

    async def start(self, segments: Sequence[OpeningSegment]) -> None:
        """Create the agent's context and record what a caller records before the loop."""
        self.segments = list(segments)
        counts = await self.pool.contexts.create(self.member, [s.wire() for s in segments])
        self.context = counts.context
        record_segments(self.writer, segments, counts)
        self.writer.record(ev.AgentSpawn, agent="a1", kind="root", member=self.member)

    async def run(
        self,
        *,
        max_turns: int = 10,
        settings: Settings | None = None,
        tools: Sequence[ToolSpec] = TOOLS,
        environment: dict[str, Any] | None = None,
        definitions: AgentDefinitionSource | None = None,
        makes_changes: bool = False,
        delegates_changes: bool = False,
    ) -> AgentResult:
        """Run the root; with ``definitions``, as a request runs it: delegating its agent calls
        (every agent with its own local tools, one repo map shared)."""
        spec = AgentSpec(
            agent_id="a1",
            member=self.member,
            context_id=self.context,
            window=self.window,
            tools=tuple(tools),
            max_turns=max_turns,
            makes_changes=makes_changes,
            delegates_changes=delegates_changes,
        )
        env = AgentEnvironment(
            pool=self.pool,
            events=self.writer,
            contexts=self.contexts,
            prompts=EmbeddedPrompts(),
            settings=settings or settings_with(),
            cwd=self.cwd,
            spool=self.writer,
            tools=LocalToolsFactory(),  # one per run: its agents share one repo map
            skills=SkillCatalog(()),
            **(environment or {}),
        )
        if definitions is not None:
            env = delegating(env, definitions)
        agent = _AgentRun(spec, env)  # what run_agent runs, its live context kept for the checks
        self.live = agent.live
        return await agent.run()

    def events(self) -> list[ev.EventBase]:
        """Every line of the session log, validated."""
        lines = self.writer.log_path.read_text(encoding="utf-8").splitlines()
        return [ev.parse_event(json.loads(line)) for line in lines]

    def of(self, event_type: type[ev.EventBase]) -> list[Any]:
        return [event for event in self.events() if isinstance(event, event_type)]

    def messages(self, role: str = "assistant") -> list[ev.Message]:
        """The agent's turns (``assistant``) or its results (``tool``), in order."""
        return [m for m in self.of(ev.Message) if m.role == role]

    async def pool_segments(self) -> list[dict[str, Any]]:
        """The context as the pool holds it (ids, roles, texts, pinned flags, counts)."""
        client = await connect(self.socket, bounds=client_bounds(PoolSettings()))
        try:
            reply = await client.context_get(self.context)
        finally:
            await client.aclose()
        return [segment.model_dump() for segment in reply.segments]

    async def assert_log_rebuilds_the_context(self) -> None:
        """The context projection over the log holds exactly the pool's segments, and it is the
        live context the agent ended with, every field of every segment (the live context is
        the fold of its events); the session's ``contexts`` view, fed live, is that projection
        for every agent."""
        rebuilt_contexts = contexts_at(self.events())
        assert self.contexts == rebuilt_contexts
        rebuilt = rebuilt_contexts.agents["a1"].ordered()
        if self.live is not None:
            assert self.live.segments == rebuilt
        pool = await self.pool_segments()
        assert [(s.id, s.role, s.text, s.pinned, s.tokens) for s in rebuilt] == [
            (s["id"], s["role"], s["text"], s["pinned"], s["tokens"]) for s in pool
        ]


#: The ``make`` fixture (tests/aerix/conftest.py): ``await make(completions, prompt=…, ctx=…)``.
Make = Callable[..., Awaitable[AgentRun]]


async def load_member(
    pool: CaldrixPool,
    folder: Path,
    completions: Sequence[str],
    *,
    ctx: int = 2048,
    constraints: Sequence[str] | None = None,
) -> tuple[str, int]:
    """Load a scripted member answering ``completions`` in order; (its name, its window)."""
    name = f"t{next(_names)}"
    script = folder / f"{name}-script.json"
    data: Any = list(completions)
    if constraints is not None:
        data = {"completions": list(completions), "constraints": list(constraints)}
    script.write_text(json.dumps(data))
    member = await pool.members.load(
        name, MODEL_REFERENCE, {"engine": "scripted", "script": str(script), "ctx": ctx}
    )
    return name, member.n_ctx


async def unload_member(socket: Path, name: str) -> None:
    client = await connect(socket, bounds=client_bounds(PoolSettings()))
    try:
        await client.member_unload(name)
    finally:
        await client.aclose()


def new_writer(folder: Path, cwd: Path) -> SessionWriter:
    files = SessionFiles(folder / "sessions")
    return start_session(
        files,
        utc_now,
        session=str(uuid.uuid4()),
        cwd=str(cwd),
        project="agent-tests",
        model=MODEL_REFERENCE,
        prompt="(test)",
        aerix_version="0.1.0",
    )


def turn(thought: str, *calls: tuple[str, dict[str, Any]]) -> str:
    """A calls turn as the model writes it."""
    return json.dumps({"thought": thought, "calls": [{"tool": tool, "input": args} for tool, args in calls]})


def final(thought: str, text: str) -> str:
    return json.dumps({"thought": thought, "final": text})

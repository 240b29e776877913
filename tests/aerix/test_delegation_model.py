"""Delegation on the real test model's rows: every implementer's and verifier's first
generation resumes from the stored shared prefix.

The pool's member is the embedded model (smollm2-135m) loaded with ``--engine scripted
--script-prefill``: llama.cpp computes every row of every prompt with the model's own weights
and the prefix store keeps real snapshots, while the tokens chosen come from the script, so the
piece runs the same way every time (an implementer, a failing verifier, a retry, a passing one).
The context is the request's own: the real system segment (tools, turn shape) and an
instructions segment, about 1,500 tokens of shared prefix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from aerix.adapters.pool.client import CaldrixPool
from aerix.adapters.project.agent_definitions import AgentCatalog
from aerix.adapters.project.skills import SkillCatalog
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.app.request.root_context import system_text
from aerix.domain import events as ev
from aerix.domain.settings import ContextSettings, Settings
from tests.aerix.agent_harness import AgentRun, final, new_writer, opening, turn
from tests.aerix.delegation_harness import agent_call, verdict
from tests.caldrix.pool_harness import DEFAULT_MODEL, PoolProcess, start_pool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.model]

INSTRUCTIONS = "\n".join(
    f"- Rule {n}: code in area {n} keeps functions short and runs `make check-{n}` before a commit."
    for n in range(12)
)
LOOK = turn("Look first.", ("glob", {"pattern": "*"}))
SCRIPT = [
    turn("Delegate the file.", agent_call("Create hello.txt holding hi.", "cat hello.txt prints hi")),
    final("Nothing needed.", "done already"),
    LOOK,
    verdict("No file.", False, "hello.txt does not exist"),
    turn("Write it.", ("write", {"path": "hello.txt", "content": "hi\n"})),
    final("Written.", "I wrote hello.txt."),
    LOOK,
    verdict("It is there.", True, "hello.txt holds hi"),
    final("The piece passed.", "hello.txt is in place."),
]


@pytest.fixture(scope="module")
def rows_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp("rows-pool")
    script = folder / "script.json"
    script.write_text(json.dumps(SCRIPT))
    process = start_pool(
        folder,
        "--load",
        DEFAULT_MODEL,
        "--engine",
        "scripted",
        "--script-prefill",
        "--script",
        str(script),
        "--ctx",
        "4096",
        "--idle-timeout",
        "0",
    )
    yield process
    process.stop()


async def test_every_piece_agents_first_generation_resumes_after_the_shared_prefix(
    rows_pool: PoolProcess, tmp_path: Path
) -> None:
    pool = CaldrixPool(rows_pool.socket_path)
    work = tmp_path / "work"
    work.mkdir()
    writer = new_writer(tmp_path, work)
    settings = Settings(context=ContextSettings(max_new_tokens=256))
    try:
        run = AgentRun(pool, rows_pool.socket_path, "main", 4096, writer, work)
        system = system_text(EmbeddedPrompts(), SkillCatalog(()), settings)
        await run.start(opening("Create hello.txt.", system, instructions=INSTRUCTIONS))
        result = await run.run(settings=settings, definitions=AgentCatalog(()))
        assert (result.outcome, result.final) == ("done", "hello.txt is in place.")
        events = run.events()
        shared = sum(
            s.tokens or 0
            for s in events
            if isinstance(s, ev.Segment) and s.agent == "a1" and s.kind in ("system", "instructions")
        )
        assert shared > 1000
        firsts: dict[str, ev.Usage] = {}
        for event in events:
            if isinstance(event, ev.Message) and event.role == "assistant" and event.usage is not None:
                firsts.setdefault(event.agent, event.usage)
        assert list(firsts) == ["a1", "a1.c1", "a1.c1.v1", "a1.c1.r1", "a1.c1.v2"]
        for agent in ("a1.c1", "a1.c1.v1", "a1.c1.r1", "a1.c1.v2"):
            usage = firsts[agent]
            assert usage.recomputed_from is not None and usage.recomputed_from >= shared, agent
            # Only the agent's own segments were computed: far fewer rows than the prompt.
            assert usage.prompt_tokens - usage.recomputed_from < usage.prompt_tokens // 4, agent
    finally:
        writer.close()
        await pool.aclose()

"""The loop on the real test model (smollm2-135m through llama.cpp in the real daemon).

A 135M model is no agent; this checks only that the machinery holds with a real model's
answers under the JSON constraint and a small token budget: the loop ends with a named outcome,
every event line is valid, and the log rebuilds the pool's context."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aerix.adapters.pool.client import CaldrixPool
from aerix.domain import events as ev
from aerix.domain.turns import render_turns_section
from tests.aerix.agent_harness import SYSTEM_TEXT, AgentRun, new_writer, opening, settings_with
from tests.caldrix.pool_harness import DEFAULT_MODEL, PoolProcess, start_pool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.model]


@pytest.fixture(scope="module")
def model_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp("model-pool")
    process = start_pool(folder, "--load", DEFAULT_MODEL, "--ctx", "2048", "--idle-timeout", "0")
    yield process
    process.stop()


async def test_the_loop_on_the_real_model_ends_with_a_named_outcome(
    model_pool: PoolProcess, tmp_path: Path
) -> None:
    pool = CaldrixPool(model_pool.socket_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("# demo\nRun `make test` to test.\n")
    writer = new_writer(tmp_path, work)
    try:
        run = AgentRun(pool, model_pool.socket_path, "main", 2048, writer, work)
        system = f"{SYSTEM_TEXT}\n\n{render_turns_section()}"
        await run.start(opening("How do I run the tests? Read README.md.", system))
        result = await run.run(max_turns=2, settings=settings_with(max_new_tokens=64))
        assert result.outcome in ("done", "failed", "killed", "budget")
        events = run.events()  # every line parses
        end = events[-1]
        assert isinstance(end, ev.AgentEnd) and (end.outcome, end.reason) == (result.outcome, result.reason)
        generations = [e for e in events if isinstance(e, ev.Message) and e.role == "assistant"]
        # Every attempt carries the pool's usage, a turn its guard stopped (degenerating) too.
        assert generations and all(m.usage is not None and m.usage.completion_tokens > 0 for m in generations)
        assert result.usage.generations == len(generations)
        await run.assert_log_rebuilds_the_context()
    finally:
        writer.close()
        await pool.aclose()

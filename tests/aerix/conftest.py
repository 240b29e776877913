"""Fixtures shared by the aerix tests that drive a real pool of scripted members."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.pool.client import CaldrixPool
from tests.aerix.agent_harness import (
    AgentRun,
    Make,
    load_member,
    new_writer,
    opening,
    start_scripted_pool,
    unload_member,
)
from tests.caldrix.pool_harness import PoolProcess


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def pool_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    """One real ``caldrix pool --engine scripted`` per test module; each test loads its own
    scripted members into it."""
    process = start_scripted_pool(tmp_path_factory.mktemp("scripted-pool"))
    yield process
    process.stop()


@pytest.fixture
async def pool(pool_process: PoolProcess) -> AsyncIterator[CaldrixPool]:
    """The request's own pool adapter, connected to this module's pool."""
    port = CaldrixPool(pool_process.socket_path)
    yield port
    await port.aclose()


@pytest.fixture
async def make(pool_process: PoolProcess, tmp_path: Path) -> AsyncIterator[Make]:
    """``await make(completions, prompt=…, ctx=…)``: a member with that script, a session and
    the agent's opening context in the pool."""
    pool = CaldrixPool(pool_process.socket_path)
    loaded: list[str] = []
    writers = []
    work = tmp_path / "work"
    work.mkdir()

    async def build(
        completions: Sequence[str],
        *,
        prompt: str = "Do the task.",
        ctx: int = 2048,
        constraints: Sequence[str] | None = None,
        segments: Any = None,
    ) -> AgentRun:
        name, window = await load_member(pool, tmp_path, completions, ctx=ctx, constraints=constraints)
        loaded.append(name)
        writer = new_writer(tmp_path, work)
        writers.append(writer)
        run = AgentRun(pool, pool_process.socket_path, name, window, writer, work)
        await run.start(segments if segments is not None else opening(prompt))
        return run

    yield build
    for writer in writers:
        writer.close()
    for name in loaded:
        await unload_member(pool_process.socket_path, name)
    await pool.aclose()

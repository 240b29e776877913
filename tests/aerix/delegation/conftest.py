"""The delegation tests' pool (one per module) and world (one per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.aerix.agent_harness import start_scripted_pool, unload_member
from tests.aerix.delegation.world import World
from tests.aerix.delegation_harness import KeepingPool
from tests.caldrix.pool_harness import PoolProcess


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

"""Fixtures shared by the aerix tests that drive a real pool of scripted members."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from aerix.adapters.pool import CaldrixPool
from tests.aerix.agent_harness import start_scripted_pool
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

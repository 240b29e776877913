"""The prefix store inside the real daemon: resumes reported in ``done``, figures in
``pool.status``, and one decision line per generation in the pool's log.

One ``caldrix pool`` subprocess with the embedded model serves the module, spoken to over its
Unix socket with the protocol client.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from caldrix.protocol import DoneFrame, PoolClient, connect
from tests.caldrix.pool_harness import CLIENT_BOUNDS, DEFAULT_MODEL, PoolProcess, start_pool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.model]

BUDGET = 64 * 1024 * 1024
RULES = "\n".join(
    f"- Rule {i}: code in area {i} keeps functions short and runs `make check-{i}` before a commit."
    for i in range(10)
)
SYSTEM = {"id": "sys", "role": "system", "text": f"You are a coding agent.\n{RULES}", "pinned": True}


def user(sid: str, text: str) -> dict[str, Any]:
    return {"id": sid, "role": "user", "text": text, "pinned": False}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp("prefix-pool")
    process = start_pool(
        folder,
        "--load",
        DEFAULT_MODEL,
        "--ctx",
        "2048",
        "--threads",
        "1",
        "--context-budget",
        str(BUDGET),
        "--idle-timeout",
        "0",
    )
    yield process
    process.stop()


@pytest.fixture
async def client(pool: PoolProcess) -> AsyncIterator[PoolClient]:
    connection = await connect(
        pool.socket_path, frames=pool.frames, client_name="prefix-tests", bounds=CLIENT_BOUNDS
    )
    yield connection
    await connection.aclose()


async def generate(client: PoolClient, context: str, **fields: Any) -> DoneFrame:
    return await client.generate(context, 8, **fields).result()


async def test_contexts_sharing_the_system_prefix_resume_near_the_end(
    pool: PoolProcess, client: PoolClient
) -> None:
    first = await client.context_create("main", [SYSTEM, user("u1", "Explain rule 4.")])
    done = await generate(client, first.context, append={"id": "a1", "pinned": False})
    assert done.recomputed_from == 0

    second = await client.context_create("main", [SYSTEM, user("u1", "Which rule covers area 7?")])
    probe = await generate(client, second.context)  # a probe: its output is not kept
    system_rows = second.segments[0].tokens
    assert system_rows <= probe.recomputed_from < probe.prompt_tokens
    assert probe.prompt_tokens - probe.recomputed_from < 20

    # Back to the first context: the live rows now hold the second, so its own rows (prompt and
    # answer) come back from the store and only the new message is computed.
    await client.context_edit(
        first.context,
        [{"op": "append", "segment": user("u2", "And rule 5?")}],
    )
    turn = await generate(client, first.context, append={"id": "a2", "pinned": False})
    assert turn.prompt_tokens - turn.recomputed_from < 20
    assert turn.recomputed_from > probe.recomputed_from

    status = await client.pool_status()
    figures = status.prefix_store["main"]
    assert figures.budget == BUDGET
    assert figures.entries >= 1 and 0 < figures.bytes <= BUDGET
    assert figures.hits == 2 and figures.misses == 1

    decisions = re.findall(r"main: (\d+)-row prompt: (\w+) from row (\d+)", pool.log())
    assert decisions[-3:] == [
        (str(done.prompt_tokens), "prefill", "0"),
        (str(probe.prompt_tokens), "live", str(probe.recomputed_from)),
        (str(turn.prompt_tokens), "stored", str(turn.recomputed_from)),
    ]
    assert "rates: prefill" in pool.log()

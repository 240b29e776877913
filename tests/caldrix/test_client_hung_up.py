"""A pool that ends under an open client connection: the client's next request is one line that
says why, never a message cut off after its colon."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from caldrix.errors import PoolUnavailable
from caldrix.protocol import connect
from caldrix.protocol.framing import FrameMode
from tests.caldrix.pool_harness import CLIENT_BOUNDS, start_scripted_pool


@pytest.mark.parametrize("frames", ["cbor", "json"])
def test_a_request_on_a_connection_whose_pool_ended_says_why(tmp_path: Path, frames: FrameMode) -> None:
    pool = start_scripted_pool(tmp_path, [], 1024, frames)

    async def ask_after_the_pool_ends() -> str:
        async with await connect(pool.socket_path, bounds=CLIENT_BOUNDS, frames=frames) as client:
            assert (await client.member_list()).members
            pool.stop()
            with pytest.raises(PoolUnavailable) as ended:
                for _ in range(3):  # the first send may still reach the kernel's buffer
                    await client.member_list()
            return str(ended.value)

    try:
        message = anyio.run(ask_after_the_pool_ends)
    finally:
        pool.stop()
    assert str(pool.socket_path) in message
    reason = message.rsplit(":", 1)[-1].strip()
    assert reason, message

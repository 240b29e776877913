"""Members run side by side: a generation on one member never waits for another member.

The real ``caldrix pool`` daemon with two members of the tests' embedded model, both named by
``--load`` at start ('main' and 'member2'). A long generation runs on 'main'; a short one sent to
'member2' while it runs must finish first, with 'main' still busy when it does. Had the members
shared one thread (or one lock), the short one would wait behind the long one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from caldrix.protocol import PoolClient, TokenFrame, connect
from tests.caldrix.pool_harness import CLIENT_BOUNDS, DEFAULT_MODEL, PoolProcess, start_pool

pytestmark = [pytest.mark.e2e, pytest.mark.model]

USER = {"id": "u", "role": "user", "text": "Write letters.", "pinned": False}
#: Enough forced tokens that the long generation is still running when the short one is done.
LONG_TOKENS = 450
#: A bound on how long any wait here may take (the machine is shared), never a timing check.
WAIT_BOUND_SECS = 300.0


@pytest.fixture(scope="module")
def two_loads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp("side-by-side")
    process = start_pool(
        folder,
        "--load",
        DEFAULT_MODEL,
        "--load",
        DEFAULT_MODEL,
        "--ctx",
        "512",
        "--threads",
        "1",
        "--idle-timeout",
        "0",
    )  # the default --max-connections (4)
    yield process
    process.stop()


async def _queue_of(observer: PoolClient, name: str) -> int:
    members = (await observer.member_list()).members
    return int(next(m.queue for m in members if m.name == name))


def test_several_loads_at_start_are_members(two_loads: PoolProcess) -> None:
    async def listed() -> list[tuple[Any, Any]]:
        async with await connect(two_loads.socket_path, bounds=CLIENT_BOUNDS) as client:
            members = (await client.member_list()).members
            return [(m.name, m.state) for m in members]

    assert anyio.run(listed) == [("main", "ready"), ("member2", "ready")]


def test_a_generation_on_one_member_does_not_wait_for_another(two_loads: PoolProcess) -> None:
    async def scenario() -> tuple[int, bool, str, int]:
        on_a, on_b, observer = [await connect(two_loads.socket_path, bounds=CLIENT_BOUNDS) for _ in range(3)]
        async with on_a, on_b, observer:
            context_a = await on_a.context_create("main", [USER])
            context_b = await on_b.context_create("member2", [USER])
            with anyio.fail_after(WAIT_BOUND_SECS):
                long_run = on_a.generate(
                    context=context_a.context,
                    max_new_tokens=LONG_TOKENS,
                    constraint={"regex": f"[a-z]{{{LONG_TOKENS * 3}}}"},
                )
                async for frame in long_run:
                    if isinstance(frame, TokenFrame):
                        break  # A has prefilled and is decoding
                short = await on_b.generate(context=context_b.context, max_new_tokens=2).result()
                # Read right after B's done frame: A's generation is still on main's thread.
                main_busy = await _queue_of(observer, "main")
                a_done_before_b = long_run.done is not None
                async for _ in long_run:
                    pass
            assert long_run.done is not None
            return main_busy, a_done_before_b, short.finish, long_run.done.completion_tokens

    main_busy, a_done_before_b, b_finish, a_tokens = anyio.run(scenario)
    assert b_finish in ("stop", "length")
    assert not a_done_before_b
    assert main_busy == 1, "main's long generation had already ended when member2's finished"
    assert a_tokens == LONG_TOKENS

"""The legacy GGML engine through the real daemon: ``caldrix pool`` serving the tiny gpt2
file over a real Unix socket, every constraint kind checked on the client side."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from caldrix.errors import PoolUnavailable
from caldrix.protocol.client import PoolClient, connect
from caldrix.protocol.messages import DoneFrame, TokenFrame
from tests.caldrix.ggml_writer import write_tiny_gpt2
from tests.caldrix.pool_harness import CLIENT_BOUNDS
from tests.caldrix.test_engine_ctransformers import CONSTRAINT_CASES, MAX_NEW_TOKENS

pytestmark = pytest.mark.e2e

#: Bound on the pool's start (the tiny model loads in well under a second).
POOL_START_DEADLINE_S = 120.0
#: Bound on the pool's exit after ``pool.stop``.
POOL_STOP_DEADLINE_S = 30.0
SEGMENTS = [
    {"id": "s1", "role": "system", "text": "You answer in the requested form.", "pinned": True},
    {"id": "u1", "role": "user", "text": "Reply.", "pinned": False},
]


def caldrix_executable() -> str:
    return str(Path(sys.executable).with_name("caldrix"))


@pytest.fixture(scope="module")
def pool_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A pool started as its own process, serving the tiny file as ``main``."""
    root = tmp_path_factory.mktemp("ctpool")
    model = write_tiny_gpt2(root / "tiny-gpt2.bin")
    socket = root / "pool.sock"
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        (root / var.lower()).mkdir()
        env[var] = str(root / var.lower())
    command = [
        caldrix_executable(), "pool", "--load", str(model),
        "--engine", "ctransformers", "--model-type", "gpt2", "--threads", "1",
        "--socket", str(socket), "--idle-timeout", "0",
    ]  # fmt: skip
    log = (root / "pool.log").open("wb")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        anyio.run(wait_until_serving, process, socket)
        yield socket
    finally:
        if process.poll() is None:
            anyio.run(stop_pool, socket)
            try:
                process.wait(timeout=POOL_STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()


async def wait_until_serving(process: subprocess.Popen[bytes], socket: Path) -> None:
    """Return once a hello succeeds; fail with the pool's output if it exits first."""
    deadline = time.monotonic() + POOL_START_DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the pool exited with {process.returncode} before serving")
        if socket.exists():
            try:
                client = await connect(socket, bounds=replace(CLIENT_BOUNDS, control_secs=5))
            except PoolUnavailable:
                pass
            else:
                await client.aclose()
                return
        await anyio.sleep(0.2)
    pytest.fail(f"the pool did not serve within {POOL_START_DEADLINE_S} s")


async def stop_pool(socket: Path) -> None:
    try:
        client = await connect(socket, bounds=replace(CLIENT_BOUNDS, control_secs=5))
        await client.pool_stop()
        await client.aclose()
    except PoolUnavailable:
        pass


async def generate(client: PoolClient, context: str, **fields: Any) -> tuple[DoneFrame, str]:
    """Run one generation; the done frame and the text the token frames streamed."""
    streamed: list[str] = []
    async with client.generate(context, MAX_NEW_TOKENS, **fields) as frames:
        async for frame in frames:
            if isinstance(frame, TokenFrame):
                streamed.append(frame.text)
            if isinstance(frame, DoneFrame):
                return frame, "".join(streamed)
    raise AssertionError("the generation ended without a done frame")


def test_the_member_is_served_by_the_legacy_engine(pool_socket: Path) -> None:
    async def check() -> None:
        async with await connect(pool_socket, bounds=CLIENT_BOUNDS) as client:
            reply = await client.member_list()
        (member,) = reply.members
        assert member.name == "main"
        assert member.state == "ready"
        assert sorted(member.constraints) == sorted(["json", "one_of", "regex", "lark"])
        assert member.n_ctx == 512
        assert isinstance(member.footprint_bytes, int)

    anyio.run(check)


@pytest.mark.parametrize(
    ("constraint", "check"), CONSTRAINT_CASES, ids=[next(iter(c[0])) for c in CONSTRAINT_CASES]
)
def test_every_constraint_kind_over_the_socket(
    pool_socket: Path, constraint: dict[str, object], check: Callable[[str], object]
) -> None:
    async def run() -> None:
        async with await connect(pool_socket, bounds=CLIENT_BOUNDS) as client:
            context = (await client.context_create("main", SEGMENTS)).context
            for seed, temperature in [(None, 0.0), (3, 1.2)]:
                done, streamed = await generate(
                    client, context, constraint=constraint, temperature=temperature, seed=seed
                )
                assert done.finish == "stop", done
                assert streamed == done.text
                check(done.text)
            await client.context_drop(context)

    anyio.run(run)


def test_a_repeated_generation_resumes_from_the_live_rows(pool_socket: Path) -> None:
    async def run() -> None:
        async with await connect(pool_socket, bounds=CLIENT_BOUNDS) as client:
            context = (await client.context_create("main", SEGMENTS)).context
            first, _ = await generate(client, context, constraint={"regex": "[a-z]{3,8}"})
            again, _ = await generate(client, context, constraint={"regex": "[a-z]{3,8}"})
            assert again.text == first.text  # greedy on the same prompt
            # Only the prompt's last token is recomputed: its logits are needed again.
            assert again.recomputed_from == again.prompt_tokens - 1

    anyio.run(run)


#: Generations in the frame-order test. A forced constraint emits its last tokens and ends at
#: once, so ``done`` is ready right behind them: a server that could send it before forwarding
#: them all loses a tail within the first few of these (it did, every run), in well under a second.
FRAME_ORDER_GENERATIONS = 40


def test_every_token_frame_arrives_before_done(pool_socket: Path) -> None:
    async def run() -> None:
        async with await connect(pool_socket, bounds=CLIENT_BOUNDS) as client:
            context = (await client.context_create("main", SEGMENTS)).context
            constraint = {"one_of": ["investigate", "answer"]}
            for seed in range(FRAME_ORDER_GENERATIONS):
                done, streamed = await generate(
                    client, context, constraint=constraint, temperature=1.0, seed=seed
                )
                assert streamed == done.text, f"generation {seed}: the token frames spelled {streamed!r}"
            await client.context_drop(context)

    anyio.run(run)

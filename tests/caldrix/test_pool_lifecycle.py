"""The pool's lifecycle as a user meets it: start, refusals, stop, signals, idle exit.

Each pool here is the real ``caldrix pool`` subprocess; refusals are checked by their exit
status and their one line on stderr (never a traceback).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from caldrix.protocol import TokenFrame, connect
from tests.caldrix.pool_harness import (
    CLIENT_BOUNDS,
    DEFAULT_MODEL,
    EXIT_TIMEOUT_SECS,
    PoolProcess,
    launch_pool,
    pool_command,
    raw_connection,
    start_pool,
)

pytestmark = [pytest.mark.e2e, pytest.mark.model]

SMALL = ("--ctx", "512")


def _run(*args: str, timeout: float = EXIT_TIMEOUT_SECS) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        pool_command(*args), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _one_line_refusal(result: subprocess.CompletedProcess[str], *fragments: str, code: int = 1) -> None:
    assert result.returncode == code, result
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("caldrix: "), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]


@pytest.fixture(scope="module")
def two_members(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp("lifecycle")
    process = start_pool(
        folder,
        "--load",
        DEFAULT_MODEL,
        "--decision",
        DEFAULT_MODEL,
        *SMALL,
        "--idle-timeout",
        "0",
        "--max-connections",
        "1",
    )
    yield process
    process.stop()


def test_binds_only_after_every_load(two_members: PoolProcess) -> None:
    async def members() -> list[dict[str, object]]:
        client = await connect(two_members.socket_path, bounds=CLIENT_BOUNDS)
        async with client:
            return list((await client.member_list()).members)

    listed = anyio.run(members)
    assert [(m.name, m.state) for m in listed] == [("main", "ready"), ("decision", "ready")]
    log = two_members.log()
    assert log.index("member decision ready") < log.index("listening on")


def test_max_connections_bounds_generations_across_members(two_members: PoolProcess) -> None:
    """With --max-connections 1, a generation on 'decision' waits while one runs on 'main',
    though each member has its own thread."""
    user = {"id": "u", "role": "user", "text": "Write letters.", "pinned": False}

    async def scenario() -> tuple[dict[str, int], int, str]:
        first, second, observer = [
            await connect(two_members.socket_path, bounds=CLIENT_BOUNDS) for _ in range(3)
        ]
        async with first, second, observer:
            on_main = await first.context_create("main", [user])
            on_decision = await second.context_create("decision", [user])
            long_run = first.generate(
                context=on_main.context, max_new_tokens=300, constraint={"regex": "[a-z]{900}"}
            )
            async for frame in long_run:
                if isinstance(frame, TokenFrame):
                    break
            short = second.generate(context=on_decision.context, max_new_tokens=2)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(short.result)
                status = await observer.pool_status()
                with anyio.fail_after(EXIT_TIMEOUT_SECS):  # a bound on the wait, not a timing check
                    while status.generations.waiting == 0:
                        status = await observer.pool_status()
                decision_queue = next(m.queue for m in status.members if m.name == "decision")
                async for _ in long_run:
                    pass
            assert short.done is not None and long_run.done is not None
            return status.model_dump()["generations"], decision_queue, short.done.finish

    generations, decision_queue, finish = anyio.run(scenario)
    assert generations == {"limit": 1, "admitted": 1, "waiting": 1}
    assert decision_queue == 0
    assert finish in ("stop", "length")


def test_a_second_pool_on_a_live_socket_exits_1(two_members: PoolProcess) -> None:
    result = _run("--socket", str(two_members.socket_path), "--load", DEFAULT_MODEL)
    _one_line_refusal(result, "already answers", str(two_members.socket_path))
    assert two_members.process.poll() is None


def test_status_command(two_members: PoolProcess) -> None:
    result = _run("status", "--socket", str(two_members.socket_path))
    assert result.returncode == 0, result.stderr
    assert f"pid {two_members.process.pid}" in result.stdout
    assert "main: ready, smollm2-135m, n_ctx 512" in result.stdout
    assert "decision: ready" in result.stdout
    assert "flash attention" not in result.stdout
    as_json = _run("status", "--json", "--socket", str(two_members.socket_path))
    status = json.loads(as_json.stdout)
    assert set(status["prefix_store"]) == {"main", "decision"}
    assert all("flash_attention" not in member for member in status["members"])


def test_stop_and_status_without_a_pool(tmp_path: Path) -> None:
    path = tmp_path / "none" / "pool.sock"
    _one_line_refusal(_run("stop", "--socket", str(path)), "no pool answers", str(path))
    _one_line_refusal(_run("status", "--socket", str(path)), "no pool answers")


def test_pool_stop_closes_every_connection_and_exits_0(tmp_path: Path) -> None:
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL)
    try:
        with raw_connection(pool.socket_path, "cbor") as bystander:
            result = _run("stop", "--socket", str(pool.socket_path))
            assert result.returncode == 0, result.stderr
            assert f"stopped the pool on {pool.socket_path} (pid {pool.process.pid})" in result.stdout
            assert bystander.at_eof()
        assert pool.wait() == 0
        assert not pool.socket_path.exists()
        assert "pool stopped (stop)" in pool.log()
    finally:
        pool.stop()


def test_pool_stop_cancels_a_running_generation(tmp_path: Path) -> None:
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL)
    try:
        with raw_connection(pool.socket_path, "cbor") as generating:
            story = {"id": "u", "role": "user", "text": "Tell a long story.", "pinned": False}
            generating.send({"op": "context.create", "rid": 1, "member": "main", "segments": [story]})
            context = generating.receive()["context"]
            generating.send(
                {
                    "op": "generate",
                    "rid": 2,
                    "context": context,
                    "max_new_tokens": 400,
                    "temperature": 1.0,
                    "seed": 5,
                }
            )
            while generating.receive()["op"] != "token":
                pass
            with raw_connection(pool.socket_path, "cbor") as stopper:
                stopper.send({"op": "pool.stop", "rid": 9})
                assert stopper.receive() == {"op": "ok", "rid": 9}
                assert stopper.at_eof()
            assert all(frame["op"] == "token" for frame in generating.receive_until_eof())
        assert pool.wait() == 0
    finally:
        pool.stop()


def test_sigterm_lets_a_running_generation_finish(tmp_path: Path) -> None:
    # A grace no loaded machine runs out of: the test is that the generation finishes, not how fast.
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL, "--shutdown-grace", "600")
    try:
        with (
            raw_connection(pool.socket_path, "cbor") as generating,
            raw_connection(pool.socket_path, "cbor") as idle,
        ):
            hello = {"id": "u", "role": "user", "text": "Say hello.", "pinned": False}
            generating.send({"op": "context.create", "rid": 1, "member": "main", "segments": [hello]})
            context = generating.receive()["context"]
            generating.send({"op": "generate", "rid": 2, "context": context, "max_new_tokens": 12})
            assert generating.receive()["op"] == "progress"
            pool.process.send_signal(signal.SIGTERM)
            frames = generating.receive_until_eof()
            assert frames[-1]["op"] == "done" and frames[-1]["rid"] == 2
            assert idle.at_eof()
        assert pool.wait() == 0
    finally:
        pool.stop()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_pool_gracefully(tmp_path: Path, signum: signal.Signals) -> None:
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL)
    try:
        pool.process.send_signal(signum)
        assert pool.wait() == 0
        assert not pool.socket_path.exists()
        log = pool.log()
        assert f"received {signum.name}" in log and "member main unloaded" in log
        assert "Traceback" not in log
    finally:
        pool.stop()


def test_idle_timeout_exits_0(tmp_path: Path) -> None:
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL, "--idle-timeout", "1")
    try:
        assert pool.wait() == 0
        assert "no connection for 1 s; stopping" in pool.log()
        assert not pool.socket_path.exists()
    finally:
        pool.stop()


def test_a_stale_socket_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "run" / "pool.sock"
    path.parent.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(os.fspath(path))
    stale.close()  # the file stays, and nothing answers on it
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL, socket_path=path)
    try:
        assert "removing the stale socket" in pool.log()
        with raw_connection(path, "cbor") as connection:
            connection.send({"op": "pool.status", "rid": 1})
            assert connection.receive()["pid"] == pool.process.pid
    finally:
        pool.stop()


def test_a_file_in_the_sockets_place_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run" / "pool.sock"
    path.parent.mkdir(mode=0o700)
    path.write_text("not a socket")
    _one_line_refusal(_run("--socket", str(path), "--load", DEFAULT_MODEL), "is not a socket")
    assert path.read_text() == "not a socket"


def test_a_symlinked_folder_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    _one_line_refusal(_run("--socket", str(tmp_path / "link" / "pool.sock")), "is a symlink")


def test_a_folder_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    if os.getuid() == 0:
        foreign = tmp_path / "foreign"
        foreign.mkdir(mode=0o700)
        os.chown(foreign, 65534, 65534)
    else:
        foreign = Path("/tmp")  # owned by root, not by this user
    _one_line_refusal(_run("--socket", str(foreign / "pool.sock")), "belongs to uid", "not you")


def test_the_folder_is_created_0700(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b" / "pool.sock"
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL, socket_path=nested)
    try:
        assert oct(os.stat(tmp_path / "a" / "b").st_mode & 0o777) == oct(0o700)
        assert oct(os.lstat(pool.socket_path).st_mode & 0o777) == oct(0o600)
    finally:
        pool.stop()


def test_a_load_that_fails_exits_1_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    result = _run("--socket", str(tmp_path / "run" / "pool.sock"), "--load", str(missing))
    _one_line_refusal(result, f"--load {missing} (member 'main')")
    assert not (tmp_path / "run" / "pool.sock").exists()


def test_a_load_that_does_not_fit_exits_1(tmp_path: Path) -> None:
    result = _run(
        "--socket", str(tmp_path / "run" / "pool.sock"), "--load", DEFAULT_MODEL, "--memory-limit", "50000000"
    )
    _one_line_refusal(result, "MiB limit")


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--max-connections", "0", "--max-connections"),
        ("--idle-timeout", "-1", "--idle-timeout"),
        ("--shutdown-grace", "-1", "--shutdown-grace"),
        ("--context-budget", "-5", "--context-budget"),
        ("--max-batch", "2", "--max-batch"),
        ("--ctx", "0", "--ctx: input should be greater than or equal to 1"),
        ("--threads", "-2", "--threads"),
        ("--batch", "0", "--batch"),
    ],
)
def test_bad_flag_values_are_one_line_and_64(tmp_path: Path, flag: str, value: str, says: str) -> None:
    result = _run("--socket", str(tmp_path / "pool.sock"), flag, value)
    _one_line_refusal(result, says, code=64)


def test_launch_without_waiting_then_connect_when_ready(tmp_path: Path) -> None:
    """What Aerix's autostart does: launch, then try the socket until it answers."""
    pool = launch_pool(tmp_path, "--load", DEFAULT_MODEL, *SMALL, frames="json")

    async def first_answer() -> str:
        while True:
            try:
                client = await connect(pool.socket_path, bounds=CLIENT_BOUNDS)
            except Exception:
                await anyio.sleep(0.5)
                continue
            async with client:
                return client.mode

    try:
        assert anyio.run(first_answer) == "json"
    finally:
        pool.stop()
    assert pool.process.returncode == 0

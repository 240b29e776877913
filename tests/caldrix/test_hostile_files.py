"""Hostile model files against the real daemon and the real commands: a named pipe, random
bytes behind a legacy magic, legacy headers whose counts lie, a file that fails inside the
native loader. Each is refused in one line and leaves the pool serving.

Every process handed such a file runs under an address-space bound (RLIMIT_AS, set in the
child), so a check that fails cannot take the machine's memory, only the child's.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caldrix.cli.pool_control import process_alive
from caldrix.models.ggml_header import GGJT_ALIGNMENT
from tests.caldrix.ggml_writer import (
    LlamaHeader,
    TinyFalcon,
    TinyGpt2,
    write_llama_header,
    write_tiny_falcon,
    write_tiny_gpt2,
)
from tests.caldrix.pool_harness import (
    DEFAULT_MODEL,
    EXIT_TIMEOUT_SECS,
    PoolProcess,
    RawConnection,
    address_space_bound,
    raw_connection,
    start_pool,
)

pytestmark = [pytest.mark.e2e]

GIB = 1024**3
#: The address space every process given a hostile file may use: several times what a pool
#: serving the tiny legacy model takes (about 400 MB), far below what a header that lies
#: would make ggml allocate.
MEMORY_BOUND = 2 * GIB
#: The pool's own memory limit in these tests, under the bound: the fit check refuses first.
MEMORY_LIMIT = 1 * GIB
#: How long a command given a hostile file may take; it must end, not hang.
COMMAND_TIMEOUT_SECS = 120.0
#: The vocabulary size the issue's 200 KB legacy file claimed.
CLAIMED_VOCAB = 578_905_148
#: The form of the pool's own log lines (caldrix/log.py).
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} caldrix\[\d+\] [A-Z]+ ")


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    """A pool with no member, bounded in memory, that tests load files into."""
    folder = tmp_path_factory.mktemp("hostile-files")
    process = start_pool(
        folder, "--memory-limit", str(MEMORY_LIMIT), "--idle-timeout", "0", memory_bound=MEMORY_BOUND
    )
    yield process
    process.stop()


def request(connection: RawConnection, message: dict[str, Any]) -> dict[str, Any]:
    connection.send(message)
    return connection.receive()


def load(pool: PoolProcess, name: str, model: Path | str, **flags: Any) -> dict[str, Any]:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        return request(
            connection, {"op": "member.load", "rid": 1, "name": name, "model": str(model), "flags": flags}
        )


def unload(pool: PoolProcess, name: str) -> None:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        request(connection, {"op": "member.unload", "rid": 1, "name": name})


def member_list(pool: PoolProcess) -> dict[str, Any]:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        return request(connection, {"op": "member.list", "rid": 1})


def one_line(reply: dict[str, Any], code: str) -> str:
    assert reply["op"] == "error" and reply["code"] == code, reply
    message = reply["message"]
    assert isinstance(message, str) and message.isprintable()
    return message


def caldrix(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command, bounded in memory and time."""
    return subprocess.run(
        [sys.executable, "-m", "caldrix", *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECS,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
        preexec_fn=address_space_bound(MEMORY_BOUND),
    )


def assert_only_caldrix_lines(stderr: str) -> str:
    """Every line is caldrix's own (a log line or its ``caldrix:`` refusal), none a native
    loader's; returns the refusal."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr
    foreign = [line for line in lines if not (LOG_LINE.match(line) or line.startswith("caldrix: "))]
    assert not foreign, stderr
    refusals = [line for line in lines if line.startswith("caldrix: ")]
    assert len(refusals) == 1, stderr
    return refusals[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.gguf"
    os.mkfifo(path)
    return path


def random_tjgg(path: Path) -> Path:
    """``tjgg`` (the ``ggjt`` magic as its bytes read) and then 200 KB of random bytes."""
    path.write_bytes(b"tjgg" + os.urandom(200 * 1024))
    return path


def loader_failure(path: Path) -> Path:
    """A llama header whose small figures the file can back, and one well-formed tensor that
    is not a llama tensor: the precheck passes it, ggml's llama loader fails on it (and prints
    why on stderr)."""
    vocab = [b"a", b"b", b"c", b"d"]
    record_at = 8 + 7 * 4 + sum(4 + len(token) + 4 for token in vocab)
    name = b"not.a.llama.tensor"
    values = 64  # enough bytes for the weights the header's figures imply
    record = struct.pack("<4i", 1, len(name), 0, values) + name
    padding = bytes(-(record_at + len(record)) % GGJT_ALIGNMENT)
    return write_llama_header(path, LlamaHeader(), vocab, record + padding + bytes(4 * values))


# --- item 4: a named pipe as a model file ----------------------------------------------------


def test_a_fifo_is_refused_and_blocks_no_other_load(pool: PoolProcess, fifo: Path, tmp_path: Path) -> None:
    legacy = write_tiny_gpt2(tmp_path / "tiny.bin")
    with (
        raw_connection(pool.socket_path, pool.frames) as first,
        raw_connection(pool.socket_path, pool.frames) as second,
    ):
        first.send({"op": "member.load", "rid": 1, "name": "pipe", "model": str(fifo)})
        second.send({"op": "member.load", "rid": 1, "name": "tiny", "model": str(legacy)})
        refused = first.receive()
        loaded = second.receive()
    message = one_line(refused, "precheck_failed")
    assert "named pipe (FIFO), not a regular file" in message and str(fifo) in message
    assert loaded["op"] == "ok" and loaded["member"]["state"] == "ready", loaded
    assert [m["name"] for m in member_list(pool)["members"]] == ["tiny"]
    unload(pool, "tiny")


def test_a_load_that_does_not_return_blocks_neither_other_loads_nor_the_stop(tmp_path: Path) -> None:
    """A download from a server that accepts and never answers holds its own load only: a
    second load is served meanwhile, and pool.stop ends the pool, answering the stuck load
    'the pool is stopping' rather than waiting for its download to time out."""
    legacy = write_tiny_gpt2(tmp_path / "tiny.bin")
    cache = tmp_path / "cache"
    stuck_pool = start_pool(
        tmp_path, "--idle-timeout", "0", memory_bound=MEMORY_BOUND, env={"XDG_CACHE_HOME": str(cache)}
    )
    with socket.create_server(("127.0.0.1", 0)) as silent:
        silent.settimeout(EXIT_TIMEOUT_SECS)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/never.gguf"
        try:
            with raw_connection(stuck_pool.socket_path, "cbor") as waiting:
                waiting.send({"op": "member.load", "rid": 1, "name": "stuck", "model": url})
                accepted, _ = silent.accept()  # the download has started, and gets nothing
                with accepted:
                    loaded = load(stuck_pool, "tiny", legacy)
                    assert loaded["op"] == "ok" and loaded["member"]["state"] == "ready", loaded
                    with raw_connection(stuck_pool.socket_path, "cbor") as stopper:
                        assert request(stopper, {"op": "pool.stop", "rid": 1})["op"] == "ok"
                    reply = waiting.receive()
                    assert reply["code"] == "internal" and "the pool is stopping" in reply["message"], reply
                    assert stuck_pool.wait() == 0
        finally:
            stuck_pool.stop()


def test_a_folder_is_refused_too(pool: PoolProcess, tmp_path: Path) -> None:
    folder = tmp_path / "model.gguf"
    folder.mkdir()
    assert "a folder, not a regular file" in one_line(load(pool, "dir", folder), "precheck_failed")


def test_run_and_pool_load_refuse_a_fifo_in_one_line(fifo: Path, tmp_path: Path) -> None:
    ran = caldrix("run", str(fifo), "-p", "hi")
    assert ran.returncode == 1
    assert "named pipe (FIFO)" in assert_only_caldrix_lines(ran.stderr)
    pooled = caldrix("pool", "--socket", str(tmp_path / "run" / "p.sock"), "--load", str(fifo))
    assert pooled.returncode == 1
    refusal = assert_only_caldrix_lines(pooled.stderr)
    assert f"--load {fifo} (member 'main')" in refusal and "named pipe (FIFO)" in refusal


def test_pool_stop_reports_stopped_only_once_the_process_has_exited(tmp_path: Path) -> None:
    stopping = start_pool(tmp_path, "--idle-timeout", "0")
    try:
        done = caldrix("pool", "stop", "--socket", str(stopping.socket_path))
        assert done.returncode == 0, done.stderr
        assert f"(pid {stopping.process.pid})" in done.stdout
        # The command waited for the exit: the process is gone (a zombie for its parent, this
        # test), so collecting its status does not wait.
        assert not process_alive(stopping.process.pid)
        assert stopping.process.poll() == 0
    finally:
        stopping.stop()


def test_process_alive_tells_running_exited_and_collected_apart() -> None:
    assert process_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # wait for the exit, collect nothing
    assert not process_alive(child.pid)  # a zombie has exited
    child.wait(timeout=EXIT_TIMEOUT_SECS)
    assert not process_alive(child.pid)


# --- item 5: nothing native on a failed load ---------------------------------------------------


@pytest.mark.parametrize("make", [random_tjgg, loader_failure], ids=["random-tjgg", "loader-failure"])
def test_a_failed_load_prints_caldrix_line_only(make: Any, tmp_path: Path) -> None:
    path = make(tmp_path / "broken.bin")
    ran = caldrix("run", str(path), "-p", "hi")
    assert ran.returncode == 1
    assert_only_caldrix_lines(ran.stderr)
    pooled = caldrix("pool", "--socket", str(tmp_path / "run" / "p.sock"), "--load", str(path))
    assert pooled.returncode == 1
    assert_only_caldrix_lines(pooled.stderr)


def test_the_pool_log_holds_no_native_line_after_a_failed_load(pool: PoolProcess, tmp_path: Path) -> None:
    reply = load(pool, "broken", loader_failure(tmp_path / "broken.bin"))
    assert "could not load broken.bin" in one_line(reply, "precheck_failed")
    lines = [line for line in pool.log().splitlines() if line.strip()]
    foreign = [line for line in lines if not (LOG_LINE.match(line) or line.startswith("caldrix: "))]
    assert not foreign, foreign


# --- item 6: legacy headers that lie -------------------------------------------------------------


def test_a_vocabulary_larger_than_the_file_is_refused(pool: PoolProcess, tmp_path: Path) -> None:
    path = write_llama_header(
        tmp_path / "claims.bin", LlamaHeader(n_vocab=CLAIMED_VOCAB), [b"a"], os.urandom(200 * 1024)
    )
    message = one_line(load(pool, "claims", path), "precheck_failed")
    assert f"{CLAIMED_VOCAB:,} vocabulary entries, more than its" in message
    assert pool.process.poll() is None


@pytest.mark.parametrize(
    ("claims", "says"),
    [
        ({"n_embd": 1_000_000}, "weights"),
        ({"n_layer": 100_000}, "weights"),
        ({"n_ctx": 50_000_000}, "weights"),
        ({"n_head": 0}, "n_head 0"),
        ({"n_ctx": -1}, "window of -1 tokens"),
    ],
)
def test_gpt2_counts_the_file_cannot_back_are_refused(
    pool: PoolProcess, tmp_path: Path, claims: dict[str, int], says: str
) -> None:
    assert_refused_detected_and_named(
        pool, write_tiny_gpt2(tmp_path / "lies.bin", claims=claims), "gpt2", says
    )


def assert_refused_detected_and_named(pool: PoolProcess, path: Path, model_type: str, says: str) -> None:
    """``path`` is refused saying ``says``, both when its architecture is detected and when
    ``--model-type`` names it (the engine's own header check), and the pool lives on."""
    message = one_line(load(pool, "lies", path), "precheck_failed")
    assert says in message, message
    message = one_line(load(pool, "lies", path, model_type=model_type), "precheck_failed")
    assert says in message, message
    assert pool.process.poll() is None


def test_a_legacy_load_is_fitted_by_its_header(pool: PoolProcess, tmp_path: Path) -> None:
    """The tiny model fits the pool's limit and loads with its header's footprint; its
    real file with a window the limit cannot hold is no_fit, with the figures."""
    path = write_tiny_gpt2(tmp_path / "tiny.bin")
    loaded = load(pool, "tiny", path)
    assert loaded["op"] == "ok", loaded
    assert loaded["member"]["footprint_bytes"] > path.stat().st_size
    unload(pool, "tiny")
    refused = load(pool, "huge-window", path, ctx=2_000_000)
    message = one_line(refused, "no_fit")
    assert refused["limit_bytes"] == MEMORY_LIMIT and refused["footprint_bytes"] > MEMORY_LIMIT, message


# --- item 6, falcon: ggllm.cpp's ggcc files, whose loader ends the process on what it does not know


def generate_once(pool: PoolProcess, member: str) -> dict[str, Any]:
    """A context on ``member`` and a four-token generation on it; the ``done`` frame."""
    with raw_connection(pool.socket_path, pool.frames) as connection:
        user = {"id": "u1", "role": "user", "text": "Say the word.", "pinned": False}
        created = request(
            connection, {"op": "context.create", "rid": 1, "member": member, "segments": [user]}
        )
        assert created["op"] == "ok", created
        connection.send({"op": "generate", "rid": 2, "context": created["context"], "max_new_tokens": 4})
        while (frame := connection.receive())["op"] in ("token", "progress"):
            pass
        return frame


def test_a_falcon_ggcc_file_loads_and_generates(pool: PoolProcess, tmp_path: Path) -> None:
    """The header walk reads ggllm.cpp's format as its loader does: the tiny falcon is detected,
    fitted by its one KV head, and served."""
    path = write_tiny_falcon(tmp_path / "falcon.bin")
    loaded = load(pool, "falcon", path)
    assert loaded["op"] == "ok" and loaded["member"]["state"] == "ready", loaded
    member, shape = loaded["member"], TinyFalcon()
    # The KV of falcon's multi-query attention: one head of n_embd / n_head, f16, K and V.
    kv_row = 2 * shape.n_layer * (shape.n_embd // shape.n_head) * shape.n_head_kv * 2
    assert member["footprint_bytes"] == path.stat().st_size + member["n_ctx"] * kv_row, member
    done = generate_once(pool, "falcon")
    try:
        assert done["op"] == "done" and done["completion_tokens"] >= 1, done
    finally:
        unload(pool, "falcon")


@pytest.mark.parametrize(
    ("claims", "says"),
    [
        ({"n_vocab": CLAIMED_VOCAB}, f"{CLAIMED_VOCAB:,} vocabulary entries, more than its"),
        ({"n_vocab": 4}, "at least 12"),
        ({"n_embd": 1_000_000}, "weights"),
        ({"n_head_kv": 3}, "KV heads"),
        ({"n_head_kv": 0}, "KV heads"),
        # Neither the 7B's nor the 40B's layer count, and no type that names one: the loader
        # would assert, which ends the process.
        ({"falcon_type": 9}, "knows 32 or 60 layers"),
    ],
)
def test_falcon_counts_the_loader_cannot_take_are_refused(
    pool: PoolProcess, tmp_path: Path, claims: dict[str, int], says: str
) -> None:
    assert_refused_detected_and_named(
        pool, write_tiny_falcon(tmp_path / "lies.bin", claims=claims), "falcon", says
    )


def test_falcon_merges_past_the_file_are_refused(pool: PoolProcess, tmp_path: Path) -> None:
    path = write_tiny_falcon(tmp_path / "merges.bin")
    data = bytearray(path.read_bytes())
    count_at = data.index(struct.pack("<I", 1) + b"t" + struct.pack("<I", 1) + b"h") - 4
    data[count_at : count_at + 4] = struct.pack("<i", 50_000_000)
    path.write_bytes(bytes(data))
    message = one_line(load(pool, "merges", path), "precheck_failed")
    assert "BPE merges do not fit" in message, message


def test_an_older_ggcc_version_or_an_old_format_falcon_is_refused(pool: PoolProcess, tmp_path: Path) -> None:
    """ggllm.cpp reads only version 10; for falcons in the older llama magics it reads
    tokenizer.json beside the file and exits the process when that fails."""
    old_version = write_tiny_falcon(tmp_path / "v3.bin", version=3)
    assert "reads version 10" in one_line(load(pool, "old", old_version), "precheck_failed")
    # A ggjt file the precheck reads as llama's, given to the falcon loader.
    old_format = loader_failure(tmp_path / "ggjt-falcon.bin")
    message = one_line(load(pool, "old", old_format, model_type="falcon"), "precheck_failed")
    assert "older than ggcc" in message and "tokenizer.json" in message, message
    assert pool.process.poll() is None


def test_a_ggcc_file_read_as_another_architecture_is_refused(pool: PoolProcess, tmp_path: Path) -> None:
    path = write_tiny_falcon(tmp_path / "falcon.bin")
    for model_type in ("llama", "gpt2"):
        message = one_line(load(pool, "wrong", path, model_type=model_type), "precheck_failed")
        assert f"does not have the layout of a {model_type} GGML file" in message, message


# --- item 6, tensors: records the loaders would trust ---------------------------------------------


def first_tensor_record_at(path: Path) -> int:
    """The offset of the tiny gpt2 file's first tensor record (after its vocabulary)."""
    return path.read_bytes().index(struct.pack("<3i", 1, len(b"model/ln_f/g"), 0))


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        # gpt2's loader reads extents into a two-slot array on its stack.
        (0, 3, "claims 3 dimensions"),
        (1, 2_000_000_000, "a name of 2,000,000,000 bytes"),
        (1, -5, "a name of -5 bytes"),
        (2, 77, "tensor type 77"),
    ],
)
def test_a_tensor_record_no_loader_reads_safely_is_refused(
    pool: PoolProcess, tmp_path: Path, field: int, value: int, says: str
) -> None:
    path = write_tiny_gpt2(tmp_path / "record.bin", TinyGpt2())
    data = bytearray(path.read_bytes())
    # The last record's head: a lie there passes every earlier check.
    at = data.rindex(struct.pack("<3i", 1, len(b"model/h1/mlp/c_proj/b"), 0))
    data[at + 4 * field : at + 4 * field + 4] = struct.pack("<i", value)
    path.write_bytes(bytes(data))
    message = one_line(load(pool, "record", path), "precheck_failed")
    assert says in message, message
    assert pool.process.poll() is None


# --- item 8: a failed member holds no memory ----------------------------------------------------


def test_a_failed_members_footprint_is_not_in_use(pool: PoolProcess, tmp_path: Path) -> None:
    before = member_list(pool)["memory"]["used"]
    one_line(load(pool, "failing", loader_failure(tmp_path / "failing.bin")), "precheck_failed")
    listed = member_list(pool)
    failed = next(m for m in listed["members"] if m["name"] == "failing")
    assert failed["state"] == "failed" and failed["error"]
    assert failed["footprint_bytes"] > 0  # what it would have needed is still shown
    assert listed["memory"]["used"] == before
    unload(pool, "failing")


def test_the_default_model_still_loads_beside_nothing_hostile(pool: PoolProcess) -> None:
    """After every refusal above, the pool loads a real model."""
    loaded = load(pool, "real", DEFAULT_MODEL, ctx=512)
    assert loaded["op"] == "ok" and loaded["member"]["state"] == "ready", loaded
    unload(pool, "real")

"""Start the real pool daemon as a subprocess, and speak raw frames to it.

The pool runs as ``python -m caldrix pool …`` on a socket in a test's temporary folder, with
its log (stderr) in a file beside it, so tests can read what it said.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cbor2

from caldrix.processes import stop_process
from caldrix.protocol.client import ClientBounds
from caldrix.protocol.framing import FrameMode, decode_payload, encode_frame

#: The tests' embedded model (not the default, which no test loads), as a user names it.
DEFAULT_MODEL = "smollm2-135m"
#: How long a pool may take to load its members and bind (the machine is shared and slow).
START_TIMEOUT_SECS = 180.0
#: How long a pool may take to exit once told to.
EXIT_TIMEOUT_SECS = 60.0
#: How long a raw socket waits for a reply.
RAW_TIMEOUT_SECS = 60.0
#: How long the tests' protocol clients wait: the spec's bounds (control requests, the gap
#: between two frames, a member load), which aerix passes too.
CLIENT_BOUNDS = ClientBounds(control_secs=30.0, frame_gap_secs=600.0, member_load_secs=900.0)


@dataclass
class PoolProcess:
    process: subprocess.Popen[bytes]
    socket_path: Path
    log_path: Path
    frames: FrameMode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait(self, timeout: float = EXIT_TIMEOUT_SECS) -> int:
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        """End the pool if it still runs (SIGTERM, then SIGKILL)."""
        stop_process(self.process, EXIT_TIMEOUT_SECS)


def pool_command(*args: str, prefix: Sequence[str] = ()) -> list[str]:
    """``caldrix pool`` with ``args``, run through ``prefix`` when given (``taskset -c 0``)."""
    return [*prefix, sys.executable, "-m", "caldrix", "pool", *args]


def hostile_frame(message: dict[str, Any], mode: FrameMode) -> bytes:
    """``message`` as a frame that may carry lone surrogates as a client could send them: in
    JSON as the escape ``\\ud800`` (valid JSON text), in CBOR as the three bytes UTF-8 would
    give the surrogate (``ed a0 80``, which strict UTF-8 refuses). A correct encoder, like the
    codec's, writes neither. NaN and infinities are written as JSON's writer spells them."""
    if mode == "json":
        payload = json.dumps(message, ensure_ascii=True).encode("ascii")
    else:
        payload = _cbor_with_raw_text(message)
    return struct.pack(">I", len(payload)) + payload


def _cbor_with_raw_text(value: Any) -> bytes:
    """CBOR where text is written as the bytes ``surrogatepass`` gives (cbor2 refuses to write
    a text that is not UTF-8); everything else as cbor2 writes it."""
    if isinstance(value, dict):
        items = b"".join(_cbor_with_raw_text(k) + _cbor_with_raw_text(v) for k, v in value.items())
        return _cbor_head(5, len(value)) + items
    if isinstance(value, list):
        return _cbor_head(4, len(value)) + b"".join(_cbor_with_raw_text(v) for v in value)
    if isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        return _cbor_head(3, len(raw)) + raw
    return cbor2.dumps(value)


def _cbor_head(major: int, length: int) -> bytes:
    if length < 24:
        return bytes([major << 5 | length])
    return bytes([major << 5 | 26]) + struct.pack(">I", length)


def address_space_bound(limit_bytes: int | None) -> Callable[[], None] | None:
    """A ``preexec_fn`` that caps the child's address space at ``limit_bytes`` (RLIMIT_AS), so
    a test that hands it a hostile file cannot take the machine's memory: past the bound an
    allocation fails inside the child, never outside it."""
    if limit_bytes is None:
        return None

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return bound


def launch_pool(
    folder: Path,
    *args: str,
    frames: FrameMode = "cbor",
    socket_path: Path | None = None,
    memory_bound: int | None = None,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> PoolProcess:
    """Start a pool without waiting for it; ``memory_bound`` caps its address space, ``env``
    adds to its environment, ``prefix`` is a command it runs through (``taskset -c 0``)."""
    path = socket_path or folder / "run" / "pool.sock"
    log_path = folder / f"pool-{time.monotonic_ns()}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            pool_command("--socket", str(path), "--frames", frames, *args, prefix=prefix),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=address_space_bound(memory_bound),
            env={**os.environ, **env} if env else None,
        )
    return PoolProcess(process=process, socket_path=path, log_path=log_path, frames=frames)


def start_pool(
    folder: Path,
    *args: str,
    frames: FrameMode = "cbor",
    socket_path: Path | None = None,
    memory_bound: int | None = None,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> PoolProcess:
    """Start a pool and wait until its socket answers (it binds only once loaded). However the
    wait ends without an answer (Ctrl-C while the model loads included), the pool is stopped:
    a benchmark stopped then left its pool running, its model in memory."""
    pool = launch_pool(
        folder,
        *args,
        frames=frames,
        socket_path=socket_path,
        memory_bound=memory_bound,
        env=env,
        prefix=prefix,
    )
    try:
        _wait_until_it_answers(pool)
    except BaseException:
        pool.stop()
        raise
    return pool


def _wait_until_it_answers(pool: PoolProcess) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECS
    while time.monotonic() < deadline:
        if pool.process.poll() is not None:
            raise RuntimeError(f"the pool exited with {pool.process.returncode}:\n{pool.log()}")
        if _answers(pool.socket_path):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the pool did not answer within {START_TIMEOUT_SECS} s:\n{pool.log()}")


def start_scripted_pool(folder: Path, completions: list[str], ctx: int, frames: FrameMode) -> PoolProcess:
    """A pool whose ``main`` is the scripted engine on the embedded model (its real tokenizer
    and template) answering ``completions`` in turn, with a window of ``ctx`` tokens."""
    script = folder / "script.json"
    script.write_text(json.dumps(completions))
    return start_pool(
        folder,
        "--load",
        DEFAULT_MODEL,
        "--engine",
        "scripted",
        "--script",
        str(script),
        "--ctx",
        str(ctx),
        "--idle-timeout",
        "0",
        frames=frames,
    )


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(os.fspath(path))
        except OSError:
            return False
        return True


class RawConnection:
    """A blocking socket that sends and receives frames byte for byte."""

    def __init__(self, path: Path, mode: FrameMode) -> None:
        self.mode: FrameMode = mode
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(RAW_TIMEOUT_SECS)
        self.sock.connect(os.fspath(path))

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(encode_frame(message, self.mode))

    def hello(self) -> dict[str, Any]:
        self.send({"op": "hello", "protocol": 2, "client": "pool-tests"})
        return self.receive()

    def receive(self) -> dict[str, Any]:
        (length,) = struct.unpack(">I", self._exactly(4))
        return decode_payload(self._exactly(length), self.mode)

    def receive_until_eof(self) -> list[dict[str, Any]]:
        """Every frame until the pool closes the connection."""
        frames = []
        while True:
            try:
                frames.append(self.receive())
            except (EOFError, ConnectionResetError):
                return frames

    def at_eof(self) -> bool:
        """Whether the pool has closed this connection (reads until EOF or timeout)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError(f"the pool closed the connection after {len(data)} of {n} bytes")
            data += chunk
        return data


@contextmanager
def raw_connection(path: Path, mode: FrameMode, *, hello: bool = True) -> Iterator[RawConnection]:
    connection = RawConnection(path, mode)
    try:
        if hello:
            reply = connection.hello()
            assert reply["op"] == "hello", reply
        yield connection
    finally:
        connection.close()

"""Finding the pool the front serves, or starting it.

``caldrix serve`` and ``caldrix launch`` look for a pool on the socket first. When none answers
and they were told what to load (``--load MODEL``), they start one — ``caldrix pool --socket S
--load MODEL`` and any ``--pool-flags`` — in its own session (a Ctrl-C in the terminal does not
reach it), its output appended to ``pool-start.log`` in the socket's folder, and wait until it
answers. Two starting at once start one pool: the one that finds nothing answering takes a lock
beside the socket and looks again before it starts one. The pool is left running for its other
clients; it exits by itself after its idle timeout.
"""

from __future__ import annotations

import fcntl
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio

from caldrix.errors import CaldrixError, PoolUnavailable
from caldrix.protocol import ClientBounds, connect, default_socket_path

#: How often a starting pool is asked whether it answers yet.
POLL_SECS: Final = 0.25
#: The log a started pool writes to, in the socket's folder.
START_LOG: Final = "pool-start.log"
_PROBE = ClientBounds(5.0, 5.0, 5.0)


@dataclass(frozen=True)
class PoolFound:
    socket: Path
    pid: int
    started: bool


async def answering(socket: Path) -> int | None:
    """The pid of the pool answering on ``socket``, or None."""
    if not socket.exists():
        return None
    try:
        client = await connect(socket, bounds=_PROBE, client_name="caldrix serve (probe)")
    except (CaldrixError, OSError):
        return None
    pid = client.hello.pid
    await client.aclose()
    return pid


async def find_or_start(
    socket: Path | None, load: str | None, pool_flags: Sequence[str], wait_secs: float
) -> PoolFound:
    """The pool on ``socket`` (default: the default socket); started with ``load`` when none
    answers, else a refusal that says how to start one."""
    path = socket or default_socket_path()
    pid = await answering(path)
    if pid is not None:
        return PoolFound(path, pid, started=False)
    if load is None:
        raise PoolUnavailable(
            f"no caldrix pool answers on {path}; start one (caldrix pool --socket {path} --load MODEL) "
            "or pass --load MODEL to start it"
        )
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with (path.parent / (path.name + ".start.lock")).open("a+") as lock:
        with anyio.fail_after(wait_secs):
            while True:
                try:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    await anyio.sleep(POLL_SECS)
        try:
            pid = await answering(path)  # another may have started it while this one waited
            if pid is not None:
                return PoolFound(path, pid, started=False)
            command = [
                sys.executable,
                "-m",
                "caldrix",
                "pool",
                "--socket",
                str(path),
                "--load",
                load,
                *pool_flags,
            ]
            return PoolFound(path, await _start(command, path, wait_secs), started=True)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


async def _start(command: list[str], socket: Path, wait_secs: float) -> int:
    log_path = socket.parent / START_LOG
    with log_path.open("ab") as log:
        log.write(f"--- starting: {shlex.join(command)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    with anyio.move_on_after(wait_secs):
        while process.poll() is None:
            pid = await answering(socket)
            if pid is not None:
                return pid
            await anyio.sleep(POLL_SECS)
    if process.poll() is None:
        raise PoolUnavailable(
            f"the pool started as pid {process.pid} did not answer on {socket} within {wait_secs:g} s; "
            f"see {log_path}"
        )
    raise PoolUnavailable(
        f"the pool exited with status {process.returncode} before answering on {socket}: "
        f"{_last_line(log_path)} (see {log_path})"
    )


def _last_line(log_path: Path) -> str:
    try:
        lines = log_path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""

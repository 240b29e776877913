"""Find the pool, or start it the way the spec says.

When nothing answers on the socket, aerix runs
``<pool.caldrix> pool --socket <socket> --load <main model> <main flags>`` (then
``--max-connections <pool.max_connections>``) in its own process group (so a Ctrl-C in the
terminal does not reach it), appends its output to
``$XDG_STATE_HOME/aerix/pool-start.log``, and tries the socket every
:data:`~aerix.domain.bounds.AUTOSTART_POLL_SECS` for up to ``pool.start_timeout_secs``. The pool
binds only after its ``--load`` has loaded, so the wait covers a download too. The pool is left
running for every aerix process to share.

Two aerix processes starting at once must start one pool: whoever finds nothing answering
takes an exclusive ``flock`` on ``<socket>.start.lock`` beside the socket, looks again, and only
then starts a pool; the other waits on the lock and then finds the pool answering.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from aerix.adapters.paths import state_home
from aerix.adapters.pool.client import CaldrixPool, client_bounds
from aerix.app.ports.pool import OpenedPool
from aerix.domain.bounds import AUTOSTART_POLL_SECS
from aerix.domain.settings import PoolSettings
from aerix.errors import PoolStartFailed
from caldrix.protocol import (
    CaldrixError,
    ClientBounds,
    connect,
    default_socket_path,
    overlong_socket_path,
    unwritable_socket_folder,
)

POOL_START_LOG = "pool-start.log"


@dataclass(frozen=True)
class PoolFound:
    """Where the pool is, and whether this process started it."""

    socket: Path
    pid: int
    started: bool
    command: tuple[str, ...] = ()


def socket_path(settings: PoolSettings) -> Path:
    """``pool.socket`` (``~`` expanded), else caldrix's default socket."""
    return Path(settings.socket).expanduser() if settings.socket else default_socket_path()


def pool_start_log() -> Path:
    return state_home() / POOL_START_LOG


def start_command(settings: PoolSettings, socket: Path) -> list[str]:
    """The autostart command line as the spec spells it, then ``pool.max_connections``: the
    pool admits that many generations at once, from every aerix that shares it."""
    caldrix = _caldrix_executable(settings.caldrix)
    flags = settings.main_flags.as_cli_args()
    limit = ["--max-connections", str(settings.max_connections)]
    return [*caldrix, "pool", "--socket", str(socket), "--load", settings.main, *flags, *limit]


async def find_or_start_pool(settings: PoolSettings) -> PoolFound:
    """The pool answering on the configured socket, starting one first if none does."""
    socket = socket_path(settings)
    bounds = client_bounds(settings)
    pid = await answering_pid(socket, bounds)
    if pid is not None:
        return PoolFound(socket, pid, started=False)
    overlong = overlong_socket_path(socket)
    if overlong is not None:  # refused before a start, as caldrix pool would refuse it after one
        raise PoolStartFailed(f"{overlong} with the pool.socket setting")
    socket.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    unwritable = unwritable_socket_folder(socket.parent)
    if unwritable is not None:  # as caldrix pool refuses it: the same line, never a changed mode
        raise PoolStartFailed(f"{unwritable} with the pool.socket setting")
    lock_path = socket.with_name(socket.name + ".start.lock")
    with lock_path.open("a+") as lock:
        await _acquire(lock.fileno(), settings.start_timeout_secs, lock_path)
        try:
            pid = await answering_pid(socket, bounds)  # someone else may have started it while we waited
            if pid is not None:
                return PoolFound(socket, pid, started=False)
            command = start_command(settings, socket)
            process, log_start = _spawn(command)
            pid = await _wait_for_socket(
                socket, bounds, process, settings.start_timeout_secs, command, log_start
            )
            return PoolFound(socket, pid, started=True, command=tuple(command))
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


async def answering_pid(socket: Path, bounds: ClientBounds) -> int | None:
    """The pid of the pool answering on ``socket``, or None when nothing answers."""
    if not socket.exists():
        return None
    try:
        client = await connect(socket, bounds=bounds, client_name="aerix autostart")
    except CaldrixError:
        return None
    pid = client.hello.pid
    await client.aclose()
    return pid


def _caldrix_executable(configured: str) -> list[str]:
    """``pool.caldrix`` as an argv prefix. The default ``caldrix`` prefers the script installed
    beside this Python (a venv not on PATH), then PATH."""
    parts = shlex.split(configured) or ["caldrix"]
    if parts == ["caldrix"]:
        beside = Path(sys.executable).parent / "caldrix"
        if beside.exists():
            return [str(beside)]
        found = shutil.which("caldrix")
        return [found] if found else [sys.executable, "-m", "caldrix"]
    return parts


def _spawn(command: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    """Start the pool with its output appended to the log; (the process, where its output
    starts in the log)."""
    log_path = pool_start_log()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        # A pool that died mid-line (its last message has no newline) must not swallow the header.
        separator = "\n" if log.tell() and not _ends_with_newline(log_path) else ""
        header = f"--- {stamp} aerix (pid {os.getpid()}) starts: {shlex.join(command)}"
        log.write(f"{separator}{header}\n".encode())
        log.flush()
        output_start = log.tell()  # before the pool shares (and moves) this file offset
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
            return process, output_start
        except OSError as exc:
            raise PoolStartFailed(
                f"could not run the pool command {command[0]!r} ({exc.strerror}); "
                "set pool.caldrix to the caldrix command"
            ) from exc


async def _wait_for_socket(
    socket: Path,
    bounds: ClientBounds,
    process: subprocess.Popen[bytes],
    timeout: float,
    command: list[str],
    log_start: int,
) -> int:
    deadline = anyio.current_time() + timeout
    while True:
        pid = await answering_pid(socket, bounds)
        if pid is not None:
            return pid
        status = process.poll()
        if status is not None:
            said = _last_line(pool_start_log(), log_start)
            raise PoolStartFailed(
                f"the pool exited with status {status} before answering on {socket}"
                + (f": {said}" if said else "")
                + f"; see {pool_start_log()} ({shlex.join(command)})"
            )
        if anyio.current_time() >= deadline:
            raise PoolStartFailed(
                f"the pool did not answer on {socket} within {timeout:g} s (pool.start_timeout_secs); "
                f"it is still starting as pid {process.pid}; see {pool_start_log()}"
            )
        await anyio.sleep(AUTOSTART_POLL_SECS)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as file:
        file.seek(-1, os.SEEK_END)
        return file.read(1) == b"\n"


def _last_line(log_path: Path, start: int) -> str:
    """The last line the pool wrote (its one-line reason when it refuses to start)."""
    try:
        with log_path.open("rb") as log:
            log.seek(start)
            output = log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else ""


async def _acquire(fd: int, timeout: float, lock_path: Path) -> None:
    """Take the start lock without blocking the event loop, for up to ``timeout``."""
    deadline = anyio.current_time() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if anyio.current_time() >= deadline:
                raise PoolStartFailed(
                    f"another aerix has been starting the pool for {timeout:g} s ({lock_path}); "
                    "try again, or start it with 'caldrix pool'"
                ) from None
            await anyio.sleep(AUTOSTART_POLL_SECS)


class AutostartPool:
    """:class:`aerix.app.ports.pool.PoolStarter`: find or start the pool, then connect to it."""

    async def open(self, settings: PoolSettings) -> OpenedPool:
        found = await find_or_start_pool(settings)
        pool = CaldrixPool(found.socket, settings)
        return OpenedPool(pool, found.socket, found.pid, found.started)

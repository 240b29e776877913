"""The files beside a session log's lines: the writer's lock (an exclusive ``flock``, the
holder's pid and host written in it for the ``SessionBusy`` line) and the log's ends (its last
complete line read from the end, whether it ends with a newline)."""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

_TAIL_CHUNK = 65536


def try_lock(lock_path: Path) -> int | None:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def write_holder(lock_fd: int) -> None:
    os.ftruncate(lock_fd, 0)
    os.pwrite(lock_fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)


def lock_holder(lock_path: Path) -> str:
    try:
        return lock_path.read_text().strip() or "unknown process"
    except OSError:
        return "unknown process"


def ends_with_newline(path: Path, size: int) -> bool:
    with path.open("rb") as log:
        log.seek(size - 1)
        return log.read(1) == b"\n"


def last_line(path: Path) -> bytes | None:
    """The last complete line of a file, read from the end."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    with path.open("rb") as log:
        end = size
        chunk = b""
        while end > 0:
            start = max(0, end - _TAIL_CHUNK)
            log.seek(start)
            chunk = log.read(end - start) + chunk
            end = start
            body = chunk[: chunk.rfind(b"\n")] if b"\n" in chunk else b""
            cut = body.rfind(b"\n")
            if cut >= 0 or (end == 0 and body):
                return body[cut + 1 :] if body else None
        return None

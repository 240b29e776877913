"""Model files opened so that nothing can make a load hang or read another file.

A model path is opened once, without blocking, and checked on the opened file: a named pipe,
whose open waits for a writer, is refused instead of hanging whoever asked. Everything after
that — the header read, the tensor walk, the native loader's own open — goes through the same
open file, so a name swapped for a pipe (or another file) between the check and the load
changes nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from caldrix.errors import ModelNotFound, PrecheckFailed

#: Where Linux lets a process open again a file it holds open, by descriptor: the same file
#: whatever its name now names.
PROC_FD_FOLDER = Path("/proc/self/fd")


def open_regular_file(path: Path) -> BinaryIO:
    """``path`` opened for reading, refused unless it is a regular file. The open itself does
    not block (O_NONBLOCK), so a named pipe is refused here instead of hanging whoever asked;
    the check is made on the opened file, not on the name."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            reason = f"it is {_file_kind(mode)}, not a regular file; a model must be a regular file"
            raise PrecheckFailed(f"{path}: {reason}", path=str(path), reason=reason)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_model_file(path: Path) -> BinaryIO:
    """:func:`open_regular_file`, with a missing file as ``model_not_found`` and any other
    failure to read it as ``precheck_failed``, each one line: how an engine opens its model."""
    try:
        return open_regular_file(path)
    except FileNotFoundError:
        raise ModelNotFound(f"no model file at {path}") from None
    except OSError as exc:
        raise PrecheckFailed(f"cannot read {path}: {exc.strerror}") from exc


def native_path(handle: BinaryIO, path: Path) -> str:
    """The path to give a native loader for the file ``handle`` holds open: its descriptor's
    entry under ``/proc/self/fd`` where the system has one, so the loader opens this very file
    even if ``path`` has since been replaced; ``path`` itself elsewhere."""
    pinned = PROC_FD_FOLDER / str(handle.fileno())
    return str(pinned) if pinned.exists() else str(path)


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((words for test, words in kinds if test(mode)), "not a file")

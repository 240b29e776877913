"""Making files survive a power loss, not only a killed process.

A write that returned is in the kernel's page cache: it outlives the process, not the machine.
``fsync`` on the file makes its bytes durable; ``fsync`` on its folder makes a new name (a
created file, a rename) durable. The session store syncs at its commit points; the files it
rebuilds from the log (the index, the transcript) and the spool are replaced atomically:
written beside, synced, renamed, and the folder synced. The transcript hooks follow during a
request is appended to instead (``append_durably``): a torn last line after a power loss makes
the next request write it whole.
"""

from __future__ import annotations

import os
from pathlib import Path


def sync_folder(folder: Path) -> None:
    """Make the names in ``folder`` (a file just created or renamed there) durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_folder(folder: Path) -> None:
    """``mkdir -p``, with each folder it creates made durable in its parent."""
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.is_dir():
            break
        missing.append(candidate)
    folder.mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):
        sync_folder(created.parent)


def write_fully(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (a short write on a full disk or a signal is finished)."""
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, data[written:])


def replace_durably(path: Path, data: bytes) -> None:
    """Put ``data`` at ``path`` at once: a reader sees the old file or the new one, and after a
    power loss the new one is there whole, or the old one is."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write_synced(temporary, os.O_TRUNC, data)
    os.replace(temporary, path)
    sync_folder(path.parent)


def append_durably(path: Path, data: bytes) -> None:
    """Add ``data`` at the end of ``path`` (made when missing) and sync it; a new file's name is
    made durable in its folder."""
    created = not path.exists()
    make_folder(path.parent)
    _write_synced(path, os.O_APPEND, data)
    if created:
        sync_folder(path.parent)


def _write_synced(path: Path, mode: int, data: bytes) -> None:
    """Write ``data`` to ``path`` opened (created when missing) with ``mode`` (``O_TRUNC`` or
    ``O_APPEND``), and sync it before closing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode, 0o666)
    try:
        write_fully(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)

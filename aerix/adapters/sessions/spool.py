"""Spool files: the whole original of a tool result that was cut to fit its cap.

They live beside the session, in ``<id>.spool/``, one file per result, written once. The loop
calls ``write_spool`` and puts the returned path in the pointer line
(``[truncated: N more bytes; read with read(path="...", offset=1)]``).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from aerix.adapters.sessions.durable import make_folder, replace_durably
from aerix.app.ports.sessions import SessionRef

SPOOL_SUFFIX = ".spool"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def spool_dir(session_log: Path) -> Path:
    """``<id>.spool/`` beside ``<id>.jsonl``."""
    return session_log.with_name(session_log.name.removesuffix(".jsonl") + SPOOL_SUFFIX)


def write_spool(session_log: Path, name: str, text: str) -> Path:
    """Write ``text`` once as ``<name>.txt`` (``a1.c3``) in the session's spool; returns its path.

    Written to a temporary name, synced and renamed, so a reader never sees half a file and the
    pointer line's file survives a power loss as the result that names it does. A second write
    under the same name keeps the first file and adds a numbered one.
    """
    folder = spool_dir(session_log)
    make_folder(folder)
    stem = _UNSAFE.sub("_", name)
    target = folder / f"{stem}.txt"
    number = 1
    while target.exists():
        number += 1
        target = folder / f"{stem}.{number}.txt"
    replace_durably(target, text.encode("utf-8"))
    return target


class SpoolFiles:
    """The spools of the sessions (``SessionSpool``): beside each log, found by its ref."""

    def write(self, ref: SessionRef, name: str, text: str) -> Path:
        return write_spool(ref.log, name, text)

    def remove(self, ref: SessionRef) -> list[Path]:
        folder = spool_dir(ref.log)
        if not folder.exists():
            return []
        shutil.rmtree(folder)
        return [folder]

"""Where sessions are on disk: the logs under the sessions root, one folder per project key
(``session_store`` has the layout), found by id or prefix, sized, checked for a live writer,
and deleted."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from aerix.adapters import paths
from aerix.adapters.sessions.jsonl_store import LOCK_SUFFIX, TORN_SUFFIX
from aerix.app.ports.sessions import SessionRef
from aerix.errors import SessionAmbiguous, SessionNotFound

TRANSCRIPT_SUFFIX = ".claude.jsonl"


class SessionCatalogFiles:
    """The ``SessionCatalog`` port over the sessions root."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or paths.sessions_root()

    def ref(self, project: str, session_id: str) -> SessionRef:
        return SessionRef(session_id, project, self.root / project)

    def refs(self, project: str | None = None) -> list[SessionRef]:
        folders = [self.root / project] if project else sorted(self.root.glob("*"))
        found = []
        for folder in folders:
            if not folder.is_dir():
                continue
            for log in sorted(folder.glob("*.jsonl")):
                if not log.name.endswith(TRANSCRIPT_SUFFIX):
                    found.append(SessionRef(log.name.removesuffix(".jsonl"), folder.name, folder))
        return found

    def find(self, id_or_prefix: str) -> SessionRef:
        """The one session whose id is, or starts with, ``id_or_prefix``, in any project."""
        matches = [ref for ref in self.refs() if ref.id == id_or_prefix]
        if not matches:
            matches = [ref for ref in self.refs() if ref.id.startswith(id_or_prefix)] if id_or_prefix else []
        if not matches:
            raise SessionNotFound(id_or_prefix)
        if len(matches) > 1:
            raise SessionAmbiguous(id_or_prefix, [f"{ref.project}/{ref.id}" for ref in matches])
        return matches[0]

    def projects(self) -> list[str]:
        return sorted(folder.name for folder in self.root.glob("*") if folder.is_dir())

    def exists(self, ref: SessionRef) -> bool:
        return ref.log.exists()

    def log_size(self, ref: SessionRef) -> int:
        try:
            return ref.log.stat().st_size
        except FileNotFoundError:
            return 0

    def is_locked(self, ref: SessionRef) -> bool:
        """Whether a live writer holds the session (another process, or this one: a lock taken
        through another descriptor conflicts even in the same process)."""
        lock_path = ref.folder / f"{ref.id}{LOCK_SUFFIX}"
        if not lock_path.exists():
            return False
        fd = os.open(lock_path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def remove(self, ref: SessionRef) -> list[Path]:
        """Delete the log and the files of its writing (its lock, a torn tail)."""
        removed = []
        for path in (ref.log, ref.folder / f"{ref.id}{TORN_SUFFIX}", ref.folder / f"{ref.id}{LOCK_SUFFIX}"):
            if path.exists():
                path.unlink()
                removed.append(path)
        return removed

"""The session store's files: the event log (where sessions are, reading, appending, the
writer's lock), and ``SessionFiles``, the store by job over one folder (this log, the
projection files of ``projection_files``, the spool of ``spool``).

Layout under ``$XDG_DATA_HOME/aerix/sessions/``::

    <project key>/
        index.json              the index of this project's sessions (a projection)
        <id>.jsonl              the session log (the record)
        <id>.jsonl.lock         the writer's lock
        <id>.jsonl.torn         unfinished lines set aside after a crash
        <id>.spool/             untruncated tool results
        <id>.claude.jsonl       the Claude Code transcript (a projection)
        <id>/subagents/         its subagents, agent-<agent id>.jsonl each (Claude Code's layout)

Claude Code's projects folder may hold links to the transcripts (see ``projection_files``).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

from aerix.adapters import paths
from aerix.adapters.sessions.jsonl_lines import EncodedRecord, encode_record
from aerix.adapters.sessions.jsonl_store import LOCK_SUFFIX, TORN_SUFFIX, SessionLogFolder
from aerix.adapters.sessions.projection_files import SessionViewFiles
from aerix.adapters.sessions.spool import SpoolFiles
from aerix.app.ports.sessions import ReplaceOutcome, SessionRef, SessionStorage
from aerix.domain.events import EventBase
from aerix.errors import SessionAmbiguous, SessionNotFound

TRANSCRIPT_SUFFIX = ".claude.jsonl"


class SessionFiles(SessionStorage):
    """The session store over one folder, by job: the log, the projection files, the spool."""

    def __init__(self, root: Path | None = None) -> None:
        root = root or paths.sessions_root()
        super().__init__(log=SessionLogFiles(root), views=SessionViewFiles(root), spool=SpoolFiles())


class SessionLogFiles:
    """Finds, reads, appends to and removes session logs; one ``SessionLogFolder`` per project."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or paths.sessions_root()
        self._folders: dict[str, SessionLogFolder] = {}
        #: (seq, type) of each record written with U+FFFD for text that could not be UTF-8.
        self._replaced: list[tuple[int, str]] = []

    def folder(self, project: str) -> SessionLogFolder:
        folder = self._folders.get(project)
        if folder is None:
            folder = self._folders[project] = SessionLogFolder(self.root / project)
        return folder

    def _encoded(self, records: Sequence[EventBase]) -> list[EncodedRecord]:
        encoded = [encode_record(record) for record in records]
        self._replaced.extend((each.record.seq, each.record.type) for each in encoded if each.replaced)
        return encoded

    def append(self, ref: SessionRef, records: Sequence[EventBase], sync: bool = False) -> list[EventBase]:
        """Write the session's new records, each as its line, synced to disk first when ``sync``;
        another writer's append in between is ``SessionBusy``. Returns the records as written."""
        encoded = self._encoded(records)
        self.folder(ref.project).append(ref.id, encoded, sync=sync)
        return [each.record for each in encoded]

    def notices(self) -> list[str]:
        """Crash repairs and the like since the last call, one line each."""
        lines = [line for folder in self._folders.values() for line in folder.notices]
        for folder in self._folders.values():
            folder.notices.clear()
        if self._replaced:
            seq, kind = self._replaced[0]
            lines.append(
                f"{len(self._replaced)} event(s) held text that is not valid UTF-8 (the first: "
                f"seq {seq}, {kind}), recorded with U+FFFD in its place"
            )
            self._replaced.clear()
        return lines

    def close(self) -> None:
        for folder in self._folders.values():
            folder.close()

    # ---- finding ------------------------------------------------------------------------------

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

    def exists(self, ref: SessionRef) -> bool:
        return ref.log.exists()

    def log_size(self, ref: SessionRef) -> int:
        try:
            return ref.log.stat().st_size
        except FileNotFoundError:
            return 0

    def read(self, ref: SessionRef) -> list[EventBase]:
        return self.folder(ref.project).read_records(ref.id)

    def projects(self) -> list[str]:
        return sorted(folder.name for folder in self.root.glob("*") if folder.is_dir())

    def remove(self, ref: SessionRef) -> list[Path]:
        """Delete the log and the files of its writing (its lock, a torn tail)."""
        self.folder(ref.project).release(ref.id)
        removed = []
        for path in (ref.log, ref.folder / f"{ref.id}{TORN_SUFFIX}", ref.folder / f"{ref.id}{LOCK_SUFFIX}"):
            if path.exists():
                path.unlink()
                removed.append(path)
        return removed

    def acquire(self, ref: SessionRef) -> int:
        """Become the session's only writer (``SessionBusy`` otherwise); returns its last seq."""
        return self.folder(ref.project).acquire(ref.id)

    def sync(self, ref: SessionRef) -> None:
        self.folder(ref.project).sync(ref.id)

    def release(self, ref: SessionRef) -> None:
        self.folder(ref.project).release(ref.id)

    def replace_if_changed(self, ref: SessionRef, records: Sequence[EventBase]) -> ReplaceOutcome:
        """Write a whole log unless it already holds exactly these events: new, updated or unchanged."""
        folder = self.folder(ref.project)
        encoded = self._encoded(records)
        wanted = b"".join(each.line for each in encoded)
        try:
            existing: bytes | None = ref.log.read_bytes()
        except FileNotFoundError:
            existing = None
        if existing == wanted:
            return "unchanged"
        try:
            folder.replace(ref.id, encoded)
        finally:
            folder.release(ref.id)
        return "new" if existing is None else "updated"

    def is_locked(self, ref: SessionRef) -> bool:
        """Whether a live writer holds the session (another process, or this one)."""
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

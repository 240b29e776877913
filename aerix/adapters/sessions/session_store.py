"""The session store's files: the event log (reading, appending, the writer's lock), and
``SessionFiles``, the store by job over one folder (where sessions are, of ``session_catalog``;
this log; the projection files of ``projection_files``; the spool of ``spool``).

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

from collections.abc import Sequence
from pathlib import Path

from aerix.adapters import paths
from aerix.adapters.sessions.jsonl_lines import EncodedRecord, encode_record
from aerix.adapters.sessions.jsonl_store import SessionLogFolder
from aerix.adapters.sessions.projection_files import SessionViewFiles
from aerix.adapters.sessions.session_catalog import SessionCatalogFiles
from aerix.adapters.sessions.spool import SpoolFiles
from aerix.app.ports.sessions import ReplaceOutcome, SessionRef, SessionStorage
from aerix.domain.events import EventBase


class SessionFiles(SessionStorage):
    """The session store over one folder, by job: where sessions are, the log, the projection
    files, the spool."""

    def __init__(self, root: Path | None = None) -> None:
        root = root or paths.sessions_root()
        super().__init__(
            catalog=SessionCatalogFiles(root),
            log=SessionLogFiles(root),
            views=SessionViewFiles(root),
            spool=SpoolFiles(),
        )


class SessionLogFiles:
    """Reads and appends to session logs; one ``SessionLogFolder`` per project."""

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

    def read(self, ref: SessionRef) -> list[EventBase]:
        return self.folder(ref.project).read_records(ref.id)

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

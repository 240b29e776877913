"""The session store's files: where sessions are, their index, transcripts, removal.

Layout under ``$XDG_DATA_HOME/aerix/sessions/``::

    <project key>/
        index.json              the index of this project's sessions (a projection)
        <id>.jsonl              the session log (the record)
        <id>.jsonl.lock         the writer's lock
        <id>.jsonl.torn         unfinished lines set aside after a crash
        <id>.spool/             untruncated tool results
        <id>.claude.jsonl       the Claude Code transcript (a projection)
        <id>/subagents/         its subagents, agent-<agent id>.jsonl each (Claude Code's layout)

With ``transcript.claude_projects`` on, Claude Code's projects folder gets symbolic links to
the transcript: ``<claude config>/projects/<cwd, each non-alphanumeric "-">/<id>.jsonl`` and
``…/<id>`` (the subagents' folder), so the readers of Claude Code's files find aerix's sessions.
A link follows every rewrite of the transcript; removing a session removes its links.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from eventsourcing.persistence import IntegrityError

from aerix.adapters import paths
from aerix.adapters.durable import append_durably, make_folder, replace_durably
from aerix.adapters.jsonl_lines import PlainJSONMapper
from aerix.adapters.jsonl_store import LOCK_SUFFIX, TORN_SUFFIX, SessionLogRecorder
from aerix.adapters.spool import spool_dir, write_spool
from aerix.app.ports import SessionRef
from aerix.app.ports.sessions import ReplaceOutcome
from aerix.domain.claude_tools import claude_project_dir_name
from aerix.domain.events import EventBase
from aerix.errors import SessionAmbiguous, SessionBusy, SessionNotFound

INDEX_NAME = "index.json"
TRANSCRIPT_SUFFIX = ".claude.jsonl"


class SessionFiles:
    """Finds, reads, indexes and removes sessions; one recorder per project folder."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or paths.sessions_root()
        self.mapper = PlainJSONMapper()
        self._recorders: dict[str, SessionLogRecorder] = {}

    def recorder(self, project: str) -> SessionLogRecorder:
        recorder = self._recorders.get(project)
        if recorder is None:
            recorder = self._recorders[project] = SessionLogRecorder(self.root / project)
        return recorder

    def append(self, ref: SessionRef, records: Sequence[EventBase], sync: bool = False) -> None:
        """Write the session's new records, each as its line (eventsourcing's recorder interface,
        our recorder), synced to disk first when ``sync``; another writer's append in between is
        ``SessionBusy``."""
        stored = [self.mapper.to_stored_event(ref.id, record) for record in records]
        try:
            self.recorder(ref.project).insert_events(stored, sync=sync)
        except IntegrityError as exc:
            raise SessionBusy(ref.id, "another writer appended to it") from exc

    def notices(self) -> list[str]:
        """Crash repairs and the like since the last call, one line each."""
        lines = [line for recorder in self._recorders.values() for line in recorder.notices]
        for recorder in self._recorders.values():
            recorder.notices.clear()
        if self.mapper.replaced:
            seq, kind = self.mapper.replaced[0]
            lines.append(
                f"{len(self.mapper.replaced)} event(s) held text that is not valid UTF-8 (the first: "
                f"seq {seq}, {kind}), recorded with U+FFFD in its place"
            )
            self.mapper.replaced.clear()
        return lines

    def close(self) -> None:
        for recorder in self._recorders.values():
            recorder.close()

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
        return self.recorder(ref.project).read_records(ref.id)

    # ---- the index ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def index_locked(self, project: str) -> Iterator[dict[str, dict[str, Any]]]:
        """The project's index entries by id, to read and change; written back on exit."""
        folder = self.root / project
        make_folder(folder)
        lock_fd = os.open(folder / f"{INDEX_NAME}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            entries = self.load_index(project)
            yield entries
            _write_json(folder / INDEX_NAME, {"version": 1, "sessions": list(entries.values())})
        finally:
            os.close(lock_fd)

    def load_index(self, project: str) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads((self.root / project / INDEX_NAME).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        sessions = data.get("sessions") if isinstance(data, dict) else None
        if not isinstance(sessions, list):
            return {}
        return {entry["id"]: entry for entry in sessions if isinstance(entry, dict) and "id" in entry}

    def projects(self) -> list[str]:
        return sorted(folder.name for folder in self.root.glob("*") if folder.is_dir())

    # ---- writing projections and removing -------------------------------------------------------

    def write_transcript(
        self, ref: SessionRef, lines: list[str], subagents: Mapping[str, list[str]] | None = None
    ) -> Path:
        _write_text(ref.transcript, "".join(f"{line}\n" for line in lines))
        self.write_subagent_transcripts(ref, subagents or {})
        return ref.transcript

    def write_subagent_transcripts(self, ref: SessionRef, subagents: Mapping[str, list[str]]) -> None:
        for agent, agent_lines in subagents.items():
            ref.subagents.mkdir(parents=True, exist_ok=True)
            _write_text(ref.subagent_transcript(agent), "".join(f"{line}\n" for line in agent_lines))

    def append_transcript(
        self, ref: SessionRef, lines: list[str], agent: str | None = None, sync: bool = True
    ) -> Path:
        """Add lines at the end of the transcript, or of ``agent``'s file (made when missing),
        synced to disk when ``sync``."""
        path = ref.transcript if agent is None else ref.subagent_transcript(agent)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(f"{line}\n" for line in lines).encode("utf-8")
        if sync:
            append_durably(path, data)
        else:
            with path.open("ab") as file:
                file.write(data)
        return path

    def link_claude_project(self, ref: SessionRef, cwd: str, subagents: bool) -> Path:
        """Link the transcript into Claude Code's projects folder (and the subagents' folder
        when ``subagents``); returns the transcript's link. A file there that is not a link is
        left alone (it is not aerix's)."""
        folder = paths.claude_projects_dir() / claude_project_dir_name(cwd)
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / f"{ref.id}.jsonl"
        _link(link, ref.transcript)
        if subagents:
            _link(folder / ref.id, ref.subagents.parent)
        return link

    def _claude_links(self, ref: SessionRef) -> list[Path]:
        """The links into Claude Code's projects folder that point at this session's files."""
        targets = {ref.transcript, ref.subagents.parent}
        found = []
        for folder in paths.claude_projects_dir().glob("*"):
            for link in (folder / f"{ref.id}.jsonl", folder / ref.id):
                if link.is_symlink() and Path(os.readlink(link)) in targets:
                    found.append(link)
        return found

    def transcript_tail(self, ref: SessionRef) -> tuple[int, str | None]:
        """The transcript's line count and last line; (0, None) when there is none."""
        try:
            with ref.transcript.open("rb") as file:
                count, last = 0, None
                for line in file:
                    count, last = count + 1, line
        except FileNotFoundError:
            return 0, None
        if last is None or not last.endswith(b"\n"):
            return 0, None  # a torn last line: rewrite the file
        return count, last.decode("utf-8", errors="replace").rstrip("\n")

    def remove(self, ref: SessionRef) -> list[Path]:
        """Delete the log and everything beside it that belongs to the session."""
        self.recorder(ref.project).release(ref.id)
        removed = []
        for link in self._claude_links(ref):
            link.unlink()
            removed.append(link)
        for path in (
            ref.log,
            ref.transcript,
            ref.folder / f"{ref.id}{TORN_SUFFIX}",
            ref.folder / f"{ref.id}{LOCK_SUFFIX}",
        ):
            if path.exists():
                path.unlink()
                removed.append(path)
        for folder in (spool_dir(ref.log), ref.subagents.parent):
            if folder.exists():
                shutil.rmtree(folder)
                removed.append(folder)
        return removed

    def acquire(self, ref: SessionRef) -> int:
        """Become the session's only writer (``SessionBusy`` otherwise); returns its last seq."""
        return self.recorder(ref.project).acquire(ref.id)

    def sync(self, ref: SessionRef) -> None:
        self.recorder(ref.project).sync(ref.id)

    def release(self, ref: SessionRef) -> None:
        self.recorder(ref.project).release(ref.id)

    def spool(self, ref: SessionRef, name: str, text: str) -> Path:
        return write_spool(ref.log, name, text)

    def replace_if_changed(self, ref: SessionRef, records: Sequence[EventBase]) -> ReplaceOutcome:
        """Write a whole log unless it already holds exactly these events: new, updated or unchanged."""
        recorder = self.recorder(ref.project)
        stored = [self.mapper.to_stored_event(ref.id, record) for record in records]
        wanted = recorder.encode(stored)
        try:
            existing: bytes | None = ref.log.read_bytes()
        except FileNotFoundError:
            existing = None
        if existing == wanted:
            return "unchanged"
        try:
            recorder.replace_log(ref.id, stored)
        finally:
            recorder.release(ref.id)
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


def _link(link: Path, target: Path) -> None:
    """``link`` made a symbolic link to ``target`` (replacing an older link at once)."""
    if link.is_symlink():
        if Path(os.readlink(link)) == target:
            return
    elif link.exists():
        return
    fresh = link.with_name(f".{link.name}.{os.getpid()}.link")
    with contextlib.suppress(FileNotFoundError):
        fresh.unlink()
    fresh.symlink_to(target)
    os.replace(fresh, link)


def _write_json(path: Path, data: Any) -> None:
    _write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


def _write_text(path: Path, text: str) -> None:
    replace_durably(path, text.encode("utf-8"))

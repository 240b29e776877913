"""The projection files kept beside the session logs: the index and the Claude Code transcripts.

Under ``$XDG_DATA_HOME/aerix/sessions/<project key>/``: ``index.json`` (the index of the
project's sessions), ``<id>.claude.jsonl`` (the transcript) and ``<id>/subagents/`` (its
subagents, ``agent-<agent id>.jsonl`` each, Claude Code's layout). Each is a projection of the
log: rebuilt from it whole by ``aerix sessions rebuild``.

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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from aerix.adapters import paths
from aerix.adapters.sessions.durable import append_durably, make_folder, replace_durably
from aerix.app.ports.sessions import SessionRef
from aerix.domain.claude_tools import claude_project_dir_name

INDEX_NAME = "index.json"


class SessionViewFiles:
    """The index, transcripts and Claude Code links of the sessions under ``root``."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or paths.sessions_root()

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

    # ---- the transcripts and their links --------------------------------------------------------

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

    def remove(self, ref: SessionRef) -> list[Path]:
        """Delete the session's transcripts and the links to them."""
        removed = []
        for link in self._claude_links(ref):
            link.unlink()
            removed.append(link)
        if ref.transcript.exists():
            ref.transcript.unlink()
            removed.append(ref.transcript)
        if ref.subagents.parent.exists():
            shutil.rmtree(ref.subagents.parent)
            removed.append(ref.subagents.parent)
        return removed

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

"""The session store port, and the values that cross it.

``SessionStorage`` is the store by job: where sessions are (``SessionCatalog``), the event log
(``SessionLog``), the projection files (``ProjectionFiles``) and the spool (``SessionSpool``);
``aerix.adapters.sessions.session_catalog``, ``aerix.adapters.sessions.session_store``,
``aerix.adapters.sessions.projection_files`` and ``aerix.adapters.sessions.spool`` implement one
each, over the same folders. ``aerix.adapters.claude.claude_import.ClaudeImports`` implements
``ClaudeSessionSource``. No third-party type crosses: the log is given the session's records
(``aerix.domain.events``), and how it stores them is its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from aerix.domain import events as ev

Clock = Callable[[], datetime]
E = TypeVar("E", bound=ev.EventBase)
#: What storing a whole log did: wrote a new one, replaced a different one, or found it the same.
ReplaceOutcome = Literal["new", "updated", "unchanged"]


@dataclass(frozen=True)
class SessionRef:
    """Where a session lives: its id, its project key and that project's folder."""

    id: str
    project: str
    folder: Path

    @property
    def log(self) -> Path:
        return self.folder / f"{self.id}.jsonl"

    @property
    def transcript(self) -> Path:
        return self.folder / f"{self.id}.claude.jsonl"

    @property
    def subagents(self) -> Path:
        """Where the transcript's subagents go, one ``agent-<id>.jsonl`` each (Claude Code's
        ``<session>/subagents/``)."""
        return self.folder / self.id / "subagents"

    def subagent_transcript(self, agent: str) -> Path:
        """``agent``'s own transcript file under :attr:`subagents`."""
        return self.subagents / f"agent-{agent}.jsonl"


class EventRecorder(Protocol):
    """Appends events to the session log (``aerix.app.sessions.writer.SessionWriter`` is one):
    ``seq``, ``time`` and ``v`` are filled in, the line is written when it returns, and synced to
    disk when the event is a commit point (``events.COMMIT_EVENTS``)."""

    def record(self, event_cls: type[E], **fields: Any) -> E: ...

    def sync(self) -> None:
        """Make everything recorded so far durable now (before a hook or the screen reports
        something as done)."""
        ...


class SessionCatalog(Protocol):
    """Where sessions are: finding them, their logs' sizes, whether a writer holds one, and
    deleting one."""

    def ref(self, project: str, session_id: str) -> SessionRef: ...
    def refs(self, project: str | None = None) -> list[SessionRef]: ...
    def find(self, id_or_prefix: str) -> SessionRef: ...
    def projects(self) -> list[str]: ...
    def exists(self, ref: SessionRef) -> bool: ...
    def log_size(self, ref: SessionRef) -> int:
        """The log's size in bytes (0 when there is none): the index keeps the size it folded, so
        a log changed since (a line lost or edited) is read again."""
        ...

    def is_locked(self, ref: SessionRef) -> bool:
        """Whether a live writer holds the session (another process, or this one)."""
        ...

    def remove(self, ref: SessionRef) -> list[Path]:
        """Delete the log and the files of its writing (the lock, a torn tail); the caller has
        checked that no writer holds it."""
        ...


class SessionLog(Protocol):
    """A session's records: reading them, and appending them as the session's one writer."""

    def read(self, ref: SessionRef) -> list[ev.EventBase]: ...
    def append(
        self, ref: SessionRef, records: Sequence[ev.EventBase], sync: bool = False
    ) -> list[ev.EventBase]:
        """Write the session's new records, one line each, synced to disk before returning when
        ``sync``; ``SessionBusy`` when another writer got there first. Returns the records as
        their lines say (text that cannot be UTF-8 has U+FFFD for each lone surrogate), which
        is what the writer publishes: a live view sees what a rebuild will read."""
        ...

    def replace_if_changed(self, ref: SessionRef, records: Sequence[ev.EventBase]) -> ReplaceOutcome:
        """Write a whole log at once, unless it already holds exactly these records."""
        ...

    def acquire(self, ref: SessionRef) -> int:
        """Become the session's only writer (``SessionBusy`` otherwise); returns its last seq."""
        ...

    def sync(self, ref: SessionRef) -> None:
        """Sync what this process wrote to the session's log to disk."""
        ...

    def release(self, ref: SessionRef) -> None: ...
    def notices(self) -> list[str]:
        """What reading and writing repaired since the last call (a torn tail set aside, text
        written with U+FFFD), one line each."""
        ...

    def close(self) -> None:
        """Stop writing every session this process writes (synced, locks dropped)."""
        ...


class ProjectionFiles(Protocol):
    """The projection files kept beside the logs: the index, the Claude Code transcripts and
    their links into Claude Code's projects folder."""

    def index_locked(self, project: str) -> AbstractContextManager[dict[str, dict[str, Any]]]: ...
    def load_index(self, project: str) -> dict[str, dict[str, Any]]: ...
    def write_transcript(
        self, ref: SessionRef, lines: list[str], subagents: Mapping[str, list[str]] | None = None
    ) -> Path:
        """The main chain in ``<id>.claude.jsonl``, each subagent's lines in its own file."""
        ...

    def write_subagent_transcripts(self, ref: SessionRef, subagents: Mapping[str, list[str]]) -> None:
        """Each subagent's lines in its own file, written whole."""
        ...

    def append_transcript(
        self, ref: SessionRef, lines: list[str], agent: str | None = None, sync: bool = True
    ) -> Path:
        """Lines added at the end of the transcript, or of ``agent``'s own file; synced to
        disk before returning when ``sync``."""
        ...

    def link_claude_project(self, ref: SessionRef, cwd: str, subagents: bool) -> Path:
        """The transcript linked where Claude Code keeps the transcripts of ``cwd`` (its
        subagents' folder too when ``subagents``); returns the link."""
        ...

    def transcript_tail(self, ref: SessionRef) -> tuple[int, str | None]: ...
    def remove(self, ref: SessionRef) -> list[Path]:
        """Delete the session's transcripts and the links to them (its index entry stays: the
        caller changes the index under its lock)."""
        ...


class SessionSpool(Protocol):
    """The spool: the untruncated text of each cut tool result, beside the log."""

    def write(self, ref: SessionRef, name: str, text: str) -> Path: ...
    def remove(self, ref: SessionRef) -> list[Path]: ...


@dataclass(frozen=True)
class SessionStorage:
    """What the session use cases need from the store, by job: where sessions are, the event
    log, the projection files, the spool."""

    catalog: SessionCatalog
    log: SessionLog
    views: ProjectionFiles
    spool: SessionSpool


@dataclass(frozen=True)
class PlannedEvent:
    """An event to record, with its own time (imports keep the original times)."""

    cls: type[ev.EventBase]
    time: datetime
    fields: dict[str, Any]


@dataclass
class ImportPlan:
    """A foreign session, converted: its start fields and the events after it."""

    start: dict[str, Any]
    start_time: datetime
    events: list[PlannedEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FoundTranscripts:
    """What a look for Claude Code transcripts found: the files that hold sessions (converted,
    one plan per session) and the files that hold none."""

    files: tuple[Path, ...]
    plans: tuple[ImportPlan, ...]
    not_transcripts: tuple[Path, ...]


class ClaudeSessionSource(Protocol):
    """Claude Code's transcripts, read and converted for the store."""

    def default_sources(self) -> list[Path]:
        """Claude Code's own projects folder."""
        ...

    def find(self, sources: Sequence[Path]) -> FoundTranscripts:
        """Read every ``.jsonl`` under ``sources`` and convert each session in them."""
        ...


class SessionSummary(Protocol):
    """One session as ``aerix sessions list`` shows it (``projections.index.IndexEntry``)."""

    @property
    def id(self) -> str: ...
    @property
    def updated(self) -> datetime | None: ...
    @property
    def title(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def requests(self) -> int: ...
    @property
    def state(self) -> str: ...
    @property
    def tags(self) -> list[str]: ...
    @property
    def listed_title(self) -> str:
        """The title with what a list must say beside it (a fork names its original)."""
        ...

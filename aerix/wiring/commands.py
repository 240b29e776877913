"""The session and profile commands on the real adapters: ``SessionCommands`` (``aerix
sessions …``, ``aerix import claude``) and ``ProfileCommands`` (``aerix tune``, ``aerix profile
…``), each opened with its store by a context manager that turns an OS error into one line."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from aerix import __version__
from aerix.adapters.autostart import AutostartPool
from aerix.adapters.claude_import import ClaudeImports
from aerix.adapters.clock import utc_now
from aerix.adapters.editor import ProcessEditor
from aerix.adapters.gc_pause import gc_paused
from aerix.adapters.instructions import project_root
from aerix.adapters.profile_repo import GitProfiles
from aerix.adapters.project import ProjectFiles
from aerix.adapters.project_key import project_key
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.session_store import SessionFiles
from aerix.adapters.settings_files import load_settings
from aerix.app.ports import (
    EditOutcome,
    ProfileCommit,
    ProfileObserver,
    ProfileView,
    SessionRef,
    SyncReport,
    TuneReport,
)
from aerix.app.profiles.manage import (
    EditDeps,
    EditOptions,
    edit_profile,
    profile_log,
    remove_session_branch,
    show_profile,
)
from aerix.app.profiles.runs import ProfileDeps, upstream_texts
from aerix.app.profiles.sync import SyncOptions, run_sync
from aerix.app.profiles.tune import TuneOptions, run_tune
from aerix.app.sessions import importing, queries
from aerix.domain import events as ev
from aerix.errors import FileUnusable
from aerix.projections.index import IndexEntry


@dataclass
class SessionCommands:
    """``aerix sessions …`` and ``aerix import claude``: the session use cases on the real store."""

    store: SessionFiles

    def listing(self, cwd: Path | None) -> tuple[list[IndexEntry], list[str]]:
        """The sessions of ``cwd``'s project (every project's when None), newest first, and a
        line for each log that could not be read or has a gap or no events."""
        problems: list[str] = []
        project = None if cwd is None else project_key(cwd)
        return queries.list_sessions(self.store, project, problems), problems

    def show(self, session_id: str) -> tuple[SessionRef, list[ev.EventBase], list[str]]:
        return queries.show_session(self.store, session_id)

    def remove(self, session_id: str) -> tuple[SessionRef, list[Path], list[str]]:
        """Delete a session and its ``session/<id>`` branch in the profile it recorded; the
        lines say what could not be done about the branch (the session goes anyway)."""
        ref = self.store.log.find(session_id)
        profiles = GitProfiles()
        notes: list[str] = []

        def remove_branch(_: SessionRef, start: ev.SessionStart | None) -> None:
            note = remove_session_branch(profiles, start)
            if note is not None:
                notes.append(note)

        return ref, queries.remove_session(self.store, ref.id, also=remove_branch), notes

    def rebuild(self, session_id: str | None, cwd: Path) -> list[queries.RebuildReport]:
        """Rebuild the sessions; the transcripts are linked into Claude Code's projects folder
        when ``transcript.claude_projects`` is on for ``cwd``'s project."""
        claude_projects = load_settings(project_root(cwd)).settings.transcript.claude_projects
        with gc_paused():  # a rebuild folds every event of every log: no collector walks meanwhile
            return queries.rebuild(self.store, session_id, claude_projects)

    def import_claude(
        self, paths: Sequence[Path], on_left_out: Callable[[Path], None]
    ) -> importing.ImportReport:
        source = ClaudeImports(project_key, __version__)
        return importing.import_claude(self.store, source, paths, on_left_out)

    def notices(self) -> list[str]:
        """Crash repairs and the like the store made meanwhile, one line each."""
        return self.store.log.notices()


@contextlib.contextmanager
def session_commands() -> Iterator[SessionCommands]:
    """The session use cases on the real store; an OS error on the store (a file where its
    folder should be, no permission, a full disk) is ``FileUnusable``, one line naming the path."""
    store = SessionFiles()
    try:
        yield SessionCommands(store)
    except BrokenPipeError:
        raise  # a closed pipe is the CLI's to end quietly, not a store that cannot be used
    except OSError as error:
        raise FileUnusable(error) from error
    finally:
        store.log.close()


@dataclass
class ProfileCommands:
    """``aerix tune`` and ``aerix profile …``: the profile use cases on the real git profiles,
    session store, pool and editor."""

    store: SessionFiles

    def _deps(self) -> ProfileDeps:
        return ProfileDeps(
            projects=ProjectFiles(),
            pools=AutostartPool(),
            sessions=self.store,
            profiles=GitProfiles(),
            prompts=EmbeddedPrompts(),
            embedded=EmbeddedPrompts().all(),
            release=__version__,
            clock=utc_now,
        )

    def tune(self, options: TuneOptions, observer: ProfileObserver) -> TuneReport:
        return anyio.run(run_tune, options, self._deps(), observer)

    def sync(self, options: SyncOptions, observer: ProfileObserver) -> SyncReport:
        return anyio.run(run_sync, options, self._deps(), observer)

    def edit(self, options: EditOptions) -> EditOutcome:
        deps = EditDeps(
            ProjectFiles(), GitProfiles(), ProcessEditor(), EmbeddedPrompts().all(), __version__, utc_now
        )
        return edit_profile(options, deps)

    def show(self, cwd: Path, profile: str | None) -> ProfileView:
        project = ProjectFiles().load(cwd)
        upstream = upstream_texts(EmbeddedPrompts().all(), project)
        return show_profile(GitProfiles(), profile or project.settings.profile, upstream)

    def log(
        self, cwd: Path, profile: str | None, branch: str | None, limit: int
    ) -> list[tuple[str, list[ProfileCommit]]]:
        project = ProjectFiles().load(cwd)
        return profile_log(GitProfiles(), profile or project.settings.profile, branch, limit)

    def notices(self) -> list[str]:
        return self.store.log.notices()


@contextlib.contextmanager
def profile_commands() -> Iterator[ProfileCommands]:
    """The profile use cases; an OS error on the session store is ``FileUnusable``."""
    store = SessionFiles()
    try:
        yield ProfileCommands(store)
    except OSError as error:
        raise FileUnusable(error) from error
    finally:
        store.log.close()

"""``aerix sessions …`` and ``aerix import claude`` on the real store (the profile commands are
``aerix.wiring.profile_commands``'s, so a session command loads none of tune's or the pool's)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from aerix import __version__
from aerix.adapters.claude.claude_import import ClaudeImports
from aerix.adapters.gc_pause import gc_paused
from aerix.adapters.git.profile_repo import GitProfiles
from aerix.adapters.project.instructions import project_root
from aerix.adapters.project.project_key import project_key
from aerix.adapters.project.settings_files import load_settings
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.ports.sessions import SessionRef
from aerix.app.profiles.manage import remove_session_branch
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
        ref = self.store.catalog.find(session_id)
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

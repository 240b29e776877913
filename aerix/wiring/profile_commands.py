"""``aerix tune`` and ``aerix profile …`` on the real git profiles, session store, pool and
editor."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio

from aerix import __version__
from aerix.adapters.clock import utc_now
from aerix.adapters.console.external_editor import ProcessEditor
from aerix.adapters.git.profile_repo import GitProfiles
from aerix.adapters.pool.autostart import AutostartPool
from aerix.adapters.project.project import ProjectFiles
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.ports.profiles import (
    EditOutcome,
    ProfileCommit,
    ProfileObserver,
    ProfileView,
    SyncReport,
    TuneReport,
)
from aerix.app.profiles.manage import (
    EditDeps,
    EditOptions,
    edit_profile,
    profile_log,
    show_profile,
)
from aerix.app.profiles.runs import ProfileDeps, upstream_texts
from aerix.app.profiles.sync import SyncOptions, run_sync
from aerix.app.profiles.tune import TuneOptions, run_tune
from aerix.errors import FileUnusable


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

"""The profile repository port, the editor's, and the values that cross them to the command
line: what tune, sync and edit report, and the observer that hears them as they run.

``aerix.adapters.git.profile_repo`` implements ``ProfileStore`` and ``ProfileRepository`` (its
``ProfileRefs`` and ``ProfileObjects``) over bare git repositories,
``aerix.adapters.console.external_editor`` ``TextEditor``, and ``aerix.adapters.console.profile_output``
prints the reports. Writes are two steps so the
compare-and-swap policy stays in the application (``aerix.app.profiles.writes``): ``make_commit``
stores a commit object without moving anything, ``move`` swaps a branch from the commit the writer
read to the new one, or reports that it moved.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from aerix.domain.profile import ProfileSnapshot, UpstreamEntry


@dataclass(frozen=True)
class ProfileCommit:
    """One commit of a branch's history, for ``aerix profile log``."""

    id: str
    time: datetime
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


class ProfileRefs(Protocol):
    """A profile's branches: where each points, its history, and moving one by compare-and-swap.
    Every method may raise :class:`aerix.errors.ProfileUnusable` (the repository or an object in
    it is broken) or :class:`aerix.errors.ProfileGitFailed` (git failed or ran past its bound)."""

    def head(self, branch: str) -> str | None:
        """The commit ``branch`` points at, or None when there is no such branch."""
        ...

    def branches(self) -> dict[str, str]:
        """Every branch and the commit it points at."""
        ...

    def heads(self, branches: Sequence[str]) -> dict[str, str]:
        """Those of ``branches`` that exist, each with the commit it points at, read at once (a
        request's attach reads main's, its model base's and its session's)."""
        ...

    def move(self, branch: str, new: str | None, expected: str | None) -> bool:
        """Compare-and-swap ``branch`` from ``expected`` (None: it must not exist) to ``new``
        (None: delete it). False when the branch was not at ``expected`` (or another writer held
        it at that moment); nothing changed then."""
        ...

    def log(self, branch: str, limit: int) -> list[ProfileCommit]: ...


class ProfileObjects(Protocol):
    """A profile's commits and blobs: reading them, and storing a new commit (which moves no
    branch). Raises as :class:`ProfileRefs` does."""

    def has_commit(self, commit: str) -> bool: ...

    def read(self, commit: str) -> ProfileSnapshot: ...

    def read_blob(self, blob: str) -> bytes | None:
        """A blob by its id (an ``upstream.json`` hash), or None when the repository lacks it."""
        ...

    def make_commit(self, parent: str | None, files: Mapping[str, bytes], message: str) -> str:
        """Store a commit holding exactly ``files`` (path → bytes) on ``parent``; moves nothing."""
        ...


class ProfileRepository(Protocol):
    """One profile: its name, its bare repository's folder, its branches and its objects."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> Path: ...

    @property
    def refs(self) -> ProfileRefs: ...

    @property
    def objects(self) -> ProfileObjects: ...


class ProfileStore(Protocol):
    """Where profiles live (``$XDG_DATA_HOME/aerix/profiles/<name>.git``)."""

    def location(self, name: str) -> Path: ...

    def find(self, name: str) -> ProfileRepository | None:
        """The profile when it exists; never creates one."""
        ...

    def open(self, name: str) -> ProfileRepository:
        """The profile, created (empty, no branches) when it does not exist yet."""
        ...


@dataclass(frozen=True)
class Edited:
    """What the editor gave back, and the file that holds it (kept when the commit is refused)."""

    text: str
    file: Path


class TextEditor(Protocol):
    """Opens a person's editor on a text.

    ``$VISUAL``/``$EDITOR``, through ``aerix.adapters.console.external_editor``.
    """

    def edit(self, text: str, name: str) -> Edited: ...

    def discard(self, edited: Edited) -> None: ...


# ---- what the profile commands report -----------------------------------------------------------


@dataclass(frozen=True)
class Revision:
    """A new text for one path, why, the text it replaces and the upstream entry it records."""

    path: str
    text: str
    reason: str
    previous: str
    upstream: UpstreamEntry

    def diff(self) -> str:
        lines = difflib.unified_diff(
            self.previous.splitlines(keepends=True),
            self.text.splitlines(keepends=True),
            fromfile=f"a/{self.path}",
            tofile=f"b/{self.path}",
        )
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        return text


@dataclass(frozen=True)
class Refused:
    """A path that was asked about and not revised, with the reason (a guard, a failed answer,
    a hand edit on the branch)."""

    path: str
    reason: str


class ProfileObserver:
    """Hears what tune and sync do; the command line subclasses it."""

    def line(self, text: str) -> None:
        """A progress line (stderr)."""

    def artifact(self, index: int, total: int, path: str) -> None:
        """Reflection on one path starts: ``index`` of ``total``."""

    def token(self, text: str) -> None:
        """A piece of the reflection's answer as it streams."""

    def answered(self) -> None:
        """The reflection's answer has ended (whatever it was)."""

    def diff(self, text: str) -> None:
        """The diff of a revision that ``--dry-run`` does not commit (stdout)."""


@dataclass
class SyncReport:
    """What ``aerix profile sync`` (or a tune's sync of its model base) did: the stale paths it
    asked about, the revisions committed (or shown, under a dry run) and those refused."""

    profile: str
    branch: str
    stale: list[str] = field(default_factory=list)
    revisions: list[Revision] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False


@dataclass
class TuneReport:
    """What ``aerix tune`` did: the corpus it read, the prompts it asked about and without
    evidence, the revisions committed (or shown) and those refused, and its sync first."""

    profile: str
    branch: str = ""
    model: str = ""
    sessions: int = 0
    without_evidence: list[str] = field(default_factory=list)
    revisions: list[Revision] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    commit: str | None = None
    sync: SyncReport | None = None
    dry_run: bool = False
    reflector: str = ""


@dataclass(frozen=True)
class BranchView:
    """One branch as ``aerix profile show`` lists it."""

    name: str
    head: str
    subject: str
    time: datetime | None
    tuned: tuple[str, ...]
    stale: tuple[str, ...]
    upstream_problem: str | None = None


@dataclass(frozen=True)
class ProfileView:
    """A profile as ``aerix profile show`` lists it."""

    name: str
    path: Path
    branches: list[BranchView]
    #: session/<id> branches by the commit they point at (there may be many; they are counted).
    sessions: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class EditOutcome:
    """What ``aerix profile edit`` did, and the guards' warnings on the text (it commits anyway)."""

    profile: str
    branch: str
    path: str
    commit: str | None  # None: the text was left as it was
    warnings: tuple[str, ...] = ()

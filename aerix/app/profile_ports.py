"""The profile repository as the application sees it (``aerix.adapters.profile_repo`` is the
git one). Writes are two steps so the compare-and-swap policy stays here in the application:
``make_commit`` stores a commit object without moving anything, ``move`` swaps a branch from the
commit the writer read to the new one, or reports that it had moved."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from aerix.domain.profile import ProfileSnapshot


@dataclass(frozen=True)
class ProfileCommit:
    """One commit of a branch's history, for ``aerix profile log``."""

    id: str
    time: datetime
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


class ProfileRepository(Protocol):
    """One profile. Every method may raise :class:`aerix.errors.ProfileUnusable` (the repository
    or an object in it is broken) or :class:`aerix.errors.ProfileGitFailed` (git failed or ran
    past its bound)."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> Path: ...

    def head(self, branch: str) -> str | None:
        """The commit ``branch`` points at, or None when there is no such branch."""
        ...

    def branches(self) -> dict[str, str]:
        """Every branch and the commit it points at."""
        ...

    def has_commit(self, commit: str) -> bool: ...

    def read(self, commit: str) -> ProfileSnapshot: ...

    def read_blob(self, blob: str) -> bytes | None:
        """A blob by its id (an ``upstream.json`` hash), or None when the repository lacks it."""
        ...

    def make_commit(self, parent: str | None, files: Mapping[str, bytes], message: str) -> str:
        """Store a commit holding exactly ``files`` (path → bytes) on ``parent``; moves nothing."""
        ...

    def move(self, branch: str, new: str | None, expected: str | None) -> bool:
        """Compare-and-swap ``branch`` from ``expected`` (None: it must not exist) to ``new``
        (None: delete it). False when the branch was not at ``expected`` (or another writer held
        it at that moment); nothing changed then."""
        ...

    def log(self, branch: str, limit: int) -> list[ProfileCommit]: ...


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
    """Opens a person's editor on a text (``$VISUAL``/``$EDITOR``: ``aerix.adapters.editor``)."""

    def edit(self, text: str, name: str) -> Edited: ...

    def discard(self, edited: Edited) -> None: ...

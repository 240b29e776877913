"""The one way a profile branch changes: a commit by compare-and-swap of its ref.

A writer reads the branch head, computes its commit from what it read, and swaps the ref from
that head to the new commit. When the branch moved meanwhile (another aerix, a ``git push``), it
computes again from the new head, at most ``CAS_RETRIES`` more times, then refuses by name
(:class:`~aerix.errors.ProfileRace`). Nothing is ever overwritten blindly: the change function
sees the head it will replace, every time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aerix.domain.bounds import CAS_RETRIES
from aerix.domain.profile import ProfileSnapshot
from aerix.errors import ProfileRace

if TYPE_CHECKING:
    # Named in annotations only: a request does not load the profile ports' module (with what
    # the profile commands report).
    from aerix.app.ports.profiles import ProfileRepository

#: Every try of a write: the first, then CAS_RETRIES more.
CAS_TRIES = CAS_RETRIES + 1


@dataclass(frozen=True)
class Write:
    """The commit a change makes: every file it holds, and its message."""

    files: Mapping[str, bytes]
    message: str


#: Given the branch head as read (an empty snapshot when the branch is new), the commit to make on
#: it, or None when there is nothing to write. Called again on each retry. It may raise to refuse.
Change = Callable[[ProfileSnapshot], Write | None]


def commit_change(repo: ProfileRepository, branch: str, change: Change) -> str | None:
    """Make ``change`` one commit on ``branch``; the new commit, or None when it wrote nothing."""
    written, _ = _commit_change(repo, branch, change)
    return written


def head_after_change(
    repo: ProfileRepository, branch: str, change: Change, listed: Mapping[str, str] | None = None
) -> str | None:
    """``commit_change``, then where ``branch`` is: the new commit, or the head the change was
    given when it wrote nothing (None: still no branch). The head is the one read, not read again.
    ``listed``: heads read at once just before (``repo.heads``), for the first try."""
    written, head = _commit_change(repo, branch, change, listed)
    return written or head


def _commit_change(
    repo: ProfileRepository, branch: str, change: Change, listed: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """(the commit written or None, the head the last try read)."""
    for attempt in range(CAS_TRIES):
        head = _head(repo, branch, listed, attempt)
        base = repo.objects.read(head) if head is not None else ProfileSnapshot(None)
        write = change(base)
        if write is None:
            return None, head
        commit = repo.objects.make_commit(head, write.files, write.message)
        if repo.refs.move(branch, commit, head):
            return commit, head
    raise ProfileRace(repo.name, branch, CAS_TRIES)


def create_branch(
    repo: ProfileRepository, branch: str, at: str, listed: Mapping[str, str] | None = None
) -> str:
    """``branch`` at ``at`` unless it exists already; returns where it points either way."""
    for attempt in range(CAS_TRIES):
        head = _head(repo, branch, listed, attempt)
        if head is not None:
            return head
        if repo.refs.move(branch, at, None):
            return at
    raise ProfileRace(repo.name, branch, CAS_TRIES)


def point_branch(
    repo: ProfileRepository, branch: str, at: str, listed: Mapping[str, str] | None = None
) -> None:
    """Move ``branch`` (made when missing) to ``at``, from wherever it is."""
    for attempt in range(CAS_TRIES):
        head = _head(repo, branch, listed, attempt)
        if head == at or repo.refs.move(branch, at, head):
            return
    raise ProfileRace(repo.name, branch, CAS_TRIES)


def delete_branch(repo: ProfileRepository, branch: str) -> bool:
    """Delete ``branch``; False when there was none."""
    for _ in range(CAS_TRIES):
        head = repo.refs.head(branch)
        if head is None:
            return False
        if repo.refs.move(branch, None, head):
            return True
    raise ProfileRace(repo.name, branch, CAS_TRIES)


def _head(repo: ProfileRepository, branch: str, listed: Mapping[str, str] | None, attempt: int) -> str | None:
    """``branch``'s head for a write's try: the first try takes it from ``listed`` when given
    (heads read at once, one git call for several branches; a branch missing from it has none),
    and a retry, after the swap found the branch moved, reads it again."""
    if attempt == 0 and listed is not None:
        return listed.get(branch)
    return repo.refs.head(branch)

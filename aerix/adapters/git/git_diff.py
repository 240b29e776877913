"""What a request changed: a snapshot of the working tree when it starts, the diff at the end.

The snapshot is ``git stash create`` — a commit object holding the tracked files' current state,
made without touching the tree, the index or the stash list — or ``HEAD`` when the tree is clean
(an empty tree in a repository without commits). At the end, ``git diff <snapshot>`` shows what
the request changed in tracked files, so edits you had not committed are not shown as the
agent's, and every touched file git does not know is listed as ``untracked: <path>``. Outside a
repository there is no diff: the touched files are listed instead.

Every git call is bounded by :data:`~aerix.domain.bounds.GIT_TIMEOUT_SECS`; a git that fails or
hangs gives a note, never an error — the request's work is done by then.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from aerix.adapters.git.git_runner import GitFailed, run_git
from aerix.domain.diffs import FileStat, RequestDiff, Snapshot

#: git's well-known id of the empty tree: the base of a repository without commits.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def take_snapshot(cwd: Path) -> Snapshot:
    """The request's starting point; touches nothing."""
    try:
        root = Path(run_git(cwd, "rev-parse", "--show-toplevel").strip())
    except GitFailed:
        return Snapshot(cwd)
    try:
        head = _head(root)
        # Without a first commit there is nothing for stash create to build on.
        base = run_git(root, "stash", "create").strip() if head != EMPTY_TREE else ""
        base = base or head
        untracked = frozenset(_untracked(root))
    except GitFailed as exc:
        return Snapshot(cwd, root, None, notes=(f"no diff for this request: {exc}",), branch=_branch(root))
    return Snapshot(cwd, root, base, untracked, branch=_branch(root))


def _branch(root: Path) -> str:
    """The checked-out branch's short name; "" on a detached HEAD or when git fails."""
    try:
        return run_git(root, "symbolic-ref", "--short", "-q", "HEAD").strip()
    except GitFailed:
        return ""


def _head(root: Path) -> str:
    try:
        return run_git(root, "rev-parse", "--verify", "-q", "HEAD").strip() or EMPTY_TREE
    except GitFailed:
        return EMPTY_TREE  # a repository without commits


def _untracked(root: Path) -> list[str]:
    listing = run_git(root, "ls-files", "--others", "--exclude-standard", "-z")
    return [path for path in listing.split("\0") if path]


def request_diff(snapshot: Snapshot, touched: Iterable[Path | str] = ()) -> RequestDiff:
    """The working tree against the snapshot, plus the files the request touched that git does
    not know. ``touched`` are the paths the request's write/edit calls named."""
    touched_paths = _absolute(snapshot.cwd, touched)
    if snapshot.root is None:
        return RequestDiff(in_git=False, touched=tuple(_display(snapshot.cwd, p) for p in touched_paths))
    if snapshot.base is None:
        return RequestDiff(notes=snapshot.notes)
    root = snapshot.root
    try:
        text = run_git(root, "diff", "--no-color", "--no-ext-diff", snapshot.base)
        stats = _numstat(run_git(root, "diff", "--numstat", "-z", snapshot.base))
        untracked_now = set(_untracked(root))
        tracked = set(run_git(root, "ls-files", "-z").split("\0"))
    except GitFailed as exc:
        return RequestDiff(notes=(f"no diff for this request: {exc}",))
    new = untracked_now - snapshot.untracked
    for path in touched_paths:
        relative = _relative_to(path, root)
        if relative is not None and relative not in tracked and path.is_file():
            new.add(relative)
    return RequestDiff(text=text, stats=tuple(stats), untracked=tuple(sorted(new)))


def _numstat(output: str) -> list[FileStat]:
    stats: list[FileStat] = []
    fields = output.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if not entry:
            continue
        added, removed, path = entry.split("\t", 2)
        if not path:  # a rename: the old and new paths follow as their own fields
            path = fields[i + 1] if i + 1 < len(fields) else ""
            i += 2
        stats.append(FileStat(path, _count(added), _count(removed)))
    return stats


def _count(text: str) -> int | None:
    return None if text == "-" else int(text)


def _absolute(cwd: Path, paths: Iterable[Path | str]) -> list[Path]:
    seen: dict[Path, None] = {}
    for path in paths:
        candidate = Path(path).expanduser()
        seen[Path(os.path.normpath(cwd / candidate))] = None
    return list(seen)


def _relative_to(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _display(cwd: Path, path: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return str(path)


class GitDiffs:
    """:class:`aerix.app.ports.DiffSource` with git."""

    def snapshot(self, cwd: Path) -> Snapshot:
        return take_snapshot(cwd)

    def diff(self, snapshot: Snapshot, touched: Iterable[Path | str] = ()) -> RequestDiff:
        return request_diff(snapshot, touched)

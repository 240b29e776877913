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
from dataclasses import dataclass
from pathlib import Path

from aerix.adapters.git.git_runner import GitFailed, run_git_together
from aerix.domain.diffs import FileStat, RequestDiff, Snapshot

#: git's well-known id of the empty tree: the base of a repository without commits.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


#: One call for the snapshot's branch, head and untracked files (paths are the root's, from any
#: folder in it). Ahead/behind and submodules' own state are not read: nothing here uses them.
_STATUS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--untracked-files=all",
    "--no-ahead-behind",
    "--ignore-submodules=all",
)


@dataclass(frozen=True)
class _Status:
    """What ``git status --porcelain=v2 --branch`` says of the working tree."""

    head: str  # the checked-out commit, or EMPTY_TREE in a repository without commits
    branch: str  # "" on a detached HEAD
    untracked: frozenset[str]


def take_snapshot(cwd: Path) -> Snapshot:
    """The request's starting point; touches nothing. Its three git calls run at once: the top
    level (which also says whether ``cwd`` is in a repository), the status, and ``stash create``
    (which fails, unread, outside a repository or before the first commit)."""
    top, status_text, stash = run_git_together(
        cwd, ("rev-parse", "--show-toplevel"), _STATUS, ("stash", "create")
    )
    if isinstance(top, GitFailed):
        return Snapshot(cwd)
    root = Path(top.strip())
    if isinstance(status_text, GitFailed):
        return Snapshot(cwd, root, None, notes=(f"no diff for this request: {status_text}",))
    status = _parse_status(status_text)
    # Without a first commit there is nothing for stash create to build on: the base is the empty tree.
    base = status.head
    if status.head != EMPTY_TREE:
        if isinstance(stash, GitFailed):
            return Snapshot(
                cwd, root, None, notes=(f"no diff for this request: {stash}",), branch=status.branch
            )
        base = stash.strip() or status.head
    return Snapshot(cwd, root, base, status.untracked, branch=status.branch)


def _parse_status(output: str) -> _Status:
    head, branch = EMPTY_TREE, ""
    untracked: set[str] = set()
    fields = iter(output.split("\0"))
    for entry in fields:
        if entry.startswith("# branch.oid "):
            oid = entry.removeprefix("# branch.oid ")
            head = EMPTY_TREE if oid == "(initial)" else oid
        elif entry.startswith("# branch.head "):
            name = entry.removeprefix("# branch.head ")
            branch = "" if name == "(detached)" else name
        elif entry.startswith("? "):
            untracked.add(entry[2:])
        elif entry.startswith("2 "):
            next(fields, None)  # a rename's original path is a field of its own
    return _Status(head, branch, frozenset(untracked))


def request_diff(snapshot: Snapshot, touched: Iterable[Path | str] = ()) -> RequestDiff:
    """The working tree against the snapshot, plus the files the request touched that git does
    not know. ``touched`` are the paths the request's write/edit calls named. The four git reads
    run at once."""
    touched_paths = _absolute(snapshot.cwd, touched)
    if snapshot.root is None:
        return RequestDiff(in_git=False, touched=tuple(_display(snapshot.cwd, p) for p in touched_paths))
    if snapshot.base is None:
        return RequestDiff(notes=snapshot.notes)
    root = snapshot.root
    answers = run_git_together(
        root,
        ("diff", "--no-color", "--no-ext-diff", snapshot.base),
        ("diff", "--numstat", "-z", snapshot.base),
        _STATUS,
        ("ls-files", "-z"),
    )
    failed = next((answer for answer in answers if isinstance(answer, GitFailed)), None)
    if failed is not None:
        return RequestDiff(notes=(f"no diff for this request: {failed}",))
    text, numstat, status_text, listing = (str(answer) for answer in answers)
    tracked = set(listing.split("\0"))
    new = set(_parse_status(status_text).untracked - snapshot.untracked)
    for path in touched_paths:
        relative = _relative_to(path, root)
        if relative is not None and relative not in tracked and path.is_file():
            new.add(relative)
    return RequestDiff(text=text, stats=tuple(_numstat(numstat)), untracked=tuple(sorted(new)))


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

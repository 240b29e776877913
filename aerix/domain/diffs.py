"""What a request changed, as plain values: the snapshot it started from and its diff.

``aerix.adapters.git.git_diff`` makes them with git; the application and the output read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

UNTRACKED_PREFIX = "untracked: "
TOUCHED_PREFIX = "touched: "


@dataclass(frozen=True)
class Snapshot:
    """The state a request's diff is taken against."""

    cwd: Path
    root: Path | None = None  # the repository's top level; None outside git
    base: str | None = None  # the commit (or tree) the diff compares with
    untracked: frozenset[str] = frozenset()  # untracked files (repo-relative) at the start
    notes: tuple[str, ...] = ()
    branch: str = ""  # the branch checked out ("" outside git or on a detached HEAD)


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int | None  # None for binary files, as git reports them
    removed: int | None


@dataclass(frozen=True)
class RequestDiff:
    """The diff text, its numstat figures and the untracked (or, outside git, touched) files."""

    text: str = ""
    stats: tuple[FileStat, ...] = ()
    untracked: tuple[str, ...] = ()
    touched: tuple[str, ...] = ()
    in_git: bool = True
    notes: tuple[str, ...] = field(default=())

    @property
    def added(self) -> int:
        return sum(stat.added or 0 for stat in self.stats)

    @property
    def removed(self) -> int:
        return sum(stat.removed or 0 for stat in self.stats)

    @property
    def files(self) -> int:
        return len(self.stats) + len(self.untracked) + (0 if self.in_git else len(self.touched))

    def render(self) -> str:
        """The text printed after a headless request: the diff, then one line per untracked
        (or, outside git, touched) file. Empty when nothing changed."""
        lines = [self.text.rstrip("\n")] if self.text.strip() else []
        lines += [UNTRACKED_PREFIX + path for path in self.untracked]
        if not self.in_git:
            lines += [TOUCHED_PREFIX + path for path in self.touched]
        return "\n".join(lines) + ("\n" if lines else "")

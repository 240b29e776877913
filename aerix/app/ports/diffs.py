"""The working tree's snapshot and the request's diff (``aerix.adapters.git.git_diff.GitDiffs``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from aerix.domain.diffs import RequestDiff, Snapshot


class DiffSource(Protocol):
    """The request's snapshot and diff."""

    def snapshot(self, cwd: Path) -> Snapshot: ...

    def diff(self, snapshot: Snapshot, touched: Iterable[Path | str] = ()) -> RequestDiff: ...


class DiffFigures(Protocol):
    """A diff's figures (``RequestDiff`` has them; so does the status projection's diff line)."""

    @property
    def added(self) -> int: ...
    @property
    def removed(self) -> int: ...
    @property
    def files(self) -> int: ...

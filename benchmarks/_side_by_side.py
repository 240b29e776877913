"""Two sides measured in turn, round after round, for a paired comparison on a shared machine;
an older commit checked out beside this tree to be one of the sides."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: This checkout: the tree the benchmarks belong to.
ROOT = Path(__file__).resolve().parents[1]


def project_source(copies: int) -> str:
    """This project's own source (caldrix's modules), ``copies`` times over: prompt text for the
    prefill benchmarks, tens of thousands of tokens a time, the same on every machine."""
    return "\n".join(path.read_text() for path in sorted((ROOT / "caldrix").rglob("*.py"))) * copies


@contextmanager
def worktree_of(commit: str, folder: Path) -> Iterator[Path]:
    """A detached worktree of ``commit`` (of this checkout's repository) in ``folder``, removed
    afterwards."""
    git = ["git", "-C", str(ROOT), "worktree"]
    added = subprocess.run(
        [*git, "add", "--detach", "-q", str(folder), commit], capture_output=True, text=True
    )
    if added.returncode != 0:
        raise SystemExit(f"cannot check out {commit}: {added.stderr.strip() or 'git worktree add failed'}")
    try:
        yield folder
    finally:
        subprocess.run([*git, "remove", "--force", str(folder)], check=False)


def short_head() -> str:
    """This checkout's commit, abbreviated, with ``+`` when its files differ from it ("tree"
    when git cannot say)."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    )
    return (head.stdout.strip() or "tree") + ("+" if changed.stdout.strip() else "")


def paired(rounds: int, left: Callable[[], float], right: Callable[[], float]) -> list[tuple[float, float]]:
    """Each round's (left, right) figures. The order alternates each round, so an order effect
    cancels out, and each pair shares its minute of the machine: a slow minute hits both sides,
    which is why a comparison takes the median of the per-round ratios."""
    pairs: list[tuple[float, float]] = []
    for i in range(rounds):
        if i % 2:
            right_figure = right()
            left_figure = left()
        else:
            left_figure = left()
            right_figure = right()
        pairs.append((left_figure, right_figure))
    return pairs

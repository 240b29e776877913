"""The files glob, grep and repo_map look at.

Inside a git repository: the git file set (tracked plus untracked, not ignored), from
``git ls-files -co --exclude-standard`` through ``aerix.adapters.git.git_runner``, bounded by
``GIT_TIMEOUT_SECS``. Elsewhere, or without git: a walk that skips ``.git``, ``target`` and
``node_modules``. Paths come back relative to the searched folder, with ``/`` separators, sorted.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from pathlib import Path

from aerix.adapters.git.git_runner import GitFailed, GitTimedOut, run_git
from aerix.adapters.tools.common import ToolFailure
from aerix.domain import bounds

_MAGIC = re.compile(r"[*?\[]")


def list_files(root: Path) -> list[str]:
    """Every file under ``root`` that the tools consider, relative to ``root``."""
    if not root.is_dir():
        raise ToolFailure(f"not a folder: {root}")
    from_git = _git_files(root)
    return from_git if from_git is not None else _walk_files(root)


def _git_files(root: Path) -> list[str] | None:
    """The git file set of the repository holding ``root``, relative to ``root``; None when
    there is no repository there, or no git: then the tools walk."""
    try:
        listing = run_git(root, "ls-files", "-co", "--exclude-standard", "-z")
    except GitTimedOut as exc:
        raise ToolFailure(f"{exc} in {root}") from exc
    except GitFailed:
        return None
    names = {name for name in listing.split("\0") if name}
    # A tracked file deleted from the tree, or a submodule, is not a file to read.
    return sorted(name for name in names if (root / name).is_file())


def _walk_files(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in bounds.WALK_SKIP_DIRS)
        relative = os.path.relpath(folder, root)
        for name in files:
            path = name if relative == "." else f"{relative}/{name}"
            found.append(path.replace(os.sep, "/"))
    return sorted(found)


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A matcher for a glob pattern where ``*`` also crosses ``/`` (``**`` means the same).

    ``src/**/*.py`` matches ``src/a.py`` as well as ``src/x/y/a.py``.
    """
    normalized = pattern.removeprefix("./").replace("**/", "*").replace("**", "*")
    regex = re.compile(fnmatch.translate(normalized))
    return lambda path: regex.match(path) is not None


def split_glob_root(pattern: str) -> tuple[str, str]:
    """Leading folders without wildcards move from the pattern to the search root:
    ``../lib/*.py`` -> (``../lib``, ``*.py``); ``/etc/*.conf`` -> (``/etc``, ``*.conf``)."""
    parts = pattern.split("/")
    fixed: list[str] = []
    while len(parts) > 1 and not _MAGIC.search(parts[0]):
        fixed.append(parts.pop(0))
    prefix = "/".join(fixed)
    if pattern.startswith("/") and not prefix:
        prefix = "/"
    return prefix, "/".join(parts)

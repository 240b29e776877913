"""Running git: every git call aerix makes goes through here (the request's diff, the project
key, the tools' file set; profiles next), on gitpython's command runner, each one bounded
(``GIT_TIMEOUT_SECS`` unless the caller's bound is shorter) and killed when it overruns. A git
that fails, hangs or is missing is ``GitFailed`` with one line (``GitTimedOut`` when it hung);
nothing from gitpython leaks past this module."""

from __future__ import annotations

import os
from pathlib import Path

from aerix.domain import bounds

#: Reads only: no git call of aerix's may take the index lock from under the user's own git.
_ENVIRONMENT = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


class GitFailed(Exception):
    """A git call failed, timed out or could not run (its callers turn it into a note)."""


class GitTimedOut(GitFailed):
    """A git call ran past its bound and was killed."""


def run_git(cwd: Path, *args: str, timeout: float | None = None) -> str:
    """``git <args>`` in ``cwd``; its stdout. Killed after ``timeout`` seconds (default
    ``GIT_TIMEOUT_SECS``)."""
    timeout = bounds.GIT_TIMEOUT_SECS if timeout is None else timeout
    try:
        import git  # here, not at the top: gitpython refuses to be imported where git is missing
    except ImportError as exc:
        raise GitFailed("git could not run (no git command on this machine)") from exc
    if not os.access(cwd, os.X_OK) or not cwd.is_dir():
        # gitpython would run git in this process's own folder instead, without a word.
        raise GitFailed(f"git could not run (no folder {cwd} to run it in)")
    runner = git.Git(cwd)
    try:
        status, stdout, stderr = runner.execute(
            ["git", *args],
            with_extended_output=True,
            with_exceptions=False,
            kill_after_timeout=timeout,
            env=_ENVIRONMENT,
            strip_newline_in_stdout=False,
        )
    except git.exc.GitCommandNotFound as exc:
        raise GitFailed("git could not run (no git command on this machine)") from exc
    except OSError as exc:
        raise GitFailed(f"git could not run ({exc.strerror or exc})") from exc
    if str(stderr).startswith("Timeout:"):  # how gitpython reports the kill at kill_after_timeout
        raise GitTimedOut(f"git {args[0]} took longer than {timeout:g} s")
    if status != 0:
        last = str(stderr).strip().splitlines()[-1:]
        raise GitFailed(f"git {args[0]} failed: {last[0] if last else status}")
    return str(stdout)

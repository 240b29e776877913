"""Running git: every git call aerix makes goes through here, on gitpython's command runner,
each one bounded (``GIT_TIMEOUT_SECS`` unless the caller's bound is shorter) and killed when it
overruns. A git that fails, hangs or is missing is ``GitFailed`` with one line; nothing from
gitpython leaks past this module."""

from __future__ import annotations

from pathlib import Path

import git

from aerix.domain.bounds import GIT_TIMEOUT_SECS

#: Reads only: no git call of aerix's may take the index lock from under the user's own git.
_ENVIRONMENT = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


class GitFailed(Exception):
    """A git call failed, timed out or could not run (its callers turn it into a note)."""


def run_git(cwd: Path, *args: str, timeout: float = GIT_TIMEOUT_SECS) -> str:
    """``git <args>`` in ``cwd``; its stdout. Killed after ``timeout`` seconds."""
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
    except (git.exc.GitCommandNotFound, OSError) as exc:
        raise GitFailed(f"git could not run ({getattr(exc, 'strerror', None) or exc})") from exc
    if str(stderr).startswith("Timeout:"):
        raise GitFailed(f"git {args[0]} took longer than {timeout:g} s")
    if status != 0:
        last = str(stderr).strip().splitlines()[-1:]
        raise GitFailed(f"git {args[0]} failed: {last[0] if last else status}")
    return str(stdout)

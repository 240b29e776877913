"""Running git: every git call aerix makes goes through here (the request's diff, the project
key, the tools' file set, the profile repository), each one a plain ``git`` process, bounded
(``GIT_TIMEOUT_SECS`` unless the caller's bound is shorter) and killed when it overruns. A git
that fails, hangs or is missing is ``GitFailed`` with one line (``GitTimedOut`` when it hung).

``run_git`` is the usual way: stdout, or ``GitFailed`` when git says no. ``call_git`` is for the
callers that read git's status and stderr themselves (the profiles' compare-and-swap, whose
refusal is an answer, not a failure) or feed it stdin and environment (their plumbing).
``run_git_together`` runs independent reads at once, each in its own thread (git does the work;
the threads only wait on it).

No git library: gitpython's import alone cost a warm request more than half a second, to start
processes the standard library starts as well."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from aerix.domain import bounds

#: Reads only: no git call of aerix's may take the index lock from under the user's own git.
#: LC_ALL=C and LANGUAGE=C: git's messages in English, as the callers read them.
_ENVIRONMENT = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "LANGUAGE": "C"}


class GitFailed(Exception):
    """A git call failed, timed out or could not run (its callers turn it into a note)."""


class GitTimedOut(GitFailed):
    """A git call ran past its bound and was killed."""


@dataclass(frozen=True)
class GitOutput:
    """What one git call gave back, whatever its status."""

    status: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "surrogateescape")

    def last_error(self) -> str:
        lines = [line.strip() for line in self.stderr.strip().splitlines() if line.strip()]
        return lines[-1] if lines else f"status {self.status}"


def call_git(
    cwd: Path,
    *args: str,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> GitOutput:
    """``git <args>`` in ``cwd`` with ``stdin`` and ``env`` added; killed after ``timeout``
    seconds (default ``GIT_TIMEOUT_SECS``). ``GitFailed`` only when git could not run or
    overran (``GitTimedOut``); any status is returned."""
    timeout = bounds.GIT_TIMEOUT_SECS if timeout is None else timeout
    if not os.access(cwd, os.X_OK) or not cwd.is_dir():
        # Checked first: a missing folder would otherwise read as a missing git.
        raise GitFailed(f"git could not run (no folder {cwd} to run it in)")
    try:
        # run() kills git at the timeout and reaps it. Without stdin git reads the null device,
        # never aerix's own stdin (which -p may be reading the prompt from).
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            env={**os.environ, **_ENVIRONMENT, **(env or {})},
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitTimedOut(f"git {args[0]} took longer than {timeout:g} s") from exc
    except FileNotFoundError as exc:
        raise GitFailed("git could not run (no git command on this machine)") from exc
    except OSError as exc:
        raise GitFailed(f"git could not run ({exc.strerror or exc})") from exc
    return GitOutput(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))


def run_git_together(cwd: Path, *calls: Sequence[str]) -> list[str | GitFailed]:
    """Each of ``calls`` (a git command line's arguments) as ``run_git`` in ``cwd``, all at once;
    in the same order, each one's stdout or its ``GitFailed``."""

    def one(args: Sequence[str]) -> str | GitFailed:
        try:
            return run_git(cwd, *args)
        except GitFailed as failed:
            return failed

    if len(calls) < 2:
        return [one(args) for args in calls]
    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="git") as threads:
        return list(threads.map(one, calls))


def run_git(cwd: Path, *args: str, timeout: float | None = None) -> str:
    """``git <args>`` in ``cwd``; its stdout. Killed after ``timeout`` seconds (default
    ``GIT_TIMEOUT_SECS``)."""
    output = call_git(cwd, *args, timeout=timeout)
    if output.status != 0:
        raise GitFailed(f"git {args[0]} failed: {output.last_error()}")
    return output.text

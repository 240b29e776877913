"""Running git: every git call aerix makes goes through here (the request's diff, the project
key, the tools' file set, the profile repository), on gitpython's command runner, each one
bounded (``GIT_TIMEOUT_SECS`` unless the caller's bound is shorter) and killed when it overruns.
A git that fails, hangs or is missing is ``GitFailed`` with one line (``GitTimedOut`` when it
hung); nothing from gitpython leaks past this module.

``run_git`` is the usual way: stdout, or ``GitFailed`` when git says no. ``call_git`` is for the
callers that read git's status and stderr themselves (the profiles' compare-and-swap, whose
refusal is an answer, not a failure) or feed it stdin and environment (their plumbing)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from aerix.domain import bounds

#: Reads only: no git call of aerix's may take the index lock from under the user's own git.
_ENVIRONMENT = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


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
    try:
        import git  # here, not at the top: gitpython refuses to be imported where git is missing
    except ImportError as exc:
        raise GitFailed("git could not run (no git command on this machine)") from exc
    if not os.access(cwd, os.X_OK) or not cwd.is_dir():
        # gitpython would run git in this process's own folder instead, without a word.
        raise GitFailed(f"git could not run (no folder {cwd} to run it in)")
    runner = git.Git(cwd)
    with tempfile.TemporaryFile() as stream:
        if stdin is not None:
            stream.write(stdin)
            stream.seek(0)
        try:
            result = runner.execute(
                ["git", *args],
                istream=stream if stdin is not None else None,
                with_extended_output=True,
                with_exceptions=False,
                kill_after_timeout=timeout,
                env={**_ENVIRONMENT, **(env or {})},
                stdout_as_string=False,
                strip_newline_in_stdout=False,
            )
        except git.exc.GitCommandNotFound as exc:
            raise GitFailed("git could not run (no git command on this machine)") from exc
        except OSError as exc:
            raise GitFailed(f"git could not run ({exc.strerror or exc})") from exc
    # with_extended_output gives (status, stdout, stderr); stdout_as_string=False keeps stdout bytes.
    status, stdout, stderr = cast(tuple[int, bytes, "bytes | str"], result)
    error = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else str(stderr)
    if error.startswith("Timeout:"):  # how gitpython reports the kill at kill_after_timeout
        raise GitTimedOut(f"git {args[0]} took longer than {timeout:g} s")
    return GitOutput(status, stdout, error)


def run_git(cwd: Path, *args: str, timeout: float | None = None) -> str:
    """``git <args>`` in ``cwd``; its stdout. Killed after ``timeout`` seconds (default
    ``GIT_TIMEOUT_SECS``)."""
    output = call_git(cwd, *args, timeout=timeout)
    if output.status != 0:
        raise GitFailed(f"git {args[0]} failed: {output.last_error()}")
    return output.text

"""The project key: the folder name that groups a project's sessions.

A working directory inside a git repository with an ``origin`` remote is keyed by that remote
(normalised, so every clone and worktree of one project shares its sessions); anything else is
keyed by its resolved path. Keys are safe file names: every run of characters other than
letters, digits, ``.`` and ``_`` becomes ``-``, and a key longer than ``PROJECT_KEY_MAX_CHARS``
is cut and ends with a hash of the whole.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from aerix.adapters.git.git_runner import GitFailed, run_git
from aerix.domain import bounds

PROJECT_KEY_MAX_CHARS = 200

_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._]+")


def project_key(cwd: Path) -> str:
    """The key for ``cwd``: from its git origin remote, else from its path."""
    if not cwd.exists():
        # An imported session's folder may be gone, or on another machine: key its path as written.
        return _safe(str(cwd))
    remote = origin_url(cwd)
    if remote is not None:
        return _safe(normalise_remote(remote))
    return _safe(str(cwd.resolve()))


def origin_url(cwd: Path) -> str | None:
    """The ``origin`` remote's URL of the repository holding ``cwd``, or None (no repo, no
    origin, git missing, or no answer within ``bounds.REMOTE_LOOKUP_TIMEOUT_SECS``)."""
    try:
        url = run_git(cwd, "config", "--get", "remote.origin.url", timeout=bounds.REMOTE_LOOKUP_TIMEOUT_SECS)
    except GitFailed:
        return None
    return url.strip() or None


def normalise_remote(url: str) -> str:
    """``git@github.com:Me/proj.git``, ``https://user@github.com/Me/proj`` → ``github.com/me/proj``."""
    text = url.strip()
    scp = _SCP_LIKE.match(text)
    if scp and "://" not in text:
        host, path = scp.group(1), scp.group(2)
    else:
        without_scheme = text.split("://", 1)[-1]
        host_part, _, path = without_scheme.partition("/")
        host = host_part.rsplit("@", 1)[-1]
        host = re.sub(r":\d+$", "", host)
    path = path.strip("/")
    path = path.removesuffix(".git")
    return f"{host}/{path}".lower() if host else path.lower()


def _safe(raw: str) -> str:
    key = _UNSAFE.sub("-", raw).strip("-") or "root"
    if len(key) > PROJECT_KEY_MAX_CHARS:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:12]
        key = f"{key[: PROJECT_KEY_MAX_CHARS - 13]}-{digest}"
    return key

"""The project key's remote lookup is bounded: a git that never answers falls back to the path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aerix.adapters.project.project_key import project_key
from aerix.domain import bounds


def test_a_git_that_never_answers_gives_the_path_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real repository with an origin, but the ``git`` on PATH hangs (as one waiting on a dead
    network mount would): the lookup is killed at the bound and the key is the path's. The bound
    is shortened so the test does not wait the spec's 10 s."""
    repo_dir = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo_dir)], check=True)
    subprocess.run(
        ["git", "-C", str(repo_dir), "remote", "add", "origin", "git@github.com:Someone/Proj.git"], check=True
    )
    assert project_key(repo_dir) == "github.com-someone-proj"
    hanging = tmp_path / "bin"
    hanging.mkdir()
    (hanging / "git").write_text("#!/bin/sh\nexec sleep 60\n")
    (hanging / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{hanging}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(bounds, "REMOTE_LOOKUP_TIMEOUT_SECS", 0.5)
    assert project_key(repo_dir) == str(repo_dir.resolve()).strip("/").replace("/", "-")

"""Helpers for the profile tests: real bare repositories under the test's XDG data folder, and a
second process that writes one of their branches (``python -m tests.aerix.profile_world``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from aerix import __version__
from aerix.adapters.git.profile_repo import GitProfile, GitProfiles
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.app.profiles.writes import Write, commit_change
from aerix.domain.profile import ProfileSnapshot

EMBEDDED = EmbeddedPrompts().all()
RELEASE = __version__
ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout


def refs(repo: GitProfile) -> dict[str, str]:
    return repo.refs.branches()


def add_file(repo: GitProfile, branch: str, path: str, text: str, message: str) -> str | None:
    def change(base: ProfileSnapshot) -> Write:
        files = dict(base.files)
        files[path] = text.encode()
        return Write(files, message)

    return commit_change(repo, branch, change)


def write_in_another_process(profile: str, branch: str, path: str, text: str) -> None:
    """Another aerix writing the branch: a separate Python process through the same adapter."""
    subprocess.run(
        [sys.executable, "-m", "tests.aerix.profile_world", profile, branch, path, text],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


def hand_edit(repo_path: Path, branch: str, path: str, text: str, work: Path) -> None:
    """What a person does with git: clone the profile, change a file, commit, push."""
    subprocess.run(["git", "clone", "-q", "--branch", branch, str(repo_path), str(work)], check=True)
    target = work / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    for args in (("add", "-A"), ("-c", "user.name=me", "-c", "user.email=me@x", "commit", "-qm", "by hand")):
        subprocess.run(["git", "-C", str(work), *args], check=True)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", branch], check=True)


if __name__ == "__main__":
    name, branch, path, text = sys.argv[1:5]
    add_file(GitProfiles().open(name), branch, path, text, f"the other process writes {path}")

"""Every git call goes through ``aerix.adapters.git.git_runner``: bounded, killed when it hangs, and
a machine without git is a fallback, never a traceback. Real git, real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aerix.adapters.git.git_runner import GitFailed, GitTimedOut, run_git, run_git_together
from aerix.adapters.tools import LocalTools
from aerix.domain import bounds


def _hanging_git(folder: Path) -> Path:
    """A ``git`` that never answers (as one waiting on a dead network mount would)."""
    folder.mkdir()
    (folder / "git").write_text("#!/bin/sh\nexec sleep 60\n")
    (folder / "git").chmod(0o755)
    return folder


def _repository(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    (path / "a.py").write_text("print('a')\n")
    return path


def test_a_hanging_git_is_killed_at_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repository(tmp_path / "repo")
    assert run_git(repo, "ls-files", "-co", "--exclude-standard") == "a.py\n"
    monkeypatch.setenv("PATH", f"{_hanging_git(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(GitTimedOut, match=r"git ls-files took longer than 0\.5 s"):
        run_git(repo, "ls-files", timeout=0.5)


def test_the_tools_file_set_is_bounded_by_the_git_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """glob over a repository whose git hangs: an error result naming the bound, not a wait."""
    repo = _repository(tmp_path / "repo")
    assert LocalTools(repo).run("glob", {"pattern": "*.py"}) == "a.py"
    monkeypatch.setenv("PATH", f"{_hanging_git(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(bounds, "GIT_TIMEOUT_SECS", 0.5)
    assert LocalTools(repo).run("glob", {"pattern": "*.py"}) == (
        f"error: git ls-files took longer than 0.5 s in {repo}"
    )


def test_a_failing_git_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(GitFailed, match=r"^git rev-parse failed: fatal: not a git repository"):
        run_git(tmp_path, "rev-parse", "--show-toplevel")


def test_a_folder_that_is_gone_is_refused_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that does not exist is refused by name (not run in the process's own folder, nor
    mistaken for a missing git), so no git call ever answers about another repository."""
    monkeypatch.chdir(_repository(tmp_path / "elsewhere"))
    with pytest.raises(GitFailed, match="no folder"):
        run_git(tmp_path / "gone", "ls-files", "-co")


def test_a_machine_without_git_runs_aerix_without_a_traceback(tmp_path: Path) -> None:
    """No git on PATH at all: aerix starts, keys the project by its path and lists its (no)
    sessions."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    for args in (["--version"], ["sessions", "list"]):
        done = subprocess.run(
            [sys.executable, "-m", "aerix", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("no sessions here")


def test_calls_run_together_answer_in_their_order_each_with_its_own_failure(tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo")
    listing, failed, top = run_git_together(
        repo,
        ("ls-files", "-co", "--exclude-standard"),
        ("rev-parse", "--verify", "HEAD"),
        ("rev-parse", "--show-toplevel"),
    )
    assert listing == "a.py\n"
    assert isinstance(failed, GitFailed) and str(failed).startswith("git rev-parse failed: fatal: ")
    assert top == f"{repo.resolve()}\n"


def test_git_reads_no_stdin_of_aerix_s_own(tmp_path: Path) -> None:
    """A git that would read stdin (hash-object --stdin) gets nothing, never the bytes piped to
    aerix (a prompt given on stdin)."""
    repo = _repository(tmp_path / "repo")
    script = "import sys; from pathlib import Path; from aerix.adapters.git.git_runner import run_git; "
    script += "print(run_git(Path(sys.argv[1]), 'hash-object', '--stdin').strip())"
    done = subprocess.run(
        [sys.executable, "-c", script, str(repo)],
        input="the prompt",
        capture_output=True,
        text=True,
        timeout=60,
    )
    empty_blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert done.stdout.strip() == empty_blob, done.stderr

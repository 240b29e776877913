"""The request's snapshot and diff, in real git repositories (and outside one)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from aerix.adapters.git.git_diff import EMPTY_TREE, request_diff, take_snapshot
from aerix.domain.diffs import Snapshot


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@example.org")
    git(path, "config", "user.name", "t")
    return path


def commit_file(repo: Path, name: str, text: str) -> None:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-qm", f"add {name}")


def test_uncommitted_edits_before_the_request_are_not_the_agents(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit_file(repo, "a.txt", "one\n")
    (repo / "a.txt").write_text("one\nmine\n")  # the user's own uncommitted edit
    snapshot = take_snapshot(repo)
    assert git(repo, "stash", "list") == ""  # stash create touches nothing
    assert git(repo, "status", "--porcelain") == " M a.txt\n"

    (repo / "a.txt").write_text("one\nmine\nagent\n")
    (repo / "new.py").write_text("print(1)\n")
    diff = request_diff(snapshot, ["new.py"])

    assert "+agent" in diff.text and "+mine" not in diff.text
    assert [(s.path, s.added, s.removed) for s in diff.stats] == [("a.txt", 1, 0)]
    assert diff.untracked == ("new.py",)
    assert diff.render().endswith("untracked: new.py\n")
    assert (diff.added, diff.removed, diff.files) == (1, 0, 2)


def test_clean_tree_diffs_against_head_and_untracked_from_before_is_left_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit_file(repo, "a.txt", "one\ntwo\n")
    (repo / "scratch.txt").write_text("the user's untracked file\n")
    snapshot = take_snapshot(repo)
    assert snapshot.base == git(repo, "rev-parse", "HEAD").strip()

    (repo / "a.txt").write_text("one\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "made_by_bash.txt").write_text("x\n")
    diff = request_diff(snapshot)

    assert [(s.path, s.added, s.removed) for s in diff.stats] == [("a.txt", 0, 1)]
    assert diff.untracked == ("sub/made_by_bash.txt",)


def test_ignored_file_the_request_wrote_is_listed_untracked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit_file(repo, ".gitignore", "*.log\n")
    snapshot = take_snapshot(repo)
    (repo / "out.log").write_text("written by the agent\n")
    assert request_diff(snapshot, [repo / "out.log"]).untracked == ("out.log",)


def test_repository_without_commits_diffs_against_the_empty_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    snapshot = take_snapshot(repo)
    assert snapshot.base == EMPTY_TREE
    (repo / "first.txt").write_text("hello\n")
    diff = request_diff(snapshot, ["first.txt"])
    assert diff.untracked == ("first.txt",)
    assert diff.stats == ()


def test_nothing_changed_renders_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit_file(repo, "a.txt", "one\n")
    diff = request_diff(take_snapshot(repo))
    assert diff.render() == "" and diff.files == 0


def test_outside_git_the_touched_files_are_listed(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    snapshot = take_snapshot(folder)
    assert snapshot.root is None
    (folder / "note.md").write_text("x\n")
    diff = request_diff(snapshot, ["note.md", "./note.md"])
    assert not diff.in_git
    assert diff.render() == "touched: note.md\n"


def test_a_snapshot_from_a_subfolder_names_the_root_its_branch_and_every_untracked_file(
    tmp_path: Path,
) -> None:
    """Taken in a folder below the top level: the root, the branch, and untracked files all over
    the repository, by their paths from the root (a staged rename, whose original path git
    lists as a field of its own, is not mistaken for one)."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "work")
    commit_file(repo, "? old.txt", "one\n")
    git(repo, "mv", "? old.txt", "new name.txt")
    (repo / "deep" / "er").mkdir(parents=True)
    (repo / "deep" / "er" / "u.txt").write_text("x\n")
    (repo / "top.txt").write_text("y\n")
    snapshot = take_snapshot(repo / "deep")
    assert snapshot.root == repo.resolve()
    assert snapshot.branch == "work"
    assert snapshot.untracked == {"deep/er/u.txt", "top.txt"}
    assert snapshot.base not in (
        None,
        EMPTY_TREE,
        git(repo, "rev-parse", "HEAD").strip(),
    )  # the staged rename


def test_a_detached_head_has_no_branch_and_a_repository_without_commits_has_its_unborn_one(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "first")
    (repo / "u.txt").write_text("x\n")
    unborn = take_snapshot(repo)
    assert (unborn.branch, unborn.base, unborn.untracked) == ("first", EMPTY_TREE, {"u.txt"})
    commit_file(repo, "a.txt", "one\n")
    git(repo, "checkout", "-q", "--detach")
    detached = take_snapshot(repo)
    assert (detached.branch, detached.base) == ("", git(repo, "rev-parse", "HEAD").strip())


def test_outside_git_the_snapshot_has_no_root_branch_or_notes(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "f.txt").write_text("x\n")
    assert take_snapshot(folder) == Snapshot(folder)


def test_a_snapshot_taken_the_request_cannot_diff_says_why_in_one_note(tmp_path: Path) -> None:
    """The repository lost between the snapshot and the end: a note, not an error."""
    repo = make_repo(tmp_path / "repo")
    commit_file(repo, "a.txt", "one\n")
    snapshot = take_snapshot(repo)
    shutil.rmtree(repo / ".git")
    diff = request_diff(snapshot)
    assert len(diff.notes) == 1 and diff.notes[0].startswith("no diff for this request: git ")

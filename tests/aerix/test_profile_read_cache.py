"""A profile commit is read from git once, by the first process that needs it; later processes
(each a fresh ``GitProfile``) read the cache beside the repository. Real bare repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aerix.adapters.git import profile_repo
from aerix.adapters.git.commit_files_cache import CACHE_FOLDER
from aerix.adapters.git.profile_repo import GitProfile, GitProfiles
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.app.profiles.attach import ProfileRequest, attach_profile
from aerix.app.profiles.bases import seed_main
from aerix.domain.profile import MAIN_BRANCH, model_branch, session_branch
from tests.aerix.profile_world import EMBEDDED, RELEASE, add_file


def _seeded() -> tuple[GitProfile, str]:
    repo = GitProfiles().open("default")
    return repo, seed_main(repo, EMBEDDED, RELEASE)


def _git_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git commands the profile adapter runs from here on, by name."""
    commands: list[str] = []
    real = profile_repo.call_git

    def recorded(cwd: Path, *args: str, **kwargs: object) -> profile_repo.GitOutput:
        commands.append(args[0])
        return real(cwd, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(profile_repo, "call_git", recorded)
    return commands


def test_a_later_process_reads_a_commit_without_git(monkeypatch: pytest.MonkeyPatch) -> None:
    repo, head = _seeded()
    first = repo.objects.read(head)
    commands = _git_reads(monkeypatch)
    later = GitProfile("default", repo.path).objects.read(head)  # what the next aerix process does
    assert commands == ["rev-parse"]  # opening it (is it bare?); no ls-tree, no cat-file
    assert later == first and later.files == first.files


def test_a_warm_attach_reads_its_heads_in_one_git_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request on a profile seeded for this release and model: is it bare, the heads of main,
    the model base and the session (one ``for-each-ref``), the session's branch made; its commit
    from the cache."""
    request = ProfileRequest("default", "smollm2-135m", "s1", RELEASE, None, False)
    attach_profile(GitProfiles(), request, EMBEDDED, EmbeddedPrompts())  # seeds main and the base
    commands = _git_reads(monkeypatch)
    attached = attach_profile(
        GitProfiles(),
        ProfileRequest("default", "smollm2-135m", "s2", RELEASE, None, False),
        EMBEDDED,
        EmbeddedPrompts(),
    )
    assert commands == ["rev-parse", "for-each-ref", "update-ref"]
    repo = GitProfiles().open("default")
    session_head = repo.refs.head(session_branch("s2"))
    assert session_head == attached.commit == repo.refs.head(model_branch("smollm2-135m"))


def test_heads_names_only_the_branches_asked_for_that_exist() -> None:
    repo, main = _seeded()
    base = model_branch("m")
    add_file(repo, f"{base}/below", "a.txt", "a", "a branch whose name starts with the base's")
    assert repo.refs.heads([MAIN_BRANCH, base, "session/none"]) == {MAIN_BRANCH: main}
    assert repo.refs.heads([]) == {}


def test_each_commit_has_its_own_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    repo, head = _seeded()
    repo.objects.read(head)
    tuned = add_file(repo, "main", "prompts/routing.md", "tuned routing", "tune")
    assert tuned is not None
    commands = _git_reads(monkeypatch)
    snapshot = GitProfile("default", repo.path).objects.read(tuned)
    assert "cat-file" in commands  # a commit not read before comes from git
    assert snapshot.text("prompts/routing.md") == "tuned routing"
    later = GitProfile("default", repo.path).objects.read(head)
    assert later.text("prompts/routing.md") == EMBEDDED["routing"]


def test_an_entry_that_does_not_parse_is_read_from_git_again(monkeypatch: pytest.MonkeyPatch) -> None:
    repo, head = _seeded()
    expected = repo.objects.read(head).files
    entry = repo.path / CACHE_FOLDER / f"{head}.json"
    entry.write_text(entry.read_text()[:40])  # cut short, as by a full disk
    commands = _git_reads(monkeypatch)
    assert GitProfile("default", repo.path).objects.read(head).files == expected
    assert "cat-file" in commands
    assert json.loads(entry.read_text())["commit"] == head  # written whole again


def test_an_entry_naming_another_commit_is_not_used() -> None:
    repo, head = _seeded()
    files = repo.objects.read(head).files
    other = "f" * 40
    entry = repo.path / CACHE_FOLDER / f"{head}.json"
    entry.write_text(json.dumps({"commit": other, "files": {}}))
    assert GitProfile("default", repo.path).objects.read(head).files == files


def test_a_cache_folder_that_cannot_be_made_only_means_git_is_read() -> None:
    repo, head = _seeded()  # seeding reads no commit: there is no cache folder yet
    (repo.path / CACHE_FOLDER).write_text("a file where the folder goes")
    later = GitProfile("default", repo.path).objects.read(head)
    assert later.text("prompts/routing.md") == EMBEDDED["routing"]

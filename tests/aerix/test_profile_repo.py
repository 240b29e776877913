"""The profile repository on real bare git repositories: seeding, the model base, session
branches, compare-and-swap writes under a second writing process, git's bound, and damage."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from pathlib import Path

import pytest

from aerix.adapters.git.profile_repo import GitProfiles
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.terminal.startup_block import profile_text
from aerix.app.profiles.attach import AttachedProfile, ProfileRequest, attach_profile, preview_profile
from aerix.app.profiles.bases import ensure_model_base, seed_main
from aerix.app.profiles.writes import CAS_TRIES, Write, commit_change, delete_branch
from aerix.domain import bounds
from aerix.domain.bounds import CAS_RETRIES
from aerix.domain.profile import (
    SHORT_COMMIT_CHARS,
    UPSTREAM_FILE,
    ProfileSnapshot,
    UpstreamEntry,
    blob_id,
    render_upstream,
)
from aerix.errors import ProfileGitFailed, ProfileRace, ProfileUnusable
from tests.aerix.profile_world import EMBEDDED, RELEASE, add_file, git, write_in_another_process

MODEL = "smollm2-135m"


def _attach(
    session: str, model: str = MODEL, recorded_commit: str | None = None, refresh: bool = False
) -> AttachedProfile:
    request = ProfileRequest("default", model, session, RELEASE, recorded_commit, refresh)
    return attach_profile(GitProfiles(), request, EMBEDDED, EmbeddedPrompts())


def test_a_new_profile_is_seeded_from_the_embedded_prompts_and_gets_a_model_base() -> None:
    profile = _attach("s1")
    repo = GitProfiles().find("default")
    assert (
        repo is not None
        and repo.path.name == "default.git"
        and git(repo.path, "rev-parse", "--is-bare-repository").strip() == "true"
    )
    branches = repo.refs.branches()
    assert set(branches) == {"main", "model/smollm2-135m", "session/s1"}
    assert branches["main"] == branches["model/smollm2-135m"] == branches["session/s1"] == profile.commit
    main = repo.objects.read(branches["main"])
    assert {path: main.text(path) for path in main.files if path.startswith("prompts/")} == {
        f"prompts/{name}.md": text for name, text in EMBEDDED.items()
    }
    assert json.loads(main.files[UPSTREAM_FILE]) == {}
    assert (
        git(repo.path, "log", "--format=%s", "main").strip()
        == f"aerix {RELEASE}: seed main from the embedded prompts"
    )
    assert profile.name == "default" and profile.tuned == 0 and profile.notes == ()
    assert profile.get("routing") == EMBEDDED["routing"]


def test_seeding_again_changes_nothing_and_a_new_release_is_one_commit_on_main() -> None:
    repo = GitProfiles().open("default")
    first = seed_main(repo, EMBEDDED, RELEASE)
    assert seed_main(repo, EMBEDDED, RELEASE) == first
    changed = {**EMBEDDED, "routing": EMBEDDED["routing"] + "Answer in lower case.\n"}
    second = seed_main(repo, changed, "9.9.9")
    assert second != first
    assert (
        git(repo.path, "log", "--format=%s", "main").splitlines()[0]
        == "aerix 9.9.9: the embedded prompts of this release"
    )
    assert git(repo.path, "diff", "--name-only", first, second).split() == ["prompts/routing.md"]


def test_a_tuned_path_on_main_is_left_alone_by_a_new_release() -> None:
    repo = GitProfiles().open("default")
    seed_main(repo, EMBEDDED, RELEASE)
    entry = UpstreamEntry(blob_id(EMBEDDED["routing"]), RELEASE, "2026-01-01T00:00:00+00:00")

    def tune(base: ProfileSnapshot) -> Write:
        return Write(
            base.with_texts({"prompts/routing.md": "my routing"}, {"prompts/routing.md": entry}), "hand"
        )

    commit_change(repo, "main", tune)
    head = seed_main(repo, {**EMBEDDED, "routing": "the new release's routing"}, "9.9.9")
    assert repo.objects.read(head).text("prompts/routing.md") == "my routing"


def test_the_model_base_is_made_from_main_once_and_then_left_where_it_is() -> None:
    repo = GitProfiles().open("default")
    main = seed_main(repo, EMBEDDED, RELEASE)
    branch, head = ensure_model_base(repo, "/models/qwen2.5 7b.gguf", main)
    assert branch.startswith("model/models-qwen2.5-7b.gguf-") and head == main
    moved = add_file(repo, branch, "prompts/routing.md", "tuned", "tune")
    newer = seed_main(repo, {**EMBEDDED, "routing": "changed"}, "9.9.9")
    assert ensure_model_base(repo, "/models/qwen2.5 7b.gguf", newer) == (branch, moved)


def test_a_resumed_session_reads_its_recorded_commit_after_the_model_base_moved() -> None:
    first = _attach("s1")
    repo = GitProfiles().open("default")
    tuned = UpstreamEntry(blob_id(EMBEDDED["routing"]), RELEASE, "2026-01-01T00:00:00+00:00")

    def tune(base: ProfileSnapshot) -> Write:
        text = "Classify the request: answer, edit, investigate or plan.\n"
        return Write(base.with_texts({"prompts/routing.md": text}, {"prompts/routing.md": tuned}), "tune")

    moved = commit_change(repo, "model/smollm2-135m", tune)
    resumed = _attach("s1", recorded_commit=first.commit)
    assert resumed.commit == first.commit and resumed.get("routing") == EMBEDDED["routing"]
    assert repo.refs.head("session/s1") == first.commit
    # Even when the main member's model changed since: the recorded commit rules.
    other_model = _attach("s1", model="qwen", recorded_commit=first.commit)
    assert other_model.commit == first.commit
    fresh = _attach("s2")
    assert fresh.commit == moved and fresh.tuned == 1
    assert fresh.get("routing").startswith("Classify the request")
    refreshed = _attach("s1", recorded_commit=first.commit, refresh=True)
    assert refreshed.commit == moved and repo.refs.head("session/s1") == moved


def test_a_recorded_commit_the_profile_lost_is_one_note_and_the_model_base() -> None:
    base = _attach("s1")
    resumed = _attach("s1", recorded_commit="0123456789abcdef0123456789abcdef01234567")
    assert resumed.commit == base.commit
    assert resumed.notes == (
        "profile default no longer holds commit 0123456789ab, which this session read; "
        "reading model/smollm2-135m's head",
    )


def test_the_screens_profile_row_shortens_a_commit_as_the_profiles_notes_do() -> None:
    """One short form of a commit: the startup block's row once showed 8 characters where the
    profile's own notes (and its commands) show 12."""
    lost = "0123456789abcdef0123456789abcdef01234567"
    [note] = _attach("s1", recorded_commit=lost).notes
    shown = re.search(r"holds commit (\w+),", note)
    assert shown is not None and lost.startswith(shown.group(1))
    row = profile_text({"name": "default", "model_branch": "model/m", "commit": lost, "tuned": None})
    assert row == f"default · model/m · {shown.group(1)}"
    assert len(shown.group(1)) == SHORT_COMMIT_CHARS


def _preview(session: str, recorded_commit: str | None = None) -> AttachedProfile:
    request = ProfileRequest("default", MODEL, session, RELEASE, recorded_commit)
    return preview_profile(GitProfiles(), request, EMBEDDED, EmbeddedPrompts())


def test_a_preview_reads_the_commit_a_session_will_read_and_makes_no_session_branch() -> None:
    """The screen shows the commit before the first prompt; quitting there must leave no
    ``session/<id>`` without a session log, so only the first request makes it."""
    first = _attach("s1")
    repo = GitProfiles().open("default")
    before = repo.refs.branches()
    tuned = UpstreamEntry(blob_id(EMBEDDED["routing"]), RELEASE, "2026-01-01T00:00:00+00:00")
    moved = commit_change(
        repo,
        "model/smollm2-135m",
        lambda base: Write(
            base.with_texts({"prompts/routing.md": "tuned"}, {"prompts/routing.md": tuned}), "t"
        ),
    )
    new, resumed = _preview("s2"), _preview("s1", recorded_commit=first.commit)
    assert (new.commit, new.branch, new.tuned, new.get("routing")) == (moved, "session/s2", 1, "tuned")
    assert (resumed.commit, resumed.get("routing")) == (first.commit, EMBEDDED["routing"])
    assert repo.refs.branches() == {**before, "model/smollm2-135m": moved}
    # The first request attaches what the preview showed, and only then is the branch made.
    attached = _attach("s2")
    assert (attached.commit, attached.texts) == (new.commit, new.texts)
    assert repo.refs.head("session/s2") == moved


def test_a_preview_of_a_new_profile_seeds_it_but_makes_no_session_branch() -> None:
    shown = _preview("s1")
    repo = GitProfiles().open("default")
    assert set(repo.refs.branches()) == {"main", "model/smollm2-135m"}
    assert shown.commit == repo.refs.head("model/smollm2-135m") and shown.notes == ()


def test_deleting_a_session_branch() -> None:
    _attach("s1")
    repo = GitProfiles().open("default")
    assert delete_branch(repo, "session/s1") is True
    assert delete_branch(repo, "session/s1") is False
    assert "session/s1" not in repo.refs.branches()


# ---- compare-and-swap under a second writer -----------------------------------------------------


def test_a_write_whose_branch_another_process_moves_once_retries_from_the_new_head() -> None:
    repo = GitProfiles().open("default")
    seed_main(repo, EMBEDDED, RELEASE)
    calls = []

    def change(base: ProfileSnapshot) -> Write:
        calls.append(base.commit)
        if len(calls) == 1:  # between this read and the swap, the other process commits
            write_in_another_process("default", "main", "notes/other.md", "from the other process")
        files = dict(base.files)
        files["notes/mine.md"] = b"from this process"
        return Write(files, "mine")

    commit = commit_change(repo, "main", change)
    assert len(calls) == 2 and calls[0] != calls[1]
    head = repo.objects.read(repo.refs.head("main") or "")
    assert head.commit == commit
    assert (
        head.text("notes/other.md") == "from the other process"
        and head.text("notes/mine.md") == "from this process"
    )
    assert git(repo.path, "log", "--format=%s", "-2", "main").splitlines() == [
        "mine",
        "the other process writes notes/other.md",
    ]


def test_a_branch_that_keeps_moving_is_refused_by_name_after_the_retries() -> None:
    repo = GitProfiles().open("default")
    seed_main(repo, EMBEDDED, RELEASE)
    before = repo.refs.head("main")
    tries = []

    def change(base: ProfileSnapshot) -> Write:
        tries.append(base.commit)
        write_in_another_process("default", "main", f"notes/other{len(tries)}.md", "x")
        return Write({**base.files, "notes/mine.md": b"mine"}, "mine")

    with pytest.raises(ProfileRace) as refused:
        commit_change(repo, "main", change)
    assert len(tries) == CAS_TRIES == CAS_RETRIES + 1
    assert str(refused.value) == (
        f"profile default: main moved under this write {CAS_TRIES} times (another aerix or git is "
        "writing it); nothing was committed, try again when it is quiet"
    )
    log = git(repo.path, "log", "--format=%s", f"{before}..main").splitlines()
    assert log == [f"the other process writes notes/other{n}.md" for n in range(CAS_TRIES, 0, -1)]
    assert "notes/mine.md" not in repo.objects.read(repo.refs.head("main") or "").files


def _writer(profile_root: str, name: str, files: int, start: object, results: object) -> None:
    store = GitProfiles(Path(profile_root))
    repo = store.open("default")
    start.wait()
    for number in range(files):
        path = f"notes/{name}-{number}.md"
        try:
            add_file(repo, "main", path, name, path)
            results.put(("ok", path))
        except ProfileRace as refusal:
            results.put(("race", str(refusal)))


def test_writers_in_several_processes_at_once_never_lose_a_write() -> None:
    store = GitProfiles()
    seed_main(store.open("default"), EMBEDDED, RELEASE)
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(4), context.Queue()
    writers = [
        context.Process(target=_writer, args=(str(store.root), f"w{n}", 5, start, results)) for n in range(4)
    ]
    for writer in writers:
        writer.start()
    outcomes = [results.get(timeout=120) for _ in range(20)]
    for writer in writers:
        writer.join(timeout=60)
    written = {path for kind, path in outcomes if kind == "ok"}
    assert all(kind == "ok" or "moved under this write" in text for kind, text in outcomes)
    head = store.open("default").objects.read(store.open("default").refs.head("main") or "")
    assert {path for path in head.files if path.startswith("notes/")} == written
    assert written  # at least the writer that won each round


# ---- git's bound and damage ---------------------------------------------------------------------


def test_a_git_that_never_answers_is_cut_at_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitProfiles().open("default")
    hanging = tmp_path / "bin"
    hanging.mkdir()
    (hanging / "git").write_text("#!/bin/sh\nexec sleep 60\n")
    (hanging / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{hanging}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(bounds, "GIT_TIMEOUT_SECS", 0.5)
    with pytest.raises(ProfileGitFailed, match=r"git rev-parse took longer than 0\.5 s"):
        repo.refs.head("main")


def test_a_profile_that_is_not_a_repository_falls_back_to_the_embedded_prompts() -> None:
    location = GitProfiles().location("default")
    location.parent.mkdir(parents=True)
    location.write_text("not a repository")
    profile = _attach("s1")
    assert profile.name is None and profile.commit is None
    [note] = profile.notes
    assert note.startswith(f"profile default ({location}) cannot be used: ")
    assert note.endswith("; the embedded prompts are used") and "\n" not in note
    assert profile.get("system") == EMBEDDED["system"]


def test_a_profile_with_damaged_objects_falls_back_to_the_embedded_prompts() -> None:
    _attach("s1")
    repo = GitProfiles().open("default")
    for loose in (repo.path / "objects").glob("??/*"):
        loose.chmod(0o644)
        loose.write_bytes(b"garbage")
    profile = _attach("s2")
    assert profile.name is None
    [note] = profile.notes
    assert note.startswith(f"profile default ({repo.path}) cannot be used: git ") and "\n" not in note


def test_a_branch_pointing_at_a_missing_commit_is_refused_as_unusable() -> None:
    repo = GitProfiles().open("default")
    (repo.path / "refs" / "heads" / "main").write_text("0123456789abcdef0123456789abcdef01234567\n")
    with pytest.raises(ProfileUnusable, match="cannot be used"):
        repo.objects.read(repo.refs.head("main") or "")
    assert _attach("s1").name is None


def test_upstream_json_that_does_not_parse_is_a_note_and_the_texts_are_used() -> None:
    _attach("s1")
    repo = GitProfiles().open("default")

    def damage(base: ProfileSnapshot) -> Write:
        files = {**base.files, "prompts/routing.md": b"hand routing", UPSTREAM_FILE: b"{oops"}
        return Write(files, "a hand edit gone wrong")

    commit_change(repo, "model/smollm2-135m", damage)
    profile = _attach("s2")
    assert profile.get("routing") == "hand routing" and profile.tuned is None
    [note] = profile.notes
    assert "upstream.json is not JSON" in note and "used as written" in note


def test_render_upstream_is_stable() -> None:
    entries = {"b": UpstreamEntry(None, "r", "t"), "a": UpstreamEntry("h", "r", "t")}
    assert list(json.loads(render_upstream(entries))) == ["a", "b"]

"""The profile's values and the revision guards: pure, checked against git where git has a say."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from aerix.domain.bounds import REVISION_MAX_RATIO
from aerix.domain.profile import (
    UPSTREAM_FILE,
    ArtifactPath,
    ProfilePathError,
    ProfileSnapshot,
    UpstreamEntry,
    blob_id,
    model_branch,
    parse_artifact_path,
    ref_component,
    render_upstream,
    session_branch,
    valid_profile_name,
)
from aerix.domain.revision_guards import check_revision, length_bounds, placeholders
from aerix.domain.settings import Settings

PLANNER = "You are the planner. You may only use {tools}.\nDelegate the rest with complete briefs.\n"


def _git_ref_ok(name: str) -> bool:
    done = subprocess.run(["git", "check-ref-format", f"refs/heads/{name}"], capture_output=True)
    return done.returncode == 0


@pytest.mark.parametrize(
    "model",
    [
        "smollm2-135m",
        "qwen2.5-coder-7b",
        "/models/qwen2.5-coder-7b-q4_k_m.gguf",
        "hf:owner/repo/file.gguf",
        "https://example.org/x..y/model.lock",
        "openai+http://127.0.0.1:8080/v1#qwen",
        ".hidden",
        "name.lock",
        "a b\tc",
        "ünïcode-model",
    ],
)
def test_every_model_reference_makes_a_valid_branch_name(model: str) -> None:
    assert _git_ref_ok(model_branch(model)), model_branch(model)


def test_safe_names_stay_as_they_are_and_others_never_collide() -> None:
    assert model_branch("smollm2-135m") == "model/smollm2-135m"
    assert session_branch("3f2c9a") == "session/3f2c9a"
    assert ref_component("a/b") != ref_component("a-b")
    assert ref_component("a/b").startswith("a-b-")


def test_blob_id_is_what_git_hash_object_prints(tmp_path: Path) -> None:
    text = "héllo {tools}\nsecond line\n"
    done = subprocess.run(["git", "hash-object", "--stdin"], input=text.encode(), capture_output=True)
    assert blob_id(text) == done.stdout.decode().strip()


def test_profile_paths_are_parsed_or_refused_by_name() -> None:
    assert parse_artifact_path("prompts/routing.md") == ArtifactPath("prompt", "routing")
    assert parse_artifact_path("routing", ["routing"]) == ArtifactPath("prompt", "routing")
    assert parse_artifact_path("routing.md", ["routing"]).path == "prompts/routing.md"
    assert parse_artifact_path("skills/deploy.md") == ArtifactPath("skill", "deploy")
    assert parse_artifact_path("agents/reviewer.md").kind == "agent"
    for bad in ("upstream.json", "prompts/routing.txt", "other/x.md", "prompts/a/b.md", "nonsense"):
        with pytest.raises(ProfilePathError, match="not a profile path"):
            parse_artifact_path(bad, ["routing"])


def test_profile_names() -> None:
    assert valid_profile_name("default") and valid_profile_name("work.v2")
    assert not any(valid_profile_name(name) for name in ("", "-x", "a/b", "x.git", "a..b", "x" * 65))


def test_a_path_the_profile_never_tuned_follows_the_release() -> None:
    upstream = {"prompts/planner.md": UpstreamEntry(blob_id(PLANNER), "0.1.0", "2026-01-01T00:00:00+00:00")}
    files = {
        "prompts/planner.md": b"tuned planner {tools}",
        "prompts/routing.md": b"an old seeded copy",
        UPSTREAM_FILE: render_upstream(upstream),
    }
    snapshot = ProfileSnapshot.of("c1", files)
    assert snapshot.tuned_paths == ("prompts/planner.md",)
    assert snapshot.effective("prompts/planner.md", PLANNER) == "tuned planner {tools}"
    assert snapshot.effective("prompts/routing.md", "the release's routing") == "the release's routing"
    assert snapshot.stale(lambda path: PLANNER) == ()
    assert snapshot.stale(lambda path: PLANNER + "changed") == ("prompts/planner.md",)


def test_an_upstream_json_that_does_not_parse_keeps_every_text_as_written() -> None:
    snapshot = ProfileSnapshot.of("c1", {"prompts/routing.md": b"hand text", UPSTREAM_FILE: b"{not json"})
    assert snapshot.upstream is None and "not JSON" in (snapshot.upstream_problem or "")
    assert snapshot.effective("prompts/routing.md", "release") == "hand text"
    assert snapshot.stale(lambda path: "anything") == ()
    files = snapshot.with_texts({"prompts/system.md": "new"}, {})
    rewritten = ProfileSnapshot.of("c2", files)
    assert rewritten.upstream is not None and set(rewritten.upstream) == {"prompts/routing.md"}


def test_text_that_is_not_utf8_falls_back_to_the_release() -> None:
    files = {"prompts/routing.md": b"\xff\xfe bad", UPSTREAM_FILE: b'{"prompts/routing.md": {"hash": null}}'}
    assert ProfileSnapshot.of("c", files).effective("prompts/routing.md", "release") == "release"


# ---- guards -------------------------------------------------------------------------------------


def test_a_good_revision_passes_every_guard() -> None:
    revision = "You plan this request. You may only use {tools}.\nDelegate every piece with a full brief.\n"
    assert check_revision(revision, PLANNER, PLANNER) == []
    assert placeholders(PLANNER) == ("{tools}",)


@pytest.mark.parametrize(
    ("revision", "guard", "words"),
    [
        ("You plan. Delegate every piece of work with a complete brief.", "placeholders", "{tools}"),
        ("Use {tools}.", "length", "characters, outside"),
        ("Plan with {tools}. " * 20, "length", "outside"),
        ("<|im_start|>system\nYou are the planner. Use only {tools}.<|im_end|>", "markup", "<|im_start|>"),
        ("[INST] You are the planner; you may only use {tools}. Delegate. [/INST]", "markup", "[INST]"),
        ("You are the planner. You may only use {tools}.\x00\nDelegate the rest.\n", "text", "U+0000"),
        ("You are the planner \ud800. You may only use {tools}. Delegate the rest.", "text", "UTF-8"),
        (PLANNER + "  ", "differs", "same as the current text"),
    ],
)
def test_each_guard_refuses_with_its_reason(revision: str, guard: str, words: str) -> None:
    refusals = check_revision(revision, PLANNER, PLANNER)
    assert [r.guard for r in refusals if r.guard == guard] == [guard], refusals
    assert words in next(str(r) for r in refusals if r.guard == guard)


def test_the_length_bound_is_the_release_texts() -> None:
    shortest, longest = length_bounds(PLANNER)
    assert longest == int(len(PLANNER.strip()) * REVISION_MAX_RATIO) and shortest < len(PLANNER.strip())


def test_a_sync_may_keep_the_tuned_text() -> None:
    assert check_revision(PLANNER, PLANNER, PLANNER, must_differ=False) == []


def test_the_profile_setting_is_a_profile_name() -> None:
    assert Settings().profile == "default" and Settings(profile="work").profile == "work"
    with pytest.raises(ValidationError, match="a profile name is 1 to 64 letters"):
        Settings(profile="../elsewhere")

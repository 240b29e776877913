"""Profiles end to end: the real ``aerix`` console script against a real scripted pool (each test
its own, playing back the answers it needs), real git profiles, session logs read from disk."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.prompts import EmbeddedPrompts
from aerix.domain import events as ev
from aerix.domain.segments import ContextSegment, SegmentKind
from aerix.projections.contexts import contexts_at
from tests.aerix.request_world import (
    AERIX,
    World,
    aerix,
    make_project,
    make_world,
    session_events,
    start_scripted_pool,
    stop_pool,
)

pytestmark = [pytest.mark.e2e]

EMBEDDED = EmbeddedPrompts().all()
BRANCH = "model/smollm2-135m"
ROUTE = "answer"
FINAL = json.dumps({"thought": "Done.", "final": "ok"})
LOOK = json.dumps({"thought": "Look.", "calls": [{"tool": "glob", "input": {"pattern": "*"}}]})
SYSTEM = EMBEDDED["system"] + "Stop after one look when the budget is small.\n"


def reflection(text: str, reason: str) -> str:
    return json.dumps({"text": text, "reason": reason})


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    world = make_world(tmp_path, {"pool": {"socket": str(tmp_path / "run" / "pool.sock")}})
    yield world
    stop_pool(world, world.socket)


@pytest.fixture
def project(world: World) -> Path:
    return make_project(world.root / "proj", {"README.md": "# Demo\n"})


def profile_git(world: World, *args: str) -> str:
    repo = world.root / "data" / "aerix" / "profiles" / "default.git"
    done = subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def request(
    world: World, project: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = aerix(world, project, "-p", *args, "--output-format", "json")
    assert done.stdout.strip(), done.stderr
    return done, json.loads(done.stdout)


def start_of(world: World, session: str, request_number: int = 1) -> dict[str, Any]:
    starts = [e for e in session_events(world, session) if e["type"] == "session.start"]
    return starts[request_number - 1]


def test_sessions_read_the_model_base_tune_moves_it_and_resume_keeps_the_recorded_commit(
    world: World, project: Path
) -> None:
    pool = start_scripted_pool(
        world,
        world.socket,
        [
            ROUTE, LOOK,  # request 1: runs out of its one turn (budget: evidence for system.md)
            reflection(SYSTEM, "the budget ran out after a look"),  # tune: system.md
            reflection(EMBEDDED["routing"], "fine as it is"),  # tune: routing.md (refused: differs)
            ROUTE, FINAL,  # request 2: a new session
            ROUTE, FINAL,  # request 3: request 1's session resumed
            ROUTE, FINAL,  # request 4: resumed again with --profile-refresh
        ],
    )  # fmt: skip
    try:
        first, one = request(world, project, "look around", "--max-turns", "1")
        assert one["outcome"] == "budget", first.stderr
        start = start_of(world, one["session_id"])
        base = profile_git(world, "rev-parse", BRANCH)
        assert (start["profile"], start["profile_branch"], start["profile_commit"]) == (
            "default", f"session/{one['session_id']}", base,
        )  # fmt: skip
        assert profile_git(world, "rev-parse", f"session/{one['session_id']}") == base
        assert profile_git(world, "rev-parse", "main") == base

        tuned = aerix(world, project, "tune")
        assert tuned.returncode == 0, tuned.stderr
        assert "[1/2] prompts/system.md" in tuned.stderr and "[2/2] prompts/routing.md" in tuned.stderr
        # One progress line per answer, not its text (that is --verbose's).
        answers = re.findall(r"^  answer: (\d+) tokens in [\d.]+ s", tuned.stderr, flags=re.MULTILINE)
        assert len(answers) == 2 and all(int(count) > 0 for count in answers), tuned.stderr
        assert reflection(SYSTEM, "the budget ran out after a look") not in tuned.stderr
        head = profile_git(world, "rev-parse", BRANCH)
        assert head != base
        assert tuned.stdout.splitlines()[:3] == [
            f"committed 1 revision to {BRANCH} of profile default as {head[:12]}",
            "  prompts/system.md: the budget ran out after a look",
            "refused: prompts/routing.md: differs: the same as the current text",
        ]
        assert profile_git(world, "show", f"{BRANCH}:prompts/system.md") + "\n" == SYSTEM
        assert profile_git(world, "rev-parse", "main") == base  # main keeps the release's texts

        _, two = request(world, project, "and now?")
        assert start_of(world, two["session_id"])["profile_commit"] == head
        system = next(e for e in session_events(world, two["session_id"]) if e["type"] == "segment")
        assert system["kind"] == "system" and system["text"].startswith(SYSTEM.strip())

        request(world, project, "again", "--resume", one["session_id"])
        assert start_of(world, one["session_id"], 2)["profile_commit"] == base  # its recorded commit
        request(world, project, "again", "--resume", one["session_id"], "--profile-refresh")
        assert start_of(world, one["session_id"], 3)["profile_commit"] == head
        assert profile_git(world, "rev-parse", f"session/{one['session_id']}") == head

        removed = aerix(world, project, "sessions", "rm", one["session_id"])
        assert removed.returncode == 0, removed.stderr
        assert f"session/{one['session_id']}" not in profile_git(
            world, "for-each-ref", "--format=%(refname:short)"
        )
        assert f"session/{two['session_id']}" in profile_git(
            world, "for-each-ref", "--format=%(refname:short)"
        )
    finally:
        pool.terminate()
        pool.wait(timeout=60)


def test_tune_dry_run_prints_the_diff_and_moves_no_branch(world: World, project: Path) -> None:
    pool = start_scripted_pool(
        world, world.socket, [ROUTE, LOOK, reflection(SYSTEM, "shorter"), reflection("x", "too short")]
    )
    try:
        request(world, project, "look around", "--max-turns", "1")
        before = profile_git(world, "for-each-ref")
        dry = aerix(world, project, "tune", "--dry-run", "--verbose")
        assert dry.returncode == 0, dry.stderr
        assert reflection(SYSTEM, "shorter") in dry.stderr  # --verbose: streamed as written
        assert profile_git(world, "for-each-ref") == before
        assert dry.stdout.startswith("--- a/prompts/system.md\n+++ b/prompts/system.md\n")
        assert "+Stop after one look when the budget is small.\n" in dry.stdout
        assert f"dry run: 1 revision for {BRANCH} of profile default; nothing committed" in dry.stdout
        assert "refused: prompts/routing.md: length: 1 characters, outside" in dry.stdout
    finally:
        pool.terminate()
        pool.wait(timeout=60)


def test_a_profile_that_cannot_be_opened_is_one_line_and_the_request_runs(
    world: World, project: Path
) -> None:
    location = world.root / "data" / "aerix" / "profiles" / "default.git"
    location.parent.mkdir(parents=True)
    location.write_text("not a repository\n")
    pool = start_scripted_pool(world, world.socket, [ROUTE, FINAL])
    try:
        done, result = request(world, project, "hello")
        assert result["outcome"] == "done"
        [line] = [line for line in done.stderr.splitlines() if "cannot be used" in line]
        assert line.startswith(f"aerix: profile default ({location}) cannot be used: ")
        assert line.endswith("; the embedded prompts are used")
        start = start_of(world, result["session_id"])
        assert start.get("profile") is None and start.get("profile_commit") is None
        system = next(e for e in session_events(world, result["session_id"]) if e["type"] == "segment")
        assert system["text"].startswith(EMBEDDED["system"].strip())
    finally:
        pool.terminate()
        pool.wait(timeout=60)


def test_profile_edit_show_log_and_a_sync_with_nothing_stale(world: World, project: Path) -> None:
    script = world.root / "editor.sh"
    script.write_text('#!/bin/sh\nprintf "Answer in one word.\\n" >> "$1"\n')
    script.chmod(0o755)
    env = {**world.env, "EDITOR": str(script)}
    env.pop("VISUAL", None)
    edited = subprocess.run(
        [AERIX, "profile", "edit", "routing"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert edited.returncode == 0, edited.stderr
    head = profile_git(world, "rev-parse", BRANCH)
    assert (
        edited.stdout.strip() == f"committed prompts/routing.md to {BRANCH} of profile default as {head[:12]}"
    )
    assert profile_git(world, "show", f"{BRANCH}:prompts/routing.md").endswith("Answer in one word.")

    shown = aerix(world, project, "profile", "show", "--json")
    view = json.loads(shown.stdout)
    assert [(b["name"], b["tunes"], b["stale"]) for b in view["branches"]] == [
        ("main", [], []),
        (BRANCH, ["prompts/routing.md"], []),
    ]
    log = aerix(world, project, "profile", "log", "--model", "smollm2-135m")
    assert log.stdout.splitlines()[:3] == [
        f"{BRANCH}:",
        log.stdout.splitlines()[1],
        "      - prompts/routing.md: edited by hand",
    ] and log.stdout.splitlines()[1].endswith("aerix profile edit: prompts/routing.md")
    # Nothing is stale, so no pool is bound: none runs in this test, and none is started.
    synced = aerix(world, project, "profile", "sync")
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.strip() == f"profile default, {BRANCH}: nothing tuned is stale; nothing to sync"
    assert not world.pool_start_log.exists()
    bad = aerix(world, project, "profile", "edit", "upstream.json")
    assert bad.returncode == 64 and "not a profile path" in bad.stderr
    missing = aerix(world, project, "--profile", "nope", "profile", "show")
    assert missing.returncode == 1 and "there is no profile nope yet" in missing.stderr


def test_bad_profile_names_are_refused_on_the_command_line(world: World, project: Path) -> None:
    done = aerix(world, project, "-p", "hi", "--profile", "../x")
    assert done.returncode == 64 and "a profile name is 1 to 64 letters" in done.stderr
    assert os.path.exists(world.root / "data") and not (world.root / "data" / "aerix" / "profiles").exists()


def test_stream_json_init_names_the_profile_commit(world: World, project: Path) -> None:
    pool = start_scripted_pool(world, world.socket, [ROUTE, FINAL])
    try:
        done = aerix(world, project, "-p", "hello", "--output-format", "stream-json", "--verbose")
        init = json.loads(done.stdout.splitlines()[0])
        assert init["subtype"] == "init"
        assert init["profile"] == {
            "name": "default",
            "model_branch": BRANCH,
            "branch": f"session/{init['session_id']}",
            "commit": profile_git(world, "rev-parse", BRANCH),
            "tuned": 0,
        }
    finally:
        pool.terminate()
        pool.wait(timeout=60)


def test_profile_refresh_gives_a_resumed_root_the_edited_system_md(world: World, project: Path) -> None:
    """``aerix profile edit system`` then ``--resume ID --profile-refresh``: the root's system
    segment is the new commit's text, recorded as a ``segment`` event that replaces it, so the
    context rebuilt from the log holds it; a resume without the flag keeps the log's."""
    pool = start_scripted_pool(world, world.socket, [ROUTE, FINAL] * 4)
    try:
        _, one = request(world, project, "look around")
        session = one["session_id"]
        before = root_system(world, session)
        assert before.text.startswith(EMBEDDED["system"].strip())

        script = world.root / "editor.sh"
        script.write_text('#!/bin/sh\nprintf "Always name the files you read.\\n" >> "$1"\n')
        script.chmod(0o755)
        env = {**world.env, "EDITOR": str(script)}
        env.pop("VISUAL", None)
        edit = [AERIX, "profile", "edit", "system"]
        edited = subprocess.run(edit, cwd=project, env=env, capture_output=True, text=True, timeout=120)
        assert edited.returncode == 0, edited.stderr
        head = profile_git(world, "rev-parse", BRANCH)
        new_system = profile_git(world, "show", f"{BRANCH}:prompts/system.md")
        assert new_system.endswith("Always name the files you read.")

        request(world, project, "again", "--resume", session)
        assert root_system(world, session) == before  # the recorded commit's text, as the log holds it

        done, _ = request(world, project, "again", "--resume", session, "--profile-refresh")
        assert done.returncode == 0, done.stderr
        assert start_of(world, session, 3)["profile_commit"] == head
        refreshed = root_system(world, session)
        assert (refreshed.id, refreshed.kind) == (before.id, before.kind)
        assert refreshed.text.startswith(new_system) and refreshed.text != before.text
        assert refreshed.tokens is not None and refreshed.tokens > before.tokens  # the pool's count
        # Recorded once, as the third request's: a segment event replacing a1.system.
        systems = [
            e for e in session_events(world, session) if e["type"] == "segment" and e["kind"] == "system"
        ]
        assert [e["text"] == refreshed.text for e in systems] == [False, True]

        request(world, project, "and again", "--resume", session)
        assert root_system(world, session) == refreshed  # the log's now
    finally:
        pool.terminate()
        pool.wait(timeout=60)


def root_system(world: World, session: str) -> ContextSegment:
    """The root's system segment in the context the log rebuilds (what --resume reads)."""
    events = [ev.parse_event(event) for event in session_events(world, session)]
    [system] = [s for s in contexts_at(events).agents["a1"].ordered() if s.kind == SegmentKind.SYSTEM]
    return system

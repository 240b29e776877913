"""``--fork-session``: a resumed session copied to a new one, as Claude Code and its Agent SDK
ask for it, through the real console script, a real git project, a SessionStart hook as a real
subprocess, and a real scripted pool (the real tokenizer, template and constraints, answers
chosen by the test)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from aerix.domain.bounds import EXIT_USAGE
from tests.aerix.request_world import (
    AERIX,
    World,
    aerix,
    make_world,
    scripted_project,
    session_events,
    start_scripted_pool,
    stop_pool,
)
from tests.aerix.test_hooks_e2e import final, of
from tests.aerix.tmux_terminal import Tmux

pytestmark = [pytest.mark.model, pytest.mark.e2e]

#: The SessionStart hook: each payload it is given, one JSON line, in the project.
RECORD_STARTS = 'cat >> "$CLAUDE_PROJECT_DIR/starts.jsonl"; echo >> "$CLAUDE_PROJECT_DIR/starts.jsonl"'


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("fork"), {"context": {"max_new_tokens": 96}})


@pytest.fixture
def project(world: World, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    proj, socket = scripted_project(tmp_path)
    (proj / ".git" / "info" / "exclude").write_text(".aerix/\n.claude/\nstarts.jsonl\n")
    hooks = {"SessionStart": [{"hooks": [{"type": "command", "command": RECORD_STARTS}]}]}
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    try:
        yield proj, socket
    finally:
        stop_pool(world, socket)


def ask(world: World, proj: Path, prompt: str, *flags: str) -> dict[str, Any]:
    done = aerix(world, proj, "-p", prompt, *flags, "--output-format", "json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def log_of(world: World, session_id: str) -> Path:
    [log] = list(world.sessions.glob(f"*/{session_id}.jsonl"))
    return log


def first_turn_prompt_tokens(events: list[dict[str, Any]], request: int) -> int:
    """The prompt tokens the pool counted for the root's first turn of request ``request``."""
    starts = [e["seq"] for e in of(events, "session.start")]
    begin = starts[request - 1]
    end = starts[request] if request < len(starts) else events[-1]["seq"] + 1
    turns = [
        e
        for e in of(events, "message", role="assistant", agent="a1")
        if begin < e["seq"] < end and "usage" in e
    ]
    return int(turns[0]["usage"]["prompt_tokens"])


def test_a_fork_copies_the_session_and_leaves_the_original_as_it_was(
    world: World, project: tuple[Path, Path]
) -> None:
    proj, socket = project
    start_scripted_pool(
        world,
        socket,
        [
            "answer",
            final("First."),
            "answer",
            final("Forked."),
            "answer",
            final("Again."),
            "answer",
            final("B."),
        ],
    )
    first = ask(world, proj, "What is the first thing?")
    original = first["session_id"]
    kept = log_of(world, original).read_bytes()

    forked = ask(world, proj, "And the second?", "--resume", original, "--fork-session")
    fork = forked["session_id"]
    assert fork != original and str(uuid.UUID(fork)) == fork
    assert forked["result"] == "Forked."
    assert log_of(world, original).read_bytes() == kept  # only read
    before = [json.loads(line) for line in kept.decode().splitlines()]
    copied = session_events(world, fork)
    # Every event of the original, as it was, but that its session.start names the copy.
    assert copied[: len(before)] == [
        {**e, "session": fork} if e["type"] == "session.start" else e for e in before
    ]
    start = copied[len(before)]
    assert start["type"] == "session.start" and start["session"] == fork
    assert (start["request"], start["resumed"], start["resumed_from"]) == (2, True, original)
    # The copy reads the commit the original read, on a profile branch of its own.
    assert start["profile_commit"] == before[0]["profile_commit"] is not None
    assert (before[0]["profile_branch"], start["profile_branch"]) == (
        f"session/{original}",
        f"session/{fork}",
    )
    # The root's context was rebuilt from the copy: the first request's turns come before the prompt.
    assert first_turn_prompt_tokens(copied, 2) > first_turn_prompt_tokens(copied, 1) + 10

    again = ask(world, proj, "A third?", "--resume", fork)
    assert again["session_id"] == fork and again["result"] == "Again."
    assert log_of(world, original).read_bytes() == kept
    starts = of(session_events(world, fork), "session.start")
    assert [(s["request"], s.get("resumed_from")) for s in starts] == [(1, None), (2, original), (3, None)]

    shown = aerix(world, proj, "sessions", "show", fork)
    assert shown.returncode == 0 and "What is the first thing?" in shown.stdout and "A third?" in shown.stdout
    rebuilt = aerix(world, proj, "sessions", "rebuild", fork)
    assert rebuilt.returncode == 0, rebuilt.stderr
    listed = aerix(world, proj, "sessions", "list")
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert rows[original[:8]].endswith("  What is the first thing?")
    assert f"  fork of {original[:8]}: What is" in rows[fork[:8]]  # the title cut to the room left

    # --session-id names the copy; the SessionStart hooks saw startup, fork, resume, fork.
    named = str(uuid.uuid4())
    assert (
        ask(world, proj, "B?", "--continue", "--fork-session", "--session-id", named)["session_id"] == named
    )
    assert of(session_events(world, named), "session.start")[-1]["resumed_from"] == fork
    sources = [
        json.loads(line)["source"] for line in (proj / "starts.jsonl").read_text().splitlines() if line
    ]
    assert sources == ["startup", "fork", "resume", "fork"]


def test_fork_session_without_a_session_to_copy_is_one_line(world: World, project: tuple[Path, Path]) -> None:
    proj, _ = project
    logs = sorted(world.sessions.glob("*/*.jsonl"))
    done = aerix(world, proj, "-p", "hi", "--fork-session")
    assert done.returncode == EXIT_USAGE
    assert done.stderr.count("\n") == 1 and "--fork-session" in done.stderr and "Traceback" not in done.stderr
    assert sorted(world.sessions.glob("*/*.jsonl")) == logs  # nothing ran


def test_the_sdks_fork_session_gives_a_new_session(world: World, project: tuple[Path, Path]) -> None:
    """``ClaudeAgentOptions(resume=…, fork_session=True)``, which passes ``--resume ID
    --fork-session``: the ResultMessage names the copy, and the original keeps its bytes."""
    proj, socket = project
    start_scripted_pool(world, socket, ["answer", final("One."), "answer", final("Two.")])
    original = ask(world, proj, "One?")["session_id"]
    kept = log_of(world, original).read_bytes()
    options = ClaudeAgentOptions(cli_path=AERIX, cwd=proj, env=world.env, resume=original, fork_session=True)

    async def run() -> list[Any]:
        return [message async for message in query(prompt="Two?", options=options)]

    result = anyio.run(run)[-1]
    assert isinstance(result, ResultMessage) and result.result == "Two."
    assert result.session_id != original
    assert of(session_events(world, result.session_id), "session.start")[-1]["resumed_from"] == original
    assert log_of(world, original).read_bytes() == kept


def test_the_screen_forks_on_its_first_prompt(world: World, project: tuple[Path, Path]) -> None:
    """``aerix --resume ID --fork-session "prompt"`` under tmux: the startup block says what it
    forks, the first prompt makes the copy, and the original keeps its bytes."""
    assert Tmux.available(), "tmux is needed for the screen's tests (scripts/setup installs it)"
    proj, socket = project
    start_scripted_pool(world, socket, ["answer", final("One."), "answer", final("Forked fine.")])
    original = ask(world, proj, "One?")["session_id"]
    kept = log_of(world, original).read_bytes()
    terminal = Tmux(server=f"aerix-fork-{os.getpid()}", stderr=world.root / "fork-screen.stderr")
    env = {k: v for k, v in world.env.items() if k.startswith(("XDG_", "CLAUDE_", "PATH", "HOME"))}
    env["TERM"] = "tmux-256color"
    terminal.start([AERIX, "--resume", original, "--fork-session", "Fork it"], proj, env, 100, 50)
    try:
        shown = terminal.wait_for("Forked fine.")
        assert f"forked from {original}" in shown
        terminal.keys("C-d")
        shown = terminal.wait_for("SCREEN-EXITED 0")
    finally:
        terminal.stop()
    [fork] = [
        log.stem
        for log in world.sessions.glob("*/*.jsonl")
        if log.stem != original
        and log.suffixes == [".jsonl"]  # a log, not a transcript (<id>.claude.jsonl)
        and of(session_events(world, log.stem), "session.start")[-1].get("resumed_from") == original
    ]
    assert f"aerix --resume {fork}" in shown  # the resume hint names the copy
    assert log_of(world, original).read_bytes() == kept
    assert [e["prompt"] for e in of(session_events(world, fork), "session.start")] == ["One?", "Fork it"]

"""Hostile input to the ``aerix`` CLI, run as real processes on real files: an empty ``--resume``
id, closed pipes on every command and during a request (on a real scripted pool).

Each test is a reproduction from issues 13 and 14 that once ended in a traceback, a wrong
message or a new session where none was asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.project_key import project_key
from aerix.adapters.session_store import SessionFiles
from aerix.app.sessions.writer import start_session
from aerix.domain import events as ev
from aerix.domain.bounds import EXIT_BROKEN_PIPE, EXIT_USAGE
from tests.aerix.request_world import (
    AERIX,
    RUN_TIMEOUT_SECS,
    World,
    make_project,
    make_world,
    session_events,
    start_scripted_pool,
    stop_pool,
)
from tests.aerix.session_streams import T0

pytestmark = pytest.mark.e2e

FINAL_TURN = json.dumps({"thought": "Done.", "final": "Said hello."})


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    world = make_world(tmp_path / "w", {"pool": {"socket": str(tmp_path / "w" / "run" / "pool.sock")}})
    try:
        yield world
    finally:
        stop_pool(world, world.socket)


@pytest.fixture
def project(world: World) -> Path:
    return make_project(world.root / "proj", {"README.md": "# Demo\n"})


def run(
    world: World, cwd: Path, *args: str | bytes, stdin: bytes | None = None, stdout: int = subprocess.PIPE
) -> subprocess.CompletedProcess[bytes]:
    """The real console script; bytes in and out, so nothing is decoded on the way."""
    return subprocess.run(
        [AERIX, *args],
        cwd=cwd,
        env=world.env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=RUN_TIMEOUT_SECS,
    )


def closed_pipe() -> int:
    """The write end of a pipe whose reader is already gone: every write to it fails (EPIPE)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


def session_logs(world: World) -> list[Path]:
    return sorted(world.sessions.glob("*/*.jsonl")) if world.sessions.exists() else []


# ---- --resume "" ---------------------------------------------------------------------------------


def test_an_empty_resume_id_is_refused_and_starts_nothing(world: World, project: Path) -> None:
    for args in (["--resume", "", "-p", "hi"], ["--resume=", "-p", "hi"], ["--resume", "  ", "-p", "hi"]):
        refused = run(world, project, *args)
        assert refused.returncode == EXIT_USAGE, args
        assert refused.stderr.decode() == (
            "aerix: --resume needs a session id; `aerix sessions list` shows them\n"
        )
    assert session_logs(world) == [] and not world.socket.exists()  # no session, no pool


# ---- closed pipes --------------------------------------------------------------------------------


@pytest.fixture
def big_session(world: World, project: Path) -> str:
    """A finished session whose replay and JSON lines are far more than a pipe holds."""
    files = SessionFiles(world.sessions)
    writer = start_session(
        files,
        lambda: T0,
        sync="release",
        session="b16-5e551on",
        cwd=str(project),
        project=project_key(project),
        model="smollm2-135m",
        prompt="A long session",
        aerix_version="0.1.0",
    )
    writer.record(ev.AgentSpawn, agent="a1", kind="root")
    for turn in range(1, 1501):
        writer.record(ev.Message, agent="a1", role="assistant", turn=turn, text="{}", final="x" * 1000)
    writer.record(ev.SessionEnd, outcome="done")
    writer.close()
    files.close()
    return "b16-5e551on"


@pytest.mark.parametrize(
    ("command", "head"),
    [("sessions show b16-5e551on", 1), ("sessions show b16-5e551on --json", 2), ("sessions list", 1)],
)
def test_a_reader_that_stops_early_ends_a_session_command_quietly(
    world: World, project: Path, big_session: str, command: str, head: int
) -> None:
    """``aerix … | head`` as a shell runs it: head's lines, nothing on stderr, and aerix's own
    status (PIPESTATUS) 141 as git's, or 0 when its output fitted in the pipe before head left."""
    script = f'{AERIX} {command} | head -{head}; echo "status ${{PIPESTATUS[0]}}" >&2'
    done = subprocess.run(
        ["bash", "-c", script], cwd=project, env=world.env, capture_output=True, timeout=RUN_TIMEOUT_SECS
    )
    stderr = done.stderr.decode()
    assert len(done.stdout.decode().splitlines()) == head
    status = int(stderr.removeprefix("status "))
    assert stderr == f"status {status}\n" and status in (0, EXIT_BROKEN_PIPE)
    if "show" in command:  # megabytes of output: the pipe broke for certain
        assert status == EXIT_BROKEN_PIPE


@pytest.mark.parametrize(
    "command",
    [
        ["sessions", "list"],
        ["sessions", "list", "--json"],
        ["sessions", "show", "b16-5e551on"],
        ["sessions", "show", "b16-5e551on", "--json"],
        ["sessions", "rebuild", "--all"],
        ["sessions", "schema"],
    ],
)
def test_a_closed_stdout_is_quiet_on_every_session_command(
    world: World, project: Path, big_session: str, command: list[str]
) -> None:
    stdout = closed_pipe()
    try:
        done = run(world, project, *command, stdout=stdout)
    finally:
        os.close(stdout)
    assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, b"")


def _result_events(world: World, session: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    events = session_events(world, session)
    [end] = [event for event in events if event["type"] == "session.end"]
    return end, events


def test_a_closed_stdout_after_a_text_request_is_quiet(world: World, project: Path) -> None:
    """Text output is printed at the end: the request ran whole (its log says done), and only
    its answer found nobody to read it."""
    start_scripted_pool(world, world.socket, ["answer", FINAL_TURN])
    stdout = closed_pipe()
    try:
        done = run(world, project, "-p", "say hello", stdout=stdout)
    finally:
        os.close(stdout)
    [banner] = done.stderr.decode().splitlines()
    assert done.returncode == EXIT_BROKEN_PIPE and banner.startswith("aerix 0.1.0 · ")
    [log] = session_logs(world)
    end, _ = _result_events(world, log.stem)
    assert (end["outcome"], end["exit_code"]) == ("done", 0)


def test_a_reader_gone_mid_request_stops_it_and_the_log_says_why(world: World, project: Path) -> None:
    """stream-json read by a process that leaves once the turn calling bash is shown: the next
    line aerix prints meets the closed pipe (the tool waits for the reader to be gone, so the
    request cannot finish first). The request stops as ``cancelled`` with exit 141 and the
    reason, every event before is kept, and stderr holds the banner only (no traceback, no
    "cannot use")."""
    flag = world.root / "reader-gone"
    wait = f"while [ ! -e {flag} ]; do sleep 0.05; done; echo waited"
    bash_turn = json.dumps({"thought": "Wait.", "calls": [{"tool": "bash", "input": {"command": wait}}]})
    start_scripted_pool(world, world.socket, ["investigate", bash_turn, FINAL_TURN])
    process = subprocess.Popen(
        [AERIX, "-p", "wait for it", "--output-format", "stream-json"],
        cwd=project,
        env=world.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    session = None
    for line in process.stdout:
        shown = json.loads(line)
        session = session or shown.get("session_id")
        if shown["type"] == "assistant" and shown["message"]["content"][-1].get("name") == "bash":
            break  # the turn calling bash is shown: the tool is running now
    process.stdout.close()  # the reader goes away…
    flag.touch()  # …and only then can the tool finish, if it has started
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=RUN_TIMEOUT_SECS) == EXIT_BROKEN_PIPE
    [banner] = stderr.splitlines()
    assert banner.startswith("aerix 0.1.0 · ") and session is not None
    end, events = _result_events(world, session)
    assert (end["outcome"], end["exit_code"]) == ("cancelled", EXIT_BROKEN_PIPE)
    assert end["reason"] == "the output was closed (a broken pipe); the request stopped"
    [turn] = [event for event in events if event["type"] == "message" and event["role"] == "assistant"]
    assert [call["tool"] for call in turn["calls"]] == ["bash"]
    [root_end] = [event for event in events if event["type"] == "agent.end"]
    assert root_end["reason"] == end["reason"]

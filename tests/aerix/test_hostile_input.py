"""Hostile input to the ``aerix`` CLI, run as real processes on real files: prompts and folders
that are not UTF-8, a first event that cannot be written, an empty ``--resume`` id, logs with a
gap or no events, closed pipes on every command and during a request (requests run on a real
``caldrix pool --engine scripted``).

Each test is a reproduction from issues 13 and 14 that once ended in a traceback, a wrong
message or a new session where none was asked for.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.project.project_key import project_key
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.writer import start_session
from aerix.domain import events as ev
from aerix.domain.bounds import EXIT_BROKEN_PIPE, EXIT_USAGE
from aerix.domain.settings import SyncPolicy
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
NOT_UTF8 = b"Say \xff\xfe hello"
NOT_UTF8_NOTE = (
    "aerix: the prompt is not valid UTF-8: 2 byte(s) were read as U+FFFD (\ufffd); the session log "
    "keeps the bytes as given (session.start prompt_bytes, base64)"
)


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
    """The session logs (not the Claude Code transcripts written beside them)."""
    if not world.sessions.exists():
        return []
    found = world.sessions.glob("*/*.jsonl")
    return sorted(path for path in found if not path.name.endswith(".claude.jsonl"))


# ---- text that is not UTF-8 ---------------------------------------------------------------------


@pytest.mark.parametrize("given", ["stdin", "argv"])
def test_a_prompt_that_is_not_utf8_is_kept_said_once_and_recorded(
    world: World, project: Path, given: str
) -> None:
    """``printf 'Say \\xff\\xfe hello' | aerix -p`` (or the bytes in argv) once ended in a
    PydanticSerializationError traceback and left an empty log that rebuild called ok."""
    start_scripted_pool(world, world.socket, ["answer", FINAL_TURN])
    if given == "stdin":
        done = run(world, project, "-p", stdin=NOT_UTF8)
    else:
        done = run(world, project, b"-p", NOT_UTF8)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert done.stdout.decode() == "Said hello.\n\nno files changed\n"
    assert stderr.splitlines()[0] == NOT_UTF8_NOTE and stderr.count("not valid UTF-8") == 1
    [log] = session_logs(world)
    [start] = [event for event in session_events(world, log.stem) if event["type"] == "session.start"]
    assert start["prompt"] == "Say \ufffd\ufffd hello"
    assert base64.b64decode(start["prompt_bytes"]) == NOT_UTF8  # every byte the user gave
    rebuilt = run(world, project, "sessions", "rebuild", log.stem)
    assert rebuilt.returncode == 0 and b" events, ok" in rebuilt.stdout
    assert b": 0 events" not in rebuilt.stdout


def test_a_valid_prompt_records_no_bytes(world: World, project: Path) -> None:
    start_scripted_pool(world, world.socket, ["answer", FINAL_TURN])
    done = run(world, project, "-p", stdin="Say h\u00e9llo".encode())
    assert done.returncode == 0 and b"UTF-8" not in done.stderr
    [log] = session_logs(world)
    [start] = [event for event in session_events(world, log.stem) if event["type"] == "session.start"]
    assert start["prompt"] == "Say h\u00e9llo" and "prompt_bytes" not in start


def test_a_folder_whose_name_is_not_utf8_is_recorded_with_a_note(world: World, project: Path) -> None:
    """Any other text that cannot be UTF-8 (here the working directory, in session.start and the
    tool results that name it) is recorded with U+FFFD and one note, not a traceback."""
    folder = make_project(Path(os.fsdecode(bytes(world.root) + b"/bad\xffname")), {"a.txt": "one\n"})
    start_scripted_pool(world, world.socket, ["answer", FINAL_TURN])
    done = run(world, project, "-p", "say hello", "--cwd", os.fsencode(folder))
    stderr = done.stderr.decode()
    assert done.returncode == 0 and "Traceback" not in stderr, stderr
    assert "held text that is not valid UTF-8 (the first: seq 1, session.start)" in stderr
    [log] = session_logs(world)
    [start] = [event for event in session_events(world, log.stem) if event["type"] == "session.start"]
    assert start["cwd"] == str(world.root) + "/bad\ufffdname"


def _file_size_limit(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # Python ignores SIGXFSZ: EFBIG


def test_a_session_that_cannot_write_its_first_event_leaves_no_log(world: World, project: Path) -> None:
    """A file size limit below the size of session.start (a full disk, as the kernel shows it):
    one line naming the log, and neither an empty nor a torn log left behind."""
    start_scripted_pool(world, world.socket, ["answer", FINAL_TURN])
    done = subprocess.run(
        [AERIX, "-p", "say hello"],
        cwd=project,
        env=world.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=RUN_TIMEOUT_SECS,
        preexec_fn=lambda: _file_size_limit(200),
    )
    stderr = done.stderr.decode()
    *before, last = stderr.splitlines()
    assert done.returncode == 1 and "Traceback" not in stderr, stderr
    assert last.startswith(f"aerix: cannot use {world.sessions}/") and "(File too large)" in last
    # The profile's repository cannot be written under the same limit either: that is its own one
    # line (the embedded prompts are used), said before; the session's failure is the only other.
    assert all(line.startswith("aerix: profile default") for line in before), stderr
    assert [path.name for path in world.sessions.rglob("*.jsonl*")] == []


def test_an_empty_log_is_explained_by_list_show_and_rebuild(world: World, project: Path) -> None:
    """An empty ``<id>.jsonl`` (a crash between its creation and its first line) was skipped by
    list in silence and called "0 events, ok" by rebuild."""
    folder = world.sessions / project_key(project)
    folder.mkdir(parents=True)
    (folder / "e4417-5e551on.jsonl").write_bytes(b"")
    expected = (
        f"{folder}/e4417-5e551on.jsonl: empty: the session never recorded its session.start "
        "(stopped as it began); `aerix sessions rm e4417-5e551on` removes it"
    )
    listed = run(world, project, "sessions", "list")
    assert (listed.returncode, listed.stderr.decode()) == (1, f"aerix: {expected}\n")
    shown = run(world, project, "sessions", "show", "e4417")
    assert (shown.returncode, shown.stderr.decode()) == (1, f"aerix: {expected}\n")
    rebuilt = run(world, project, "sessions", "rebuild", "--all")
    assert rebuilt.returncode == 1
    assert rebuilt.stdout.decode().splitlines()[:2] == [
        f"{project_key(project)}/e4417-5e551on: 0 events, 1 problem(s)",
        f"  {expected}",
    ]
    assert run(world, project, "sessions", "rm", "e4417").returncode == 0
    assert run(world, project, "sessions", "list").stderr == b""


# ---- --resume "" ---------------------------------------------------------------------------------


def test_an_empty_resume_id_is_refused_and_starts_nothing(world: World, project: Path) -> None:
    for args in (["--resume", "", "-p", "hi"], ["--resume=", "-p", "hi"], ["--resume", "  ", "-p", "hi"]):
        refused = run(world, project, *args)
        assert refused.returncode == EXIT_USAGE, args
        assert refused.stderr.decode() == (
            "aerix: --resume needs a session id; `aerix sessions list` shows them\n"
        )
    assert session_logs(world) == [] and not world.socket.exists()  # no session, no pool


def test_a_closed_stdin_is_an_empty_prompt(world: World, project: Path) -> None:
    """``aerix -p <&-``: no stdin at all (Python's sys.stdin is None) once was a traceback."""
    done = subprocess.run(
        [AERIX, "-p"],
        cwd=project,
        env=world.env,
        capture_output=True,
        timeout=RUN_TIMEOUT_SECS,
        preexec_fn=lambda: os.close(0),
    )
    assert done.returncode == EXIT_USAGE
    assert done.stderr.decode() == "aerix: the prompt is empty; give it after -p or on stdin\n"


# ---- a gap in a log ------------------------------------------------------------------------------


def _finished_session(
    world: World, project: Path, session: str, turns: int, sync: SyncPolicy = "commit"
) -> Path:
    files = SessionFiles(world.sessions)
    writer = start_session(
        files,
        lambda: T0,
        sync=sync,
        session=session,
        cwd=str(project),
        project=project_key(project),
        model="smollm2-135m",
        prompt=f"Session {session}",
        aerix_version="0.1.0",
    )
    writer.record(ev.AgentSpawn, agent="a1", kind="root")
    for turn in range(1, turns + 1):
        writer.record(ev.Message, agent="a1", role="assistant", turn=turn, text="{}", final="x" * 1000)
    writer.record(ev.SessionEnd, outcome="done")
    writer.close()
    files.log.close()
    return writer.log_path


def test_a_line_lost_in_the_middle_is_said_by_list_and_show_too(world: World, project: Path) -> None:
    """The index was written when the log was whole; a line goes missing afterwards. list (whose
    entry is stale now) and show say so as rebuild does, naming the file and line, and list
    still lists the session and its neighbour."""
    log = _finished_session(world, project, "9a9-5e551on", turns=3)
    _finished_session(world, project, "0k-5e551on", turns=1)
    assert run(world, project, "sessions", "list").stderr == b""  # both indexed, whole
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([*lines[:2], *lines[3:]]))  # seq 3 is gone
    expected = f"{log}:3: seq 4 where 3 was expected: 1 event(s) missing (the log was edited or damaged)"
    for _ in range(2):  # said every time, not only the first time the change is seen
        listed = run(world, project, "sessions", "list", "--json")
        assert (listed.returncode, listed.stderr.decode()) == (1, f"aerix: {expected}\n")
        entries = {entry["id"]: entry for entry in json.loads(listed.stdout)}
        assert set(entries) == {"9a9-5e551on", "0k-5e551on"} and entries["9a9-5e551on"]["events"] == 5
    shown = run(world, project, "sessions", "show", "9a9")
    assert (shown.returncode, shown.stderr.decode()) == (1, f"aerix: {expected}\n")
    assert shown.stdout.decode().startswith("session 9a9-5e551on · 5 events")
    shown_json = run(world, project, "sessions", "show", "9a9", "--json")
    assert shown_json.returncode == 1 and shown_json.stderr.decode() == f"aerix: {expected}\n"
    assert [json.loads(line)["seq"] for line in shown_json.stdout.splitlines()] == [1, 2, 4, 5, 6]
    rebuilt = run(world, project, "sessions", "rebuild", "9a9")
    assert rebuilt.returncode == 1 and f"  {expected}\n".encode() in rebuilt.stdout


def test_a_log_that_grew_or_changed_is_folded_again(world: World, project: Path) -> None:
    """The index entry notes the size it was folded from: a log garbled in the middle after it
    was indexed is now left out by list with its line (once only the index was read)."""
    log = _finished_session(world, project, "6a6-5e551on", turns=2)
    assert json.loads(run(world, project, "sessions", "list", "--json").stdout)[0]["events"] == 5
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([lines[0], b"garbage {not json\n", *lines[1:]]))
    listed = run(world, project, "sessions", "list", "--json")
    assert listed.returncode == 1 and json.loads(listed.stdout) == []
    assert listed.stderr.decode().startswith(f"aerix: {project_key(project)}/6a6-5e551on left out: {log}:2: ")


# ---- closed pipes --------------------------------------------------------------------------------


@pytest.fixture
def big_session(world: World, project: Path) -> str:
    """A finished session whose replay and JSON lines are far more than a pipe holds."""
    _finished_session(world, project, "b16-5e551on", turns=1500, sync="release")
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
    banner, outcome = done.stderr.decode().splitlines()  # stderr still has its reader
    assert done.returncode == EXIT_BROKEN_PIPE and banner.startswith("aerix 0.1.0 · ")
    assert outcome.startswith("aerix: done · route answer · ")
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
        if shown["type"] == "assistant" and shown["message"]["content"][-1].get("name") == "Bash":
            break  # the turn calling Bash (Claude's name) is shown: the tool is running now
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

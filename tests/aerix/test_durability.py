"""The session log survives a power loss: it is synced at every commit point (each turn, each
tool result, ``agent.end``, ``session.end``), and a crash between a write and its sync still
leaves a log that reads and resumes.

The syncs are counted as they happen: a real ``aerix -p`` request runs in this process through
the real store and a real scripted pool, with ``os.fsync`` wrapped to note, for each sync of the
session log, how many complete lines the log held at that moment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.queries import load_for_resume
from aerix.app.sessions.writer import reopen_session, start_session
from aerix.cli.main import main
from aerix.domain import events as ev
from tests.aerix.request_world import World, make_project, make_world, start_scripted_pool, stop_pool

pytestmark = pytest.mark.e2e

WRITE_TURN = json.dumps(
    {"thought": "Write it.", "calls": [{"tool": "write", "input": {"path": "a.txt", "content": "hi\n"}}]}
)
FINAL_TURN = json.dumps({"thought": "Done.", "final": "Wrote a.txt."})
COMMIT_TYPES = {"message", "agent.end", "session.end"}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    world = make_world(tmp_path / "w", {"pool": {"socket": str(tmp_path / "w" / "run" / "pool.sock")}})
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "CLAUDE_CONFIG_DIR"):
        monkeypatch.setenv(var, world.env[var])
    try:
        yield world
    finally:
        stop_pool(world, world.socket)


def _log_syncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every ``os.fsync`` from now on, as (file name, complete lines in it at that moment)."""
    seen: list[tuple[str, int]] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        lines = path.read_bytes().count(b"\n") if path.is_file() else -1
        seen.append((path.name, lines))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    return seen


def _request(world: World, settings: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
    """One ``aerix -p`` request in this process on a scripted pool; its log's events and name."""
    project = make_project(world.root / "proj", {"README.md": "demo\n"})
    if settings is not None:
        (project / ".aerix").mkdir()
        (project / ".aerix" / "settings.json").write_text(json.dumps(settings))
    start_scripted_pool(world, world.socket, ["investigate", WRITE_TURN, FINAL_TURN])
    assert main(["-p", "write a.txt", "--cwd", str(project), "--output-format", "json"]) == 0
    [log] = [path for path in world.sessions.glob("*/*.jsonl") if not path.name.endswith(".claude.jsonl")]
    return [json.loads(line) for line in log.read_text().splitlines()], log.name


def test_every_commit_point_of_a_real_request_is_synced(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    syncs = _log_syncs(monkeypatch)
    events, log_name = _request(world)
    at = {lines for name, lines in syncs if name == log_name}
    commits = [event for event in events if event["type"] in COMMIT_TYPES]
    assert {"message", "agent.end", "session.end"} <= {event["type"] for event in commits}
    assert [event["seq"] for event in commits if event["seq"] not in at] == []  # each one, right after it
    # Events that are not commit points ride on the next commit's sync instead of one of their own.
    assert not any(event["seq"] in at for event in events if event["type"] == "segment")
    # The files rebuilt from the log are replaced whole and synced: the index at the end.
    assert any(name.startswith(".index.json.") for name, _ in syncs)


def test_the_relaxed_policy_syncs_only_when_the_request_ends(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    syncs = _log_syncs(monkeypatch)
    events, log_name = _request(world, {"session": {"sync": "release"}})
    assert [lines for name, lines in syncs if name == log_name] == [len(events)]


def test_a_crash_between_a_write_and_its_sync_leaves_a_log_that_reads_and_resumes(tmp_path: Path) -> None:
    """A child writes a session through the real store and is killed (SIGKILL) inside the sync
    of a commit point: the line was written, not synced. The log reads whole and resumes."""
    root = tmp_path / "sessions"
    script = textwrap.dedent(f"""
        import os, signal
        from datetime import UTC, datetime
        from pathlib import Path
        from aerix.adapters.sessions.session_store import SessionFiles
        from aerix.app.sessions.writer import start_session
        from aerix.domain import events as ev
        files = SessionFiles(Path({str(root)!r}))
        writer = start_session(files, lambda: datetime.now(UTC), session="crash", project="p", cwd="/w",
                               model="m", prompt="hello", aerix_version="0")
        writer.record(ev.Segment, agent="a1", id="a1.p1", role="user", kind="prompt", text="hello")
        def killed_inside_the_sync(fd):
            os.kill(os.getpid(), signal.SIGKILL)
        os.fsync = killed_inside_the_sync
        writer.record(ev.Message, agent="a1", role="assistant", turn=1, text="{{}}", final="hi")
    """)
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert child.returncode == -9, child.stderr
    files = SessionFiles(root)
    records = files.log.read(files.catalog.find("crash"))
    assert [record.type for record in records] == ["session.start", "segment", "message"]
    state = load_for_resume(files, "crash")
    assert state.last_seq == 3 and [s.id for s in state.root.ordered()] == ["a1.p1"]
    writer = reopen_session(files, lambda: records[-1].time, "crash")
    writer.record(ev.SessionEnd, outcome="done")
    writer.close()
    assert [record.type for record in files.log.read(files.catalog.find("crash"))][-1] == "session.end"


def test_a_writer_that_syncs_only_at_release_still_syncs_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs = _log_syncs(monkeypatch)
    files = SessionFiles(tmp_path)
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731
    writer = start_session(
        files,
        clock,
        sync="release",
        session="s",
        project="p",
        cwd="/w",
        model="m",
        prompt="x",
        aerix_version="0",
    )
    writer.record(ev.Message, agent="a1", role="assistant", turn=1, text="{}", final="x")
    assert [lines for name, lines in syncs if name == "s.jsonl"] == []
    writer.close()
    assert [lines for name, lines in syncs if name == "s.jsonl"] == [2]

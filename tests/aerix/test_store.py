"""The JSONL store on disk: lines, locks, crashes, spool, project keys, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aerix.adapters.project.project_key import normalise_remote, project_key
from aerix.adapters.sessions.jsonl_store import SessionLogFolder
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.queries import latest_session, load_for_resume, remove_session
from aerix.app.sessions.writer import SessionWriter, fork_session, reopen_session, start_session
from aerix.domain import events as ev
from aerix.errors import SessionBusy, SessionLogCorrupt, SessionNotResumable, SessionSchemaTooNew, UsageError
from tests.aerix.session_streams import T0, event_streams


class Ticker:
    """A clock for writers: each reading is a second after the last."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self):  # type: ignore[no-untyped-def]
        self.now += timedelta(seconds=1)
        return self.now


def _start(files: SessionFiles, session_id: str = "0b1c", **extra: object) -> SessionWriter:
    fields = {
        "session": session_id,
        "cwd": "/w",
        "project": "proj",
        "model": "m",
        "prompt": "hello there",
        "aerix_version": "0.1.0",
        **extra,
    }
    return start_session(files, Ticker(), **fields)


def test_each_event_is_one_plain_json_line(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    writer = _start(files)
    writer.record(ev.AgentSpawn, agent="a1", kind="root")
    writer.record(ev.Segment, agent="a1", id="s1", role="user", kind="prompt", text="hello there", tokens=3)
    writer.close()
    lines = (tmp_path / "proj" / "0b1c.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert [first["type"], first["seq"], first["v"], first["session"]] == [
        "session.start",
        1,
        ev.SCHEMA_VERSION,
        "0b1c",
    ]
    assert lines[2].startswith('{"type":"segment","seq":3,"time":"2026-01-02T03:04:')
    assert [type(r).__name__ for r in files.log.read(files.catalog.find("0b1c"))] == [
        "SessionStart",
        "AgentSpawn",
        "Segment",
    ]


def test_a_second_writer_gets_a_clear_error_and_nothing_interleaves(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    writer = _start(files)
    other = SessionFiles(tmp_path)
    with pytest.raises(
        SessionBusy, match=r"session 0b1c is being written by another aerix process \(pid \d+"
    ):
        reopen_session(other, Ticker(), "0b1c")
    writer.record(ev.Plan, agent="a1", text="p")
    writer.close()
    reopened = reopen_session(other, Ticker(), "0b1c")
    reopened.record(ev.Plan, agent="a1", text="q")
    reopened.close()
    assert [r.seq for r in files.log.read(files.catalog.find("0b1c"))] == [1, 2, 3]


def test_a_writer_in_another_process_holds_the_session(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    _start(files).close()
    child = _child_writer(tmp_path, "0b1c", events=1, then_sleep=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "2"
        with pytest.raises(SessionBusy):
            reopen_session(SessionFiles(tmp_path), Ticker(), "0b1c")
        with pytest.raises(SessionBusy):
            remove_session(SessionFiles(tmp_path), "0b1c")
    finally:
        child.kill()
        child.wait()


def test_a_process_killed_while_writing_loses_no_written_event(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    _start(files).close()
    child = _child_writer(tmp_path, "0b1c", events=100_000, then_sleep=False)
    assert child.stdout is not None
    acknowledged = [int(child.stdout.readline()) for _ in range(200)]
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    seqs = [r.seq for r in SessionFiles(tmp_path).log.read(files.catalog.find("0b1c"))]
    assert seqs == list(range(1, len(seqs) + 1))
    assert set(acknowledged) <= set(seqs)


def test_a_torn_last_line_is_set_aside_and_reported(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    writer = _start(files)
    writer.record(ev.Plan, agent="a1", text="keep me")
    writer.close()
    log = tmp_path / "proj" / "0b1c.jsonl"
    with log.open("ab") as out:
        out.write(b'{"type":"plan","seq":3,"time":"2026-01-02T03:0')  # a crash mid-write
    reader = SessionFiles(tmp_path)
    assert [r.seq for r in reader.log.read(reader.catalog.find("0b1c"))] == [1, 2]
    (notice,) = reader.log.notices()
    assert f"{log}:3: an unfinished last line (46 bytes" in notice and "0b1c.jsonl.torn" in notice
    assert (tmp_path / "proj" / "0b1c.jsonl.torn").read_bytes().startswith(b'{"type":"plan","seq":3')
    reopened = reopen_session(reader, Ticker(), "0b1c")
    reopened.record(ev.Plan, agent="a1", text="after the crash")
    reopened.close()
    assert [r.seq for r in reader.log.read(reader.catalog.find("0b1c"))] == [1, 2, 3]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=event_streams(max_size=15), cut=st.integers(1, 10_000), data=st.data())
def test_write_crash_reopen_loses_nothing(
    tmp_path_factory: pytest.TempPathFactory, events: list[ev.EventBase], cut: int, data: st.DataObject
) -> None:
    folder = tmp_path_factory.mktemp("crash")
    recorder = SessionLogFolder(folder)
    lines = [e.model_dump_json(exclude_none=True).encode() + b"\n" for e in events]
    written = data.draw(st.integers(1, len(lines)))
    torn = lines[written][: cut % max(1, len(lines[written]) - 1)] if written < len(lines) else b""
    (folder / "x.jsonl").write_bytes(b"".join(lines[:written]) + torn)
    assert recorder.read_records("x") == events[:written]
    assert recorder.acquire("x") == events[written - 1].seq
    recorder.close()
    assert (folder / "x.jsonl").read_bytes() == b"".join(lines[:written])


def test_a_bad_line_in_the_middle_is_an_error_with_file_and_line(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    writer = _start(files)
    writer.record(ev.Plan, agent="a1", text="x")
    writer.close()
    log = tmp_path / "proj" / "0b1c.jsonl"
    lines = log.read_text().splitlines()
    log.write_text(
        "\n".join([lines[0], '{"type":"plan","seq":2,"v":2,"time":"2026-01-02T03:04:05Z"}', lines[1]]) + "\n"
    )
    with pytest.raises(
        SessionLogCorrupt, match=rf"{log}:2: not a valid session event \(plan\.agent: Field required\)"
    ):
        files.log.read(files.catalog.find("0b1c"))


def test_old_lines_are_upcast_and_newer_ones_refused(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    v1_line = {
        "type": "message",
        "seq": 1,
        "time": 1767322800,
        "v": 1,
        "agent": "a1",
        "role": "assistant",
        "text": "{}",
        "usage": {"prompt": 10, "completion": 2},
    }
    (folder / "old.jsonl").write_text(json.dumps(v1_line) + "\n")
    (record,) = SessionLogFolder(folder).read_records("old")
    assert isinstance(record, ev.Message) and record.usage is not None
    assert (record.usage.prompt_tokens, record.usage.completion_tokens) == (10, 2)
    assert record.time.isoformat() == "2026-01-02T03:00:00+00:00"
    (folder / "new.jsonl").write_text(json.dumps({**v1_line, "v": ev.SCHEMA_VERSION + 1}) + "\n")
    with pytest.raises(SessionSchemaTooNew, match=r"new\.jsonl:1: event schema v3 is newer"):
        SessionLogFolder(folder).read_records("new")


def test_spool_files_live_beside_the_session(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    writer = _start(files)
    first = writer.write_spool("a1.c3", "x" * 10_000)
    second = writer.write_spool("a1.c3", "again")
    writer.close()
    assert first == tmp_path / "proj" / "0b1c.spool" / "a1.c3.txt" and first.read_text() == "x" * 10_000
    assert second.name == "a1.c3.2.txt"
    removed = remove_session(files, "0b1c")
    assert not (tmp_path / "proj" / "0b1c.spool").exists() and not (tmp_path / "proj" / "0b1c.jsonl").exists()
    assert len(removed) >= 3 and files.views.load_index("proj") == {}


def test_resume_rebuilds_the_root_context_and_plan(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    writer = _start(files)
    writer.record(ev.AgentSpawn, agent="a1", kind="root")
    writer.record(
        ev.Segment, agent="a1", id="s1", role="system", kind="system", text="sys", pinned=True, tokens=9
    )
    writer.record(ev.Plan, agent="a1", text="the plan")
    writer.record(ev.AgentSpawn, agent="a1.c1", parent="a1", kind="implementer")
    writer.record(ev.Segment, agent="a1.c1", id="s1", role="user", kind="brief", text="brief")
    writer.record(ev.SessionEnd, outcome="done")
    writer.close()
    state = load_for_resume(files, "0b1")
    assert [s.id for s in state.root.ordered()] == ["s1"] and state.plan == "the plan"
    assert state.start.prompt == "hello there" and state.requests == 1 and state.last_seq == 7
    assert latest_session(files, "proj") == "0b1c"
    assert files.views.load_index("proj")["0b1c"]["state"] == "done"


def test_imported_sessions_cannot_be_resumed(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    _start(files, tags=["claude-code"], imported_from="/x.jsonl").close()
    with pytest.raises(
        SessionNotResumable, match=r"^session 0b1c was imported \(claude-code\) and cannot be resumed"
    ):
        load_for_resume(files, "0b1c")
    with pytest.raises(SessionNotResumable):
        reopen_session(files, Ticker(), "0b1c")


def test_a_fork_is_a_copy_the_original_only_read(tmp_path: Path) -> None:
    files = SessionFiles(tmp_path)
    writer = _start(files)
    writer.record(ev.Plan, agent="a1", text="p")
    writer.close()
    original = (tmp_path / "proj" / "0b1c.jsonl").read_bytes()
    fork = fork_session(files, Ticker(), "0b1c", "f0rk", "other")
    fork.record(ev.Plan, agent="a1", text="q")
    fork.close()
    assert (tmp_path / "proj" / "0b1c.jsonl").read_bytes() == original
    copied = files.log.read(files.catalog.find("f0rk"))
    assert files.catalog.find("f0rk").project == "other"  # the folder the fork runs in
    assert [(type(r).__name__, r.seq) for r in copied] == [("SessionStart", 1), ("Plan", 2), ("Plan", 3)]
    assert isinstance(copied[0], ev.SessionStart) and copied[0].session == "f0rk"
    assert copied[0].model_copy(update={"session": "0b1c"}) == files.log.read(files.catalog.find("0b1c"))[0]
    reopen_session(files, Ticker(), "f0rk").close()  # resumable on its own
    with pytest.raises(UsageError, match="session f0rk already exists"):
        fork_session(files, Ticker(), "0b1c", "f0rk", "other")
    _start(files, "1mp0", tags=["claude-code"], imported_from="/x.jsonl").close()
    with pytest.raises(SessionNotResumable):
        fork_session(files, Ticker(), "1mp0", "f1", "proj")


def test_the_project_key_comes_from_the_origin_remote_else_the_path(tmp_path: Path) -> None:
    plain = tmp_path / "plain dir"
    plain.mkdir()
    assert project_key(plain) == str(plain.resolve()).strip("/").replace("/", "-").replace(" ", "-")
    _repository_with_origin(tmp_path / "repo", "git@github.com:Someone/Proj.git")
    (tmp_path / "repo" / "sub").mkdir()
    assert project_key(tmp_path / "repo" / "sub") == "github.com-someone-proj"
    assert normalise_remote("https://user@GitHub.com:443/Someone/Proj.git/") == "github.com/someone/proj"
    assert normalise_remote("ssh://git@host.example/a/b") == "host.example/a/b"


def _child_writer(root: Path, session_id: str, events: int, then_sleep: bool) -> subprocess.Popen[str]:
    script = textwrap.dedent(f"""
        import time
        from datetime import UTC, datetime
        from pathlib import Path
        from aerix.adapters.sessions.session_store import SessionFiles
        from aerix.app.sessions.writer import reopen_session
        from aerix.domain import events as ev
        files = SessionFiles(Path({str(root)!r}))
        writer = reopen_session(files, lambda: datetime.now(UTC), {session_id!r})
        for n in range({events}):
            record = writer.record(ev.Plan, agent="a1", text="plan " * 20)
            print(record.seq, flush=True)
        if {then_sleep}:
            time.sleep(60)
    """)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)


def _repository_with_origin(path: Path, url: str) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", url], check=True)

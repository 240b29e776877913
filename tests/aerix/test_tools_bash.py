"""bash with real subprocesses: output order, exit and signal, timeout with TERM then KILL,
cancel, and background jobs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from aerix.adapters.tools import JobTable, LocalTools
from aerix.adapters.tools.bash import bash_tool


@pytest.fixture
def tools(tmp_path: Path) -> LocalTools:
    return LocalTools(tmp_path)


def pid_alive(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_stdout_then_stderr_then_exit(tools: LocalTools, tmp_path: Path) -> None:
    result = tools.run("bash", {"command": "echo err >&2; echo out; pwd; exit 3"})
    assert result == f"out\n{tmp_path}\nerr\n[exit 3]"
    assert tools.run("bash", {"command": "true"}) == "[exit 0]"


def test_a_signal_is_reported(tools: LocalTools) -> None:
    assert tools.run("bash", {"command": "kill -9 $$"}) == "[signal 9]"


def test_timeout_terms_the_whole_group(tools: LocalTools, tmp_path: Path) -> None:
    result = tools.run(
        "bash", {"command": "sleep 30 & echo $! > child.pid; echo started; wait", "timeout_secs": 1}
    )
    assert result == "started\n[timeout after 1s]"
    assert not pid_alive(int((tmp_path / "child.pid").read_text()))


def test_a_command_ignoring_term_is_killed(tools: LocalTools) -> None:
    result = tools.run("bash", {"command": "trap '' TERM; echo stubborn; sleep 30", "timeout_secs": 1})
    assert result == "stubborn\n[timeout after 1s]"


def test_timeout_is_bounded_by_the_spec(tools: LocalTools) -> None:
    assert tools.run("bash", {"command": "true", "timeout_secs": 601}) == (
        "error: timeout_secs must be between 1 and 600"
    )


def test_cancel_stops_a_running_command(tmp_path: Path) -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    assert bash_tool(tmp_path, "echo before; sleep 30", cancel=cancel) == "before\n[cancelled]"


def test_background_job_reports_when_it_exits(tools: LocalTools, tmp_path: Path) -> None:
    started = tools.run("bash", {"command": "sleep 0.3; echo finished; exit 4", "background": True})
    assert started.startswith("started job j1 (pid ")
    assert tools.jobs.running_ids() == ["j1"]
    reports = tools.jobs.wait_for_one()
    assert [report.text for report in reports] == ["[job j1 exited 4]\nfinished"]
    assert tools.jobs.running_ids() == [] and tools.jobs.take_finished() == []


def test_finished_jobs_wait_to_be_taken(tmp_path: Path) -> None:
    jobs = JobTable(tmp_path)
    jobs.start("echo quick")
    reports = jobs.wait_for_one()
    assert [r.job_id for r in reports] == ["j1"]
    jobs.start("echo second")
    jobs.wait_for_one()
    assert jobs.take_finished() == []


def test_jobs_still_running_at_the_end_are_killed(tmp_path: Path) -> None:
    jobs = JobTable(tmp_path)
    jobs.start("echo $$ > job.pid; sleep 30")
    jobs.start("sleep 30")
    while not (tmp_path / "job.pid").exists():
        threading.Event().wait(0.05)
    reports = jobs.kill_all()
    assert sorted(report.text for report in reports) == ["[job j1 killed]", "[job j2 killed]"]
    assert not pid_alive(int((tmp_path / "job.pid").read_text()))


def test_waiting_at_a_final_can_be_cancelled(tmp_path: Path) -> None:
    jobs = JobTable(tmp_path)
    jobs.start("sleep 30")
    cancel = threading.Event()
    cancel.set()
    assert jobs.wait_for_one(cancel) == []
    assert jobs.running_ids() == ["j1"]
    jobs.kill_all()

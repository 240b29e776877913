"""bash: foreground commands, and background jobs with their table.

Foreground: the result is stdout, then stderr, then ``[exit N]``, ``[signal N]``,
``[timeout after Ns]`` or ``[cancelled]``.

Background: the call returns ``started job jN …`` at once. The job runs under the same timeout
rules; when it ends its report ``[job jN exited N]`` followed by its output is waiting in the
agent's ``JobTable``, which the loop drains after each call (``take_finished``), waits on at a
final (``wait_for_one``, bounded by the latest job's timeout plus JOB_WAIT_EXTRA_SECS, polled
every JOB_WAIT_POLL_SECS) and empties when the agent ends (``kill_all``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from aerix.adapters.tools.common import ToolFailure
from aerix.adapters.tools.process import ProcessOutcome, RunningCommand, start_command, supervise
from aerix.domain import bounds


def checked_timeout(timeout_secs: int | float | None) -> float:
    """``timeout_secs`` with its default, refused outside 1…BASH_MAX_TIMEOUT_SECS."""
    if timeout_secs is None:
        return float(bounds.BASH_TIMEOUT_SECS)
    if not 0 < timeout_secs <= bounds.BASH_MAX_TIMEOUT_SECS:
        raise ToolFailure(f"timeout_secs must be between 1 and {bounds.BASH_MAX_TIMEOUT_SECS}")
    return float(timeout_secs)


def bash_tool(
    cwd: Path, command: str, timeout_secs: int | float | None = None, cancel: threading.Event | None = None
) -> str:
    """Run ``command`` in the foreground and return its result text."""
    if not command.strip():
        raise ToolFailure("command is empty")
    outcome = run_command(command, cwd, checked_timeout(timeout_secs), cancel)
    return f"{outcome.output()}[{outcome.status()}]"


def run_command(command: str, cwd: Path, timeout_secs: float, stop: threading.Event | None) -> ProcessOutcome:
    """Run a command to its end, its timeout or ``stop``; the outcome keeps its output."""
    if not cwd.is_dir():
        raise ToolFailure(f"the working directory {cwd} does not exist")
    try:
        running = start_command(command, cwd)
    except OSError as exc:
        raise ToolFailure(f"cannot start sh: {exc.strerror or exc}") from exc
    return supervise(running, timeout_secs, stop)


@dataclass(frozen=True)
class JobReport:
    """A finished background job, as the result the loop appends."""

    job_id: str
    command: str
    outcome: ProcessOutcome

    @property
    def text(self) -> str:
        status = self.outcome.status()
        if status.startswith("exit "):
            status = "exited " + status.removeprefix("exit ")
        elif status == "cancelled":
            status = "killed"
        return f"[job {self.job_id} {status}]\n{self.outcome.output()}".rstrip("\n")


@dataclass
class _Job:
    job_id: str
    command: str
    timeout_secs: float
    running: RunningCommand
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    @property
    def deadline(self) -> float:
        return self.running.started + self.timeout_secs


class JobTable:
    """One agent's background jobs (ids ``j1``, ``j2``… in start order). Thread-safe."""

    def __init__(self, cwd: Path) -> None:
        self._cwd = cwd
        self._jobs: dict[str, _Job] = {}
        self._finished: list[JobReport] = []
        self._changed = threading.Condition()
        self._count = 0

    def start(self, command: str, timeout_secs: int | float | None = None) -> str:
        """Start a background job; the result text names its id."""
        if not command.strip():
            raise ToolFailure("command is empty")
        timeout = checked_timeout(timeout_secs)
        if not self._cwd.is_dir():
            raise ToolFailure(f"the working directory {self._cwd} does not exist")
        with self._changed:
            self._count += 1
            job_id = f"j{self._count}"
        try:
            running = start_command(command, self._cwd)
        except OSError as exc:
            raise ToolFailure(f"cannot start sh: {exc.strerror or exc}") from exc
        job = _Job(job_id, command, timeout, running)
        job.thread = threading.Thread(
            target=self._watch, args=(job,), daemon=True, name=f"aerix-job-{job_id}"
        )
        with self._changed:
            self._jobs[job_id] = job
        job.thread.start()
        return (
            f"started job {job_id} (pid {running.pid}) in the background; its output comes back as "
            f"[job {job_id} exited N] when it ends (timeout {timeout:g}s)"
        )

    def _watch(self, job: _Job) -> None:
        outcome = supervise(job.running, job.timeout_secs, job.stop)
        with self._changed:
            self._jobs.pop(job.job_id, None)
            self._finished.append(JobReport(job.job_id, job.command, outcome))
            self._changed.notify_all()

    def running_ids(self) -> list[str]:
        with self._changed:
            return sorted(self._jobs, key=lambda job_id: int(job_id[1:]))

    def take_finished(self) -> list[JobReport]:
        """Reports of the jobs that ended since the last call, in the order they ended."""
        with self._changed:
            reports, self._finished = self._finished, []
            return reports

    def wait_for_one(self, cancel: threading.Event | None = None) -> list[JobReport]:
        """At a final: wait until a job ends (its reports come back), the latest job's timeout
        plus JOB_WAIT_EXTRA_SECS passes, or ``cancel`` is set (then an empty list)."""
        with self._changed:
            if not self._jobs and not self._finished:
                return []
            deadline = max((job.deadline for job in self._jobs.values()), default=time.monotonic())
            deadline += bounds.JOB_WAIT_EXTRA_SECS
            while not self._finished and time.monotonic() < deadline:
                if cancel is not None and cancel.is_set():
                    return []
                self._changed.wait(
                    timeout=min(bounds.JOB_WAIT_POLL_SECS, max(0.0, deadline - time.monotonic()))
                )
            reports, self._finished = self._finished, []
            return reports

    def kill_all(self) -> list[JobReport]:
        """When the agent ends: stop every running job; the reports of all unreported jobs."""
        with self._changed:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.stop.set()
        for job in jobs:
            if job.thread is not None:
                job.thread.join()
        return self.take_finished()

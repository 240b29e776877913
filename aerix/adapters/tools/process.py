"""Running one shell command under a deadline and a stop event: the core of bash and of
background jobs.

The command runs as ``sh -c`` in its own process group, so stopping it reaches everything it
started: TERM to the group, then KILL ``BASH_KILL_GRACE_SECS`` later. The stop event is checked
every ``BASH_CANCEL_POLL_SECS``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from aerix.domain import bounds


class _Capture:
    """Reads one pipe on its own thread, keeping at most BASH_CAPTURE_MAX_BYTES."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.kept = bytearray()
        self.dropped = 0
        self._pipe = pipe
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with self._pipe:
            while chunk := self._pipe.read1(65536):  # type: ignore[attr-defined]
                room = bounds.BASH_CAPTURE_MAX_BYTES - len(self.kept)
                self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - room)

    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def text(self, name: str) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[{self.dropped} more bytes of {name} were not kept]"
        return text


@dataclass
class ProcessOutcome:
    """How a command ended, and what it printed."""

    stdout: str
    stderr: str
    returncode: int | None
    timeout_secs: float
    timed_out: bool = False
    stopped: bool = False  # the stop event was set (cancel, or a job killed at agent end)

    def status(self) -> str:
        """``exit N``, ``signal N``, ``timeout after Ns`` or ``cancelled`` (without brackets)."""
        if self.timed_out:
            return f"timeout after {self.timeout_secs:g}s"
        if self.stopped:
            return "cancelled"
        if self.returncode is not None and self.returncode < 0:
            return f"signal {-self.returncode}"
        return f"exit {self.returncode}"

    def output(self) -> str:
        """stdout, then stderr, each ending with a newline when not empty."""
        parts = [text if text.endswith("\n") else text + "\n" for text in (self.stdout, self.stderr) if text]
        return "".join(parts)


@dataclass
class RunningCommand:
    """A started command; ``supervise`` waits for it."""

    process: subprocess.Popen[bytes]
    stdout: _Capture
    stderr: _Capture
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.process.pid


def start_command(command: str, cwd: Path) -> RunningCommand:
    """Start ``sh -c command`` in ``cwd`` in a new process group (and session), stdin closed."""
    process = subprocess.Popen(
        ["sh", "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    if process.stdout is None or process.stderr is None:  # cannot happen with PIPE; keeps mypy sure
        raise RuntimeError("subprocess pipes were not created")
    return RunningCommand(process, _Capture(process.stdout), _Capture(process.stderr))


def supervise(running: RunningCommand, timeout_secs: float, stop: threading.Event | None) -> ProcessOutcome:
    """Wait until the command and everything holding its output have finished, the deadline
    passes or ``stop`` is set; stop the process group in the last two cases."""
    deadline = running.started + timeout_secs
    timed_out = stopped = False
    while not (running.process.poll() is not None and running.stdout.done() and running.stderr.done()):
        if stop is not None and stop.is_set():
            stopped = True
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        try:
            running.process.wait(timeout=bounds.BASH_CANCEL_POLL_SECS)
        except subprocess.TimeoutExpired:
            continue
        if not (running.stdout.done() and running.stderr.done()):
            # The shell is gone but something it started still holds the output open.
            time.sleep(bounds.BASH_CANCEL_POLL_SECS)
    if timed_out or stopped:
        stop_group(running.process)
    for capture in (running.stdout, running.stderr):
        capture.join(bounds.BASH_KILL_GRACE_SECS)  # a process that left the group may hold the pipe
    return ProcessOutcome(
        stdout=running.stdout.text("stdout"),
        stderr=running.stderr.text("stderr"),
        returncode=running.process.returncode,
        timeout_secs=timeout_secs,
        timed_out=timed_out,
        stopped=stopped,
    )


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """TERM the process group; KILL whatever is left of it after the grace period."""
    _signal_group(process.pid, signal.SIGTERM)
    grace_end = time.monotonic() + bounds.BASH_KILL_GRACE_SECS
    while time.monotonic() < grace_end:
        process.poll()  # reap the shell, so a zombie does not keep the group alive
        if not _group_alive(process.pid):
            break
        time.sleep(bounds.BASH_CANCEL_POLL_SECS)
    _signal_group(process.pid, signal.SIGKILL)
    process.wait()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    """Whether any live (not zombie) process is left in the group. Zombies are skipped because
    an orphan's zombie lingers until init reaps it, and some container inits are slow to."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            return True
    return False

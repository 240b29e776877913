"""stop_process: the one way launch, the tests and the benchmarks end the servers they start."""

from __future__ import annotations

import signal
import subprocess
import sys

from caldrix.processes import stop_process

#: Prints a line once its SIGTERM handler is in place, so the test never signals too early.
IGNORES_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


def _started(code: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stdout.readline() == b"ready\n"
    return process


def test_a_process_that_ends_on_sigterm_is_not_killed() -> None:
    process = _started("import time\nprint('ready', flush=True)\ntime.sleep(600)\n")
    stop_process(process)
    assert process.returncode == -signal.SIGTERM


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    process = _started(IGNORES_SIGTERM)
    stop_process(process, grace_s=0.5)
    assert process.returncode == -signal.SIGKILL


def test_a_process_that_has_ended_is_left_as_it_ended() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    stop_process(process)
    assert process.returncode == 3

"""Ctrl-C sent to a real console script at a chosen moment of its start-up.

The moment is named by a module: the child runs with ``PYTHONPROFILEIMPORTTIME``, which writes
one ``import time:`` line on stderr as each import completes; when the line of ``checkpoint``
appears, SIGINT goes to the child's process group, as a terminal's Ctrl-C does. So a test can
interrupt "while rich is being imported" or "after everything is imported" without sleeping;
``delay`` sends it that long after the checkpoint instead (``site``: Python's own start-up is over
and the console script's first line runs next).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass

IMPORT_TIME = "import time:"


@dataclass(frozen=True)
class Interrupted:
    returncode: int
    stderr: str
    """stderr without the import-time lines."""
    seen_checkpoint: bool


def interrupt_at(
    command: Sequence[str], checkpoint: str, timeout: float = 60, delay: float = 0.0
) -> Interrupted:
    """Run ``command`` (stdin a pipe held open, so a command reading it waits), send SIGINT
    once the import of module ``checkpoint`` completes (``delay`` seconds later), and collect how
    it ended; a command that ended before the delay ran out is not interrupted."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "NO_COLOR": "1"}
    child = subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        text=True,
    )
    assert child.stderr is not None and child.stdin is not None
    # A checkpoint never reached would leave the child waiting on stdin: end it, and the test fails.
    watchdog = threading.Timer(timeout, os.killpg, (child.pid, signal.SIGKILL))
    watchdog.start()
    others: list[str] = []
    seen = False
    ctrl_c = threading.Timer(delay, _interrupt, (child,))
    for line in child.stderr:
        if not line.startswith(IMPORT_TIME):
            others.append(line)
        elif line.rstrip("\n").split("|")[-1].strip() == checkpoint:
            seen = True
            ctrl_c.start()
            break
    others += [line for line in child.stderr if not line.startswith(IMPORT_TIME)]
    if seen:
        ctrl_c.join()
    child.stdin.close()
    child.wait()
    watchdog.cancel()
    return Interrupted(child.returncode, "".join(others), seen)


def _interrupt(child: subprocess.Popen[str]) -> None:
    """SIGINT to the child's process group, as a terminal's Ctrl-C, unless it has ended."""
    if child.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGINT)

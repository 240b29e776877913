"""Ctrl-C sent to a real console script at a chosen moment of its start-up.

The moment is named by a module: the child runs with ``PYTHONPROFILEIMPORTTIME``, which writes
one ``import time:`` line on stderr as each import completes; when the line of ``checkpoint``
appears, SIGINT goes to the child's process group, as a terminal's Ctrl-C does. So a test can
interrupt "while rich is being imported" or "after everything is imported" without sleeping.
"""

from __future__ import annotations

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


def interrupt_at(command: Sequence[str], checkpoint: str, timeout: float = 60) -> Interrupted:
    """Run ``command`` (stdin a pipe held open, so a command reading it waits), send SIGINT
    once the import of module ``checkpoint`` completes, and collect how it ended."""
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
    for line in child.stderr:
        if not line.startswith(IMPORT_TIME):
            others.append(line)
        elif line.rstrip("\n").split("|")[-1].strip() == checkpoint:
            seen = True
            os.killpg(child.pid, signal.SIGINT)
            break
    others += [line for line in child.stderr if not line.startswith(IMPORT_TIME)]
    child.stdin.close()
    child.wait()
    watchdog.cancel()
    return Interrupted(child.returncode, "".join(others), seen)

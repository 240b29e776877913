"""Ending a child server process: the front ``caldrix launch`` starts, and the pools, fronts and
llama.cpp servers the tests and benchmarks start."""

from __future__ import annotations

import subprocess
from typing import Final

#: How long a server may take to end after SIGTERM before it is killed.
STOP_GRACE_SECS: Final = 30.0


def stop_process(process: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_SECS) -> None:
    """End ``process`` if it still runs: SIGTERM, then SIGKILL if it has not ended within
    ``grace_s`` (a server stuck in a long prefill may not answer SIGTERM in time)."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

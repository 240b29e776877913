"""Ending the server processes the tests and benchmarks start (pools, fronts, llama.cpp's servers)."""

from __future__ import annotations

import subprocess

#: How long a server may take to end after SIGTERM before it is killed.
STOP_GRACE_SECS = 30.0


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

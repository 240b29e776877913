"""Keep what native loaders print on file descriptor 2 off the user's terminal.

ggml's legacy loaders (inside ctransformers) report a bad file with ``fprintf(stderr, …)`` or an
uncaught ``std::bad_alloc`` message before returning null; caldrix then says the same thing in
its own line. While such a loader runs, fd 2 points at a temporary file; afterwards what it
caught goes to the pool's log at debug level. caldrix's own log lines written meanwhile (from
another thread) are caught too, and are written back to stderr as they were.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

logger = logging.getLogger("caldrix.pool")

#: A caldrix log line holds this after its timestamp (see caldrix/log.py's format).
_OWN_LINE_MARK: Final = " caldrix["
STDERR_FD: Final = 2


@dataclass
class Captured:
    """What the native code printed on fd 2 while it was captured."""

    text: str = ""


@contextlib.contextmanager
def native_stderr_captured(what: str) -> Iterator[Captured]:
    """Point fd 2 at a temporary file for the duration; ``what`` names the call in the log."""
    captured = Captured()
    with contextlib.suppress(ValueError, OSError):
        sys.stderr.flush()
    saved = os.dup(STDERR_FD)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), STDERR_FD)
        try:
            yield captured
        finally:
            with contextlib.suppress(ValueError, OSError):
                sys.stderr.flush()
            os.dup2(saved, STDERR_FD)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode("utf-8", errors="replace")
    own, native = _split(captured.text)
    if own:
        with contextlib.suppress(ValueError, OSError):
            sys.stderr.write(own)
            sys.stderr.flush()
    for line in native:
        logger.debug("%s printed: %s", what, line)


def _split(text: str) -> tuple[str, list[str]]:
    own: list[str] = []
    native: list[str] = []
    for line in text.splitlines(keepends=True):
        (own if _OWN_LINE_MARK in line[:40] else native).append(line)
    return "".join(own), [line.rstrip() for line in native if line.strip()]

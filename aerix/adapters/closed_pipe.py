"""A closed pipe (``aerix sessions list | head -1``) ends quietly: the stream its reader left
goes to /dev/null. Apart from ``aerix.adapters.claude.output`` so that any command, ``--help`` too,
can end so without importing the output formats."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO


def discard_output(stream: TextIO) -> None:
    """Point a stream's file descriptor at /dev/null once its reader went away: what is still
    buffered, and Python's own flush at exit, then go nowhere instead of raising again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with contextlib.suppress(OSError, ValueError):  # no descriptor (a StringIO), or closed
            os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def discard_closed_output() -> None:
    """After a broken pipe, wherever it was met: stdout goes to /dev/null, and stderr too when
    its reader is gone as well (a flush of what it holds fails), so exit stays quiet."""
    discard_output(sys.stdout)
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        discard_output(sys.stderr)

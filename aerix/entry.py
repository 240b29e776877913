"""The ``aerix`` console script's first module: Ctrl-C at any moment is one line, exit 130.

Importing a command's modules takes a good part of a second on a small machine (pydantic's event
models, rich, anyio); a Ctrl-C meanwhile used to be a ``KeyboardInterrupt`` traceback, or a
native extension's panic. This module imports nothing heavy: while the command line is parsed and
the command's modules imported, Ctrl-C leaves at once (nothing has been recorded yet, so nothing
can be lost); once the command runs (``ctrl_c_to_python``, which the command line calls), it is
Python's usual ``KeyboardInterrupt``, so a running request still ends cancelled and records it,
and whatever escapes is the same one line.

Once the command has returned, the process ends without tearing the interpreter down: freeing
every object of some 480 modules one by one took 40-50 ms, a seventh of a warm ``-p``, for
memory the process gives back anyway. Everything a command leaves behind is done first: its
threads joined, every exit handler it registered run, stdout and stderr flushed.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys

from aerix import CANCELLED_LINE, RUN_AS_COMMAND, leave_at_once
from aerix.domain.bounds import EXIT_CANCELLED

#: The status the command returned, once it has (``None`` while it runs, or when it left by an
#: exception: then the process ends as Python ends it).
_returned: int | None = None


def main() -> int:
    global _returned
    signal.signal(signal.SIGINT, leave_at_once)  # already, when the package saw it is the command
    # Exit handlers run last in, first out: registered before the command's modules are
    # imported, this one runs after every handler the command registers. A handler registered
    # before it (a coverage run saving its data, a sitecustomize's) would never run: then the
    # process ends the ordinary way.
    if RUN_AS_COMMAND and atexit._ncallbacks() == 0:
        atexit.register(_end_without_teardown)
    from aerix.cli.main import main as cli_main

    try:
        _returned = cli_main(ready=ctrl_c_to_python)
    except KeyboardInterrupt:
        _returned = cancelled()
    finally:
        # The command has ended (returned, or exited through argparse's SystemExit, as --version
        # does): its status stands, and a Ctrl-C while the process exits is ignored rather than
        # ending it by SIGINT with no word said.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return _returned


def ctrl_c_to_python() -> None:
    """The command's modules are imported (a Ctrl-C during an import, in a native extension's
    too, was leaving at once) and it runs next: from here Ctrl-C is Python's KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def cancelled() -> int:
    """Say so once: a second Ctrl-C while the line is written is ignored, not a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(CANCELLED_LINE, file=sys.stderr, flush=True)
    return EXIT_CANCELLED


def _end_without_teardown() -> None:
    """The last exit handler: Python has joined the command's threads and run every other handler;
    what is left is the interpreter's teardown, which nothing of the command's needs."""
    if _returned is None:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # a closed pipe or stream: Python's own ending says so, with its own status
    os._exit(_returned)

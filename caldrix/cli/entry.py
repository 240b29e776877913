"""The ``caldrix`` console script's first module: Ctrl-C at any moment is one line, exit 130.

A command's modules pull in pydantic, rich and anyio, and ``caldrix run`` llama.cpp too; a
Ctrl-C meanwhile used to be a ``KeyboardInterrupt`` traceback (or a native extension's panic).
While the command line is parsed and the command's modules imported, Ctrl-C leaves at once
(nothing has started that needs stopping); once the command runs (``ctrl_c_to_python``, which
the command line calls) it is Python's usual ``KeyboardInterrupt``, so the pool still shuts down
in order and a chat still cancels only its answer, and whatever escapes is the same one line.
"""

from __future__ import annotations

import signal
import sys

from caldrix import CANCELLED_LINE, leave_at_once
from caldrix.cli.exit_codes import EXIT_CANCELLED


def main() -> int:
    signal.signal(signal.SIGINT, leave_at_once)  # already, when the package saw it is the command
    from caldrix.cli.main import main as cli_main

    try:
        return cli_main(ready=ctrl_c_to_python)
    except KeyboardInterrupt:
        return cancelled()
    finally:
        # The command has ended (returned, or exited through argparse's SystemExit, as --version
        # does): its status stands, and a Ctrl-C while the process exits is ignored rather than
        # ending it by SIGINT with no word said.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def ctrl_c_to_python() -> None:
    """The command's modules are imported (a Ctrl-C during an import, in a native extension's
    too, was leaving at once) and it runs next: from here Ctrl-C is Python's KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def cancelled() -> int:
    """Say so once: a second Ctrl-C while the line is written is ignored, not a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(CANCELLED_LINE, file=sys.stderr, flush=True)
    return EXIT_CANCELLED

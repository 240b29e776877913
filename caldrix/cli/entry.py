"""The ``caldrix`` console script's first module: Ctrl-C at any moment is one line, exit 130.

Importing the command line pulls in pydantic, rich and anyio, and ``caldrix run`` then
llama.cpp; a Ctrl-C meanwhile used to be a ``KeyboardInterrupt`` traceback. While those imports
run, Ctrl-C leaves at once (nothing has started that needs stopping); once the command runs it
is Python's usual ``KeyboardInterrupt``, so the pool still shuts down in order and a chat still
cancels only its answer, and whatever escapes is the same one line.
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
        # Inside the try: a Ctrl-C that came as the import ended is raised by this handler.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        return cli_main()
    except KeyboardInterrupt:
        return cancelled()
    finally:
        # The command has ended (returned, or exited through argparse's SystemExit, as --version
        # does): its status stands, and a Ctrl-C while the process exits is ignored rather than
        # ending it by SIGINT with no word said.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def cancelled() -> int:
    """Say so once: a second Ctrl-C while the line is written is ignored, not a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(CANCELLED_LINE, file=sys.stderr, flush=True)
    return EXIT_CANCELLED

"""Aerix: a local-first coding agent for the terminal.

Run as the ``aerix`` command (its console script, or ``python -m aerix``), the first statements
below make Ctrl-C end the process at once with one line, ``aerix: cancelled``, exit 130: the
console script imports ``aerix.entry`` through this package, so from here on every import the
command makes is covered, and a Ctrl-C meanwhile is never a ``KeyboardInterrupt`` traceback from
the import machinery. ``aerix.entry`` hands Ctrl-C back to Python once the command line is
imported. What runs before this package (the interpreter's own start-up, ``site`` and its
``.pth`` hooks) is Python's, out of any package's reach. Imported by anything else (the tests, a
program using the library) the package changes nothing.
"""

import os as _os
import sys as _sys

#: What a Ctrl-C before the command runs leaves on stderr, and its status (``EXIT_CANCELLED`` of
#: ``aerix.domain.bounds``, which is not imported yet: nothing is, before the handler is in place).
CANCELLED_LINE = "aerix: cancelled"
CANCELLED_STATUS = 130


def leave_at_once(signum: int, frame: object) -> None:
    """Ctrl-C before the command runs: nothing has been recorded yet, so nothing is lost."""
    _os.write(2, f"{CANCELLED_LINE}\n".encode())
    _os._exit(CANCELLED_STATUS)


def _run_as(command: str) -> bool:
    """Whether this process is ``command``: its console script, or ``python -m command``."""
    argv = _sys.orig_argv
    run_module = argv[argv.index("-m") + 1 : argv.index("-m") + 2] if "-m" in argv else []
    return _os.path.basename(_sys.argv[0]) == command or run_module == [command]


#: Whether this process is the ``aerix`` command (and not a program that imports the package).
RUN_AS_COMMAND = _run_as("aerix")

if RUN_AS_COMMAND:
    # _signal, not signal: signal.py imports enum first, and every millisecond before this line
    # is one where Ctrl-C is a traceback.
    import _signal  # type: ignore[import-not-found]

    _signal.signal(_signal.SIGINT, leave_at_once)

__version__ = "0.1.0"

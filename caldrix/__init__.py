"""caldrix: the model-pool daemon behind Aerix.

It holds loaded models (members) behind a Unix socket and speaks caldrix-protocol version 2.
Only :mod:`caldrix.protocol` is meant to be imported by clients.

Run as the ``caldrix`` command (its console script, or ``python -m caldrix``), the first
statements below make Ctrl-C end the process at once with one line, ``caldrix: cancelled``, exit
130, so a Ctrl-C while the command's modules are imported is never a ``KeyboardInterrupt``
traceback; ``caldrix.cli.entry`` hands Ctrl-C back to Python once the command line is imported.
Imported by anything else (aerix, the tests) the package changes nothing.
"""

import os as _os
import sys as _sys

#: What a Ctrl-C before the command runs leaves on stderr, and its status (``EXIT_CANCELLED`` of
#: ``caldrix.cli.exit_codes``, which is not imported yet: nothing is, before the handler).
CANCELLED_LINE = "caldrix: cancelled"
CANCELLED_STATUS = 130


def leave_at_once(signum: int, frame: object) -> None:
    """Ctrl-C before the command runs: nothing has started that needs stopping."""
    _os.write(2, f"{CANCELLED_LINE}\n".encode())
    _os._exit(CANCELLED_STATUS)


def _run_as(command: str) -> bool:
    """Whether this process is ``command``: its console script, or ``python -m command``."""
    argv = _sys.orig_argv
    run_module = argv[argv.index("-m") + 1 : argv.index("-m") + 2] if "-m" in argv else []
    return _os.path.basename(_sys.argv[0]) == command or run_module == [command]


if _run_as("caldrix"):
    # _signal, not signal: signal.py imports enum first, and every millisecond before this line
    # is one where Ctrl-C is a traceback.
    import _signal  # type: ignore[import-not-found]

    _signal.signal(_signal.SIGINT, leave_at_once)

__version__ = "0.1.0"

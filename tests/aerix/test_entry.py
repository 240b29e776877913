"""Ctrl-C at any moment of a real ``aerix`` process is ``aerix: cancelled``, exit 130."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aerix import CANCELLED_LINE, CANCELLED_STATUS, leave_at_once
from aerix.domain.bounds import EXIT_CANCELLED
from tests.interrupts import interrupt_at

AERIX = str(Path(sys.executable).with_name("aerix"))


@pytest.mark.parametrize(
    "checkpoint",
    [
        "aerix.cli.main",  # the parser is imported; -p's own modules come next
        "anyio",  # the event loop's library (a piped -p loads no rich)
        "pydantic",  # the event models' library
        "aerix.domain.events",  # the slowest of aerix's own modules
        "aerix.wiring.requests",  # the composition root of -p
        "aerix.cli.request",  # everything imported: -p is waiting for its prompt on stdin
    ],
)
def test_ctrl_c_while_starting_is_one_line_and_130(checkpoint: str) -> None:
    ended = interrupt_at([AERIX, "-p"], checkpoint)
    assert ended.seen_checkpoint
    assert (ended.returncode, ended.stderr) == (130, "aerix: cancelled\n")


#: Before the package's first statement runs Python's own start-up (the interpreter, ``site``
#: and its ``.pth`` hooks, such as an editable install's finder) and pip's console script
#: wrapper finding the package: no code of aerix runs there, so its SIGINT handling is Python's.
#: The package's first statements install the handler; its import line is time zero here, and
#: every moment after it is aerix's.
PACKAGE_IMPORTED = "aerix"
DELAYS_MS = (0, 10, 20, 40, 60, 90, 130, 200, 300)


@pytest.mark.parametrize("delay_ms", DELAYS_MS)
@pytest.mark.parametrize(
    "command",
    [[AERIX, "--version"], [AERIX, "-p"], [sys.executable, "-m", "aerix", "--version"]],
    ids=["--version", "-p", "python -m aerix"],
)
def test_ctrl_c_in_the_first_moments_is_never_a_traceback(command: list[str], delay_ms: int) -> None:
    """Through the installed console script, at several moments from the package's first lines
    on: ``aerix.entry``'s imports, the command line's, the command's start.
    ``--version`` may finish first (exit 0); ``-p`` waits for its prompt on stdin (so no pool
    is started)."""
    ended = interrupt_at(command, PACKAGE_IMPORTED, delay=delay_ms / 1000)
    assert ended.seen_checkpoint
    assert "Traceback" not in ended.stderr and "KeyboardInterrupt" not in ended.stderr, ended.stderr
    if ended.returncode == 0:
        assert command[-1] == "--version" and ended.stderr == ""
    else:
        assert (ended.returncode, ended.stderr) == (EXIT_CANCELLED, CANCELLED_LINE + "\n")


def test_the_early_line_and_status_are_the_cancelled_ones() -> None:
    assert (CANCELLED_STATUS, CANCELLED_LINE) == (EXIT_CANCELLED, "aerix: cancelled")


def test_imported_by_another_program_the_package_leaves_ctrl_c_alone() -> None:
    """pytest imported aerix: its Ctrl-C is still Python's KeyboardInterrupt."""
    assert signal.getsignal(signal.SIGINT) is not leave_at_once
    # Compared with the handler the process started with, not Python's default: a suite run in
    # the background inherits SIGINT ignored, and Python keeps it so.
    probe = (
        "import signal; before = signal.getsignal(signal.SIGINT); import aerix.entry; "
        "print(signal.getsignal(signal.SIGINT) is before)"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert shown.stdout == "True\n"

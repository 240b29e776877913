"""Ctrl-C at any moment of a real ``aerix`` process is ``aerix: cancelled``, exit 130."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.interrupts import interrupt_at

AERIX = str(Path(sys.executable).with_name("aerix"))


@pytest.mark.parametrize(
    "checkpoint",
    [
        "rich.style",  # early: among the first of aerix.cli.main's imports
        "pydantic",  # the event models' library
        "aerix.domain.events",  # the slowest of aerix's own modules
        "aerix.wiring.stream_session",  # the composition root's last module: the command runs next
        "aerix.cli.main",  # everything imported: -p is waiting for its prompt on stdin
    ],
)
def test_ctrl_c_while_starting_is_one_line_and_130(checkpoint: str) -> None:
    ended = interrupt_at([AERIX, "-p"], checkpoint)
    assert ended.seen_checkpoint
    assert (ended.returncode, ended.stderr) == (130, "aerix: cancelled\n")

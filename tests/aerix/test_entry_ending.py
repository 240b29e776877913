"""A real ``aerix`` process ends without the interpreter's teardown, and loses nothing by it: its
status, every byte it wrote to a pipe, every exit handler its command registered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from aerix.domain.events import union_json_schema

AERIX = str(Path(sys.executable).with_name("aerix"))

#: A stand-in for the console script, named ``aerix`` (the package knows its command by that):
#: its command registers an exit handler and keeps an object whose finalizer would speak if the
#: interpreter were torn down.
PROGRAM = """
import atexit, sys
import aerix.cli.main as command_line

class Finalized:
    def __del__(self):
        sys.stderr.write("torn down\\n")

kept = Finalized()
real_main = command_line.main

def main(**kwargs):
    atexit.register(lambda: sys.stderr.write("handler ran\\n"))
    return real_main(**kwargs)

command_line.main = main
from aerix.entry import main as entry_main
sys.exit(entry_main())
"""


def _isolated_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        env[var] = str(tmp_path / var.lower())
    return env


def _run_program(tmp_path: Path, *args: str, before: str = "") -> subprocess.CompletedProcess[str]:
    """The stand-in ``aerix`` run with ``args``; ``before`` runs ahead of everything in it."""
    program = tmp_path / "aerix"
    program.write_text(before + PROGRAM)
    return subprocess.run(
        [sys.executable, str(program), *args],
        capture_output=True,
        text=True,
        env=_isolated_env(tmp_path),
        timeout=120,
    )


def test_a_long_output_through_a_pipe_is_whole_and_the_status_zero(tmp_path: Path) -> None:
    ended = subprocess.run(
        [AERIX, "sessions", "schema"], capture_output=True, env=_isolated_env(tmp_path), timeout=120
    )
    assert ended.returncode == 0, ended.stderr
    assert len(ended.stdout) > 16_384  # more than a pipe's buffer holds at once
    assert json.loads(ended.stdout) == json.loads(json.dumps(union_json_schema()))


def test_a_failing_command_keeps_its_status_and_its_line(tmp_path: Path) -> None:
    ended = subprocess.run(
        [AERIX, "sessions", "show", "no-such-session"],
        capture_output=True,
        text=True,
        env=_isolated_env(tmp_path),
        timeout=120,
    )
    assert ended.returncode not in (0, 1 << 7)
    assert ended.stderr.count("\n") == 1 and "no-such-session" in ended.stderr, ended.stderr


def test_the_commands_exit_handlers_run_and_the_teardown_does_not(tmp_path: Path) -> None:
    ended = _run_program(tmp_path, "sessions", "list")
    assert ended.returncode == 0, ended.stderr
    assert "handler ran" in ended.stderr
    assert "torn down" not in ended.stderr


def test_a_command_left_by_an_exception_ends_as_python_ends_it(tmp_path: Path) -> None:
    """--version leaves through argparse's SystemExit: no status was returned, so the teardown
    runs as usual (and the finalizer speaks)."""
    ended = _run_program(tmp_path, "--version")
    assert ended.returncode == 0 and ended.stdout.startswith("aerix ")
    assert "torn down" in ended.stderr


def test_a_handler_registered_before_the_command_runs_and_the_ending_is_pythons(tmp_path: Path) -> None:
    """A coverage run or a sitecustomize registers its exit handler before aerix starts: it runs
    after aerix's would, so aerix leaves the ending to Python."""
    early = "import atexit, sys\natexit.register(lambda: sys.stderr.write('early handler ran\\n'))\n"
    ended = _run_program(tmp_path, "sessions", "list", before=early)
    assert ended.returncode == 0, ended.stderr
    assert "early handler ran" in ended.stderr and "handler ran" in ended.stderr
    assert "torn down" in ended.stderr

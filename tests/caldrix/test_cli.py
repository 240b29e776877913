"""The ``caldrix`` command line as a user meets it, through the real console script: Ctrl-C,
usage errors (64, "did you mean"), each subcommand's own help, ``caldrix run MODEL "PROMPT"``
and ``-p`` on stdin, the chat's own commands, and the pool that serves no model.

Answers come from the scripted engine (``--engine scripted --script FILE``) on the real model's
vocabulary and template, so what the model says is chosen and the command's behaviour is what
is checked.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from caldrix import CANCELLED_LINE, CANCELLED_STATUS
from caldrix.cli.exit_codes import EXIT_CANCELLED
from caldrix.cli.pool import NO_MODEL_WARNING
from caldrix.cli.run import CHAT_HELP, CLEARED_LINE
from caldrix.protocol.transport import SOCKET_PATH_MAX_BYTES
from tests.caldrix.test_run_cli import CALDRIX, MODEL, caldrix
from tests.interrupts import interrupt_at

FIRST = "Paris is the capital of France."
LONG = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"


@pytest.fixture
def scripted(tmp_path: Path) -> list[str]:
    """``caldrix run`` flags for a model that answers FIRST, then LONG."""
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([FIRST, LONG]))
    return [MODEL, "--engine", "scripted", "--script", str(script)]


@pytest.mark.parametrize(
    "checkpoint",
    [
        "pydantic",  # the command line's first heavy import
        "caldrix.cli.main",  # parsed; run's own module next
        "caldrix.cli.run",  # everything imported: -p waits for its prompt on stdin
    ],
)
def test_ctrl_c_while_starting_is_one_line_and_130(checkpoint: str) -> None:
    ended = interrupt_at([CALDRIX, "run", MODEL, "-p"], checkpoint)
    assert ended.seen_checkpoint
    assert (ended.returncode, ended.stderr) == (130, "caldrix: cancelled\n")


@pytest.mark.parametrize("delay_ms", [0, 10, 20, 40, 60, 90, 130, 200, 300])
@pytest.mark.parametrize(
    "command",
    [[CALDRIX, "--version"], [CALDRIX, "run", MODEL, "-p"], [sys.executable, "-m", "caldrix", "--version"]],
    ids=["--version", "run -p", "python -m caldrix"],
)
def test_ctrl_c_in_the_first_moments_is_never_a_traceback(command: list[str], delay_ms: int) -> None:
    """From the package's first lines on (they install the handler; what runs before them is
    Python's start-up and pip's wrapper), at several moments: ``caldrix.cli.entry``'s imports,
    the command line's, the command's start. ``--version`` may finish first."""
    ended = interrupt_at(command, "caldrix", delay=delay_ms / 1000)
    assert ended.seen_checkpoint
    assert "Traceback" not in ended.stderr and "KeyboardInterrupt" not in ended.stderr, ended.stderr
    if ended.returncode == 0:
        assert command[-1] == "--version" and ended.stderr == ""
    else:
        assert (ended.returncode, ended.stderr) == (EXIT_CANCELLED, "caldrix: cancelled\n")
    assert (CANCELLED_STATUS, CANCELLED_LINE) == (EXIT_CANCELLED, "caldrix: cancelled")


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["modles", "list"], "argument COMMAND: invalid choice 'modles'; did you mean 'models'?"),
        (["pool", "stp"], "argument ACTION: invalid choice 'stp'; did you mean 'stop'?"),
        (["models", "lst"], "invalid choice 'lst'; did you mean 'list'?"),
        (["run"], "the following arguments are required: MODEL"),
        (["run", MODEL, "--frob"], "unrecognized arguments: --frob"),
        (["run", MODEL, "two", "words"], 'the prompt is one argument: quote it (caldrix run MODEL "PROMPT")'),
        (["pool", "--ctx", "0"], "caldrix: --ctx: input should be greater than or equal to 1"),
        (["pool", "--max-connections", "0"], "caldrix: --max-connections must be 1 or more"),
        (["run", MODEL, "hi", "-p", "ho"], "caldrix: give the prompt once: after the model or after -p"),
    ],
)
def test_a_command_line_that_cannot_be_used_exits_64(words: list[str], said: str) -> None:
    refused = caldrix(*words)
    assert refused.returncode == 64, refused.stderr
    assert "Traceback" not in refused.stderr
    assert said in refused.stderr.splitlines()[-1], refused.stderr


@pytest.mark.parametrize("action", ["stop", "status"])
def test_pool_stop_and_status_have_their_own_help(action: str) -> None:
    shown = caldrix("pool", action, "--help")
    assert shown.returncode == 0
    assert shown.stdout.startswith(f"usage: caldrix pool {action} [-h] [--socket PATH]")
    assert "--ctx" not in shown.stdout and "serving flags" not in shown.stdout
    assert ("--json" in shown.stdout) == (action == "status")


def test_run_model_prompt_answers_once_and_exits(scripted: list[str]) -> None:
    done = caldrix("run", *scripted, "What is the capital of France?")
    assert (done.returncode, done.stdout, done.stderr) == (0, FIRST + "\n", "")


def test_run_p_alone_reads_the_prompt_from_stdin(scripted: list[str]) -> None:
    done = caldrix("run", *scripted, "-p", stdin="What is the capital of France?\n")
    assert (done.returncode, done.stdout) == (0, FIRST + "\n")
    empty = caldrix("run", *scripted, "-p", stdin="\n")
    said = "caldrix: the prompt is empty; give it after -p or on stdin\n"
    assert (empty.returncode, empty.stderr) == (64, said)


def test_a_cut_answer_says_where_it_stopped(scripted: list[str]) -> None:
    done = caldrix("run", *scripted, "--max-new-tokens", "4", "-p", "Say it.")
    assert done.returncode == 0
    assert done.stdout.strip() and FIRST.startswith(done.stdout.strip())
    assert done.stderr == "caldrix: [stopped at 4 tokens]\n"  # stdout keeps the answer alone


def test_the_chat_answers_its_own_commands_and_sends_no_unknown_one(scripted: list[str]) -> None:
    typed = "/help\n/?\n/frobnicate\n/clear\nWhat is the capital?\n//slashes\n/exit\n"
    done = caldrix("run", *scripted, "--max-new-tokens", "10", stdin=typed)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == [
        *CHAT_HELP.split("\n"),
        *CHAT_HELP.split("\n"),
        "unknown command /frobnicate; /help lists the chat's commands",
        CLEARED_LINE,
        # /frobnicate was not sent: the first message gets the first answer
        FIRST,
        "one two three four five six seven eight nine ten",
        "[stopped at 10 tokens]",
        "",
    ]


def test_ctrl_d_leaves_the_shell_prompt_on_its_own_line(scripted: list[str]) -> None:
    controller, terminal = pty.openpty()
    chat = subprocess.Popen(
        [CALDRIX, "run", *scripted],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env={**os.environ, "NO_COLOR": "1", "TERM": "xterm"},
    )
    os.close(terminal)
    _read_until(controller, b"Ctrl-D to leave")
    _wait_for_line_editing(controller)  # readline reads keys now: Ctrl-D is its end of input
    os.write(controller, b"\x04")
    rest = _read_until(controller, None)
    os.close(controller)
    assert chat.wait(timeout=60) == 0
    assert rest.endswith(b"\r\n"), rest  # the cursor is at the start of a line for the shell


def _wait_for_line_editing(fd: int) -> None:
    """Until the prompt's reader (readline) has taken the terminal out of canonical mode."""
    deadline = time.monotonic() + 60
    while termios.tcgetattr(fd)[3] & termios.ICANON:
        assert time.monotonic() < deadline, "the chat never read from its terminal"
        time.sleep(0.05)


def _read_until(fd: int, marker: bytes | None) -> bytes:
    """What the terminal shows until ``marker`` appears (or, with None, until the child closes it)."""
    seen = b""
    while marker is None or marker not in seen:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, f"nothing on the terminal within a minute; so far {seen!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    return seen


def test_a_pool_with_no_load_warns_that_it_serves_no_model(tmp_path: Path) -> None:
    pool = caldrix("pool", "--socket", str(tmp_path / "pool.sock"), "--idle-timeout", "0.5")
    assert pool.returncode == 0
    assert pool.stderr.splitlines()[0] == NO_MODEL_WARNING


def test_an_unwritable_socket_folder_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir(mode=0o500)
    refused = caldrix("pool", "--socket", str(folder / "pool.sock"), "--load", MODEL)
    assert (refused.returncode, refused.stderr) == (
        1,
        f"caldrix: the socket folder {folder} is not writable (mode 500); make it writable "
        f"(chmod u+wx {folder}) or choose another socket with --socket\n",
    )
    assert oct(folder.stat().st_mode & 0o777) == oct(0o500)


def test_a_socket_path_too_long_for_a_unix_socket_is_one_line_before_any_load(tmp_path: Path) -> None:
    """The kernel refuses a socket path past SOCKET_PATH_MAX_BYTES only at the bind, after the
    members loaded, as a bare OSError; the pool refuses it first, in one line, and makes no folder."""
    folder = tmp_path / ("x" * SOCKET_PATH_MAX_BYTES)
    path = folder / "pool.sock"
    refused = caldrix("pool", "--socket", str(path), "--load", "no-such-model-is-loaded")
    assert (refused.returncode, refused.stderr) == (
        1,
        f"caldrix: the socket path {path} is {len(os.fsencode(path))} bytes, longer than the "
        f"{SOCKET_PATH_MAX_BYTES} a Unix socket path may have; choose a shorter one with --socket\n",
    )
    assert not folder.exists()
    # A client is told the same, not "no pool answers" with the kernel's errno.
    status = caldrix("pool", "status", "--socket", str(path))
    assert status.returncode == 1
    assert status.stderr.startswith(f"caldrix: the socket path {path} is ")
    assert status.stderr.endswith("may have; choose a shorter one\n")

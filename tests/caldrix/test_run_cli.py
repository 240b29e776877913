"""``caldrix run``: the real console script on the embedded model, and the chat loop in process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from caldrix.cli.run import Chat, TerminalSink
from caldrix.engine_seam import Engine, GenerationParams, ServingFlags
from caldrix.engines.loader import open_engine
from caldrix.models.references import resolve_model

CALDRIX = str(Path(sys.executable).with_name("caldrix"))
MODEL = "smollm2-135m"


def caldrix(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CALDRIX, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str], expected: str, code: int = 1) -> None:
    assert done.returncode == code
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("caldrix: ") and expected in lines[0], lines[0]


@pytest.mark.model
def test_run_answers_one_prompt_and_exits_0() -> None:
    done = caldrix("run", MODEL, "--max-new-tokens", "24", "-p", "Say hello to a new user in one sentence.")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    # llama.cpp's load log never reaches the terminal: stderr holds only caldrix's own notes (an
    # answer that runs to the bound says "[stopped at 24 tokens]"; whether it does depends on the
    # kernels and threads the CPU computes with).
    assert all(line.startswith("caldrix: ") for line in done.stderr.splitlines()), done.stderr


@pytest.mark.model
def test_run_chats_over_stdin_until_exit() -> None:
    done = caldrix(
        "run",
        MODEL,
        "--max-new-tokens",
        "16",
        stdin="What is the capital of France?\n\nName a colour.\n/exit\nnever asked\n",
    )
    assert done.returncode == 0, done.stderr
    answers = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(answers) >= 2  # one answer a question; the blank line and what follows /exit are not asked


def test_a_bad_reference_is_one_line_and_exit_1(tmp_path: Path) -> None:
    assert_one_line_error(caldrix("run", str(tmp_path / "missing.gguf"), "-p", "hi"), "no model file at")
    assert_one_line_error(caldrix("run", "no-such-model", "-p", "hi"), "unknown model 'no-such-model'")


def test_a_damaged_file_is_one_precheck_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + (1).to_bytes(4, "little") + b"\0" * 64)
    assert_one_line_error(caldrix("run", str(bad), "-p", "hi"), "GGUF version 1 is not supported")


@pytest.mark.parametrize(
    ("flag", "value"), [("--ctx", "-5"), ("--threads", "0"), ("--batch", "0"), ("--max-batch", "2")]
)
def test_a_bad_serving_flag_is_one_line_naming_it(flag: str, value: str) -> None:
    # Refused before any model is opened: llama.cpp's own complaint would blame the file.
    assert_one_line_error(caldrix("run", MODEL, flag, value, "-p", "hi"), f"{flag}: ", code=64)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--batch", "64"], "--flash-attention: needs --batch 128 or more (it is 64)"),
        (["--engine", "ctransformers"], "--flash-attention: only llama.cpp members have it"),
    ],
)
def test_flash_attention_without_room_for_exact_batches_is_one_line(flags: list[str], says: str) -> None:
    assert_one_line_error(caldrix("run", MODEL, "--flash-attention", *flags, "-p", "hi"), says, code=64)


def test_a_model_over_the_memory_limit_is_refused_with_figures() -> None:
    done = caldrix("run", MODEL, "--memory-limit", "1000000", "-p", "hi")
    assert_one_line_error(done, "over the 1 MiB memory limit")


@pytest.fixture(scope="module")
def small_engine() -> Iterator[Engine]:
    engine = open_engine(resolve_model(MODEL).path, ServingFlags(ctx=512))
    yield engine
    engine.close()


class CollectingSink(TerminalSink):
    """A terminal sink writing into a list; cancels after ``cancel_after`` tokens if set."""

    def __init__(self, cancel_after: int | None = None) -> None:
        super().__init__(sys.stdout)
        self.pieces: list[str] = []
        self.cancel_after = cancel_after

    def token(self, text: str) -> None:
        self.pieces.append(text)

    def cancelled(self) -> bool:
        return self.cancel_after is not None and len(self.pieces) >= self.cancel_after


@pytest.mark.model
def test_each_turn_resumes_from_the_live_rows(small_engine: Engine) -> None:
    chat = Chat(small_engine, GenerationParams(max_new_tokens=12), system="Answer briefly.")
    first = chat.ask("Name a fruit.", CollectingSink())
    second = chat.ask("Name a vegetable.", CollectingSink())
    assert first.recomputed_from == 0
    # the second prompt starts with the whole first exchange, which is still in the KV
    assert second.recomputed_from >= first.prompt_tokens
    assert [s["id"] for s in chat.segments] == ["system", "u1", "a1", "u2", "a2"]
    assert chat.segments[2]["text"] == first.text


@pytest.mark.model
def test_a_full_window_drops_the_oldest_exchanges(small_engine: Engine) -> None:
    chat = Chat(small_engine, GenerationParams(max_new_tokens=8), system="Answer briefly.")
    long_message = "Please remember this list: " + ", ".join(f"item {i}" for i in range(60))
    for _ in range(3):
        chat.ask(long_message, CollectingSink())
    ids = [s["id"] for s in chat.segments]
    assert ids[0] == "system" and ids[-2:] == ["u3", "a3"]
    assert "u1" not in ids


@pytest.mark.model
def test_a_cancelled_answer_keeps_what_was_streamed(small_engine: Engine) -> None:
    chat = Chat(small_engine, GenerationParams(max_new_tokens=32))
    sink = CollectingSink(cancel_after=2)
    result = chat.ask("Count from one to twenty.", sink)
    assert result.completion_tokens < 32
    assert chat.segments[-1]["text"] == result.text

"""What tune and sync print while a reflection streams: one progress line per answer (tokens so
far and their rate), the raw text only with --verbose."""

from __future__ import annotations

import io

from aerix.adapters.console.profile_output import StreamObserver


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Ticks:
    """A clock that moves 0.1 s each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.1
        return self.now


def _reflect(observer: StreamObserver, pieces: list[str]) -> None:
    observer.artifact(1, 1, "prompts/routing.md")
    for piece in pieces:
        observer.token(piece)
    observer.answered()


def test_a_pipe_gets_one_line_per_answer_and_none_of_its_text() -> None:
    out, err = io.StringIO(), io.StringIO()
    _reflect(StreamObserver(out, err, clock=Ticks()), ['{"text": "', "It", " is", '"}'] * 25)
    lines = err.getvalue().splitlines()
    assert lines[0] == "[1/1] prompts/routing.md"
    assert lines[1] == "  answer: 100 tokens in 10.0 s, 10.0 tokens/s"
    assert len(lines) == 2 and "It is" not in err.getvalue() and out.getvalue() == ""


def test_a_terminal_redraws_the_line_in_place() -> None:
    err = Terminal()
    _reflect(StreamObserver(io.StringIO(), err, clock=Ticks()), ["x"] * 10)
    text = err.getvalue()
    assert text.count("\r") >= 3 and text.endswith("\r  answer: 10 tokens in 1.0 s, 10.0 tokens/s\n")
    assert "x" not in text


def test_verbose_prints_the_text_as_it_streams() -> None:
    err = io.StringIO()
    _reflect(StreamObserver(io.StringIO(), err, verbose=True, clock=Ticks()), ['{"text": ', '"hi"}'])
    assert err.getvalue() == '[1/1] prompts/routing.md\n{"text": "hi"}\n'

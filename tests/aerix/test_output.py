"""The headless output formats, rendered into strings and compared exactly."""

from __future__ import annotations

import dataclasses
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from aerix.adapters.output import HeadlessOutput, outcome_line, result_object, stream_lines
from aerix.app.ports import RequestPiece, RequestResult, RequestUsage
from aerix.domain import events as ev
from aerix.domain.diffs import FileStat, RequestDiff

AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
DIFF = RequestDiff(
    text="diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n one\n+two\n",
    stats=(FileStat("a.txt", 1, 0),),
    untracked=("new.py",),
)


def result(outcome: str = "done", exit_code: int = 0, diff: RequestDiff = DIFF) -> RequestResult:
    return RequestResult(
        session_id="s1",
        outcome=outcome,
        exit_code=exit_code,
        result="Added two.",
        reason=None,
        route="edit",
        turns=2,
        usage=RequestUsage(900, 40, 2),
        diff=diff,
        duration_ms=1234.5,
        model="m",
        log=Path("/x/s1.jsonl"),
    )


def render(fmt: str, value: RequestResult) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    code = HeadlessOutput(fmt, out, err).finish(value)  # type: ignore[arg-type]
    return out.getvalue(), err.getvalue(), code


def test_text_is_the_answer_a_blank_line_and_the_diff() -> None:
    out, err, code = render("text", result())
    assert out == (
        "Added two.\n\ndiff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n one\n+two\n"
        "untracked: new.py\n"
    )
    assert (err, code) == (
        "aerix: done · route edit · 2 turns · no pieces · 2 files changed (session s1)\n",
        0,
    )


def test_a_request_that_changed_nothing_says_so_and_a_budget_says_why_on_stderr() -> None:
    budget = dataclasses.replace(
        result(), outcome="budget", exit_code=2, reason="out of turns (1)", diff=RequestDiff()
    )
    out, err, code = render("text", budget)
    assert out == "Added two.\n\nno files changed\n"
    line = "budget: out of turns (1) · route edit · 2 turns · no pieces · no files changed"
    assert err == f"aerix: {line} (session s1)\n"
    assert code == 2
    silent = dataclasses.replace(result(), result="", diff=RequestDiff())
    assert render("text", silent)[0] == "no files changed\n"


def test_the_outcome_line_names_the_pieces_and_their_outcomes() -> None:
    pieces = (RequestPiece("a1.c2", "done"), RequestPiece("a1.c4", "failed"), RequestPiece("a1.c5", None))
    one_file = RequestDiff(stats=(FileStat("a.txt", 1, 0),))
    value = dataclasses.replace(result(), turns=1, pieces=pieces, diff=one_file)
    line = "done · route edit · 1 turn · pieces a1.c2 done, a1.c4 failed, a1.c5 not run · 1 file changed"
    assert outcome_line(value) == line
    outside_git = RequestDiff(touched=("a.txt", "b.txt"), in_git=False)
    assert outcome_line(dataclasses.replace(value, diff=outside_git)).endswith(" · 2 files touched")
    unrouted = dataclasses.replace(value, route=None, outcome="failed", reason=None, turns=0)
    assert outcome_line(unrouted).startswith("failed: no reason given · not routed · 0 turns · ")


def test_json_is_one_object_with_claude_codes_keys_first() -> None:
    out, err, code = render("json", result("budget", 2))
    value = json.loads(out)
    assert out.count("\n") == 1 and code == 2
    claude_keys = ["type", "subtype", "is_error", "result", "session_id", "num_turns", "duration_ms", "usage"]
    assert list(value)[:8] == claude_keys
    assert value["subtype"] == "error_max_turns" and value["is_error"] is True
    assert value["usage"] == {"input_tokens": 900, "output_tokens": 40, "generations": 2}
    assert value["diff"]["numstat"] == [{"path": "a.txt", "added": 1, "removed": 0}]
    assert (value["diff"]["files"], value["diff"]["untracked"]) == (2, ["new.py"])
    assert (value["files_changed"], value["pieces"]) == (2, [])
    assert (
        value["outcome_line"]
        == "budget: no reason given · route edit · 2 turns · no pieces · 2 files changed"
    )
    # A failure's one line reaches stderr in json too, as it does in text.
    assert err == f"aerix: {value['outcome_line']} (session s1)\n"
    assert result_object(result())["subtype"] == "success"


def test_json_and_stream_json_keep_stderr_quiet_when_done_and_carry_no_files_changed() -> None:
    pieces = (RequestPiece("a1.c1", "done"),)
    nothing = dataclasses.replace(result(), diff=RequestDiff(), pieces=pieces)
    for fmt in ("json", "stream-json"):
        out, err, code = render(fmt, nothing)
        value = json.loads(out)
        assert (err, code) == ("", 0)
        assert (value["files_changed"], value["pieces"]) == (0, [{"id": "a1.c1", "outcome": "done"}])
        assert value["outcome_line"] == "done · route edit · 2 turns · pieces a1.c1 done · no files changed"
    failed = dataclasses.replace(nothing, outcome="failed", exit_code=1, reason="the pool went away")
    _, err, code = render("stream-json", failed)
    assert err.startswith("aerix: failed: the pool went away · route edit") and err.count("\n") == 1
    assert code == 1


def test_stream_json_lines_shape_turns_like_claude_code() -> None:
    turn = ev.Message(
        seq=5,
        time=AT,
        agent="a1.c3.r1",
        role="assistant",
        turn=1,
        text="{}",
        thought="Look first.",
        calls=[ev.ToolCall(id="c1", tool="read", input={"path": "a.txt"})],
        usage=ev.Usage(prompt_tokens=10, completion_tokens=3, recomputed_from=8),
    )
    [line] = stream_lines(turn)
    assert line == {
        "type": "assistant",
        "agent": "a1.c3.r1",
        "parent_tool_use_id": "a1.c3",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look first."},
                {"type": "tool_use", "id": "a1.c3.r1.c1", "name": "read", "input": {"path": "a.txt"}},
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "recomputed_from": 8},
        },
    }
    tool = ev.Message(seq=6, time=AT, agent="a1", role="tool", text="[read c1] one", call="c1", tool="read")
    assert stream_lines(tool)[0]["message"]["content"] == [
        {"type": "tool_result", "tool_use_id": "a1.c1", "content": "[read c1] one", "is_error": False}
    ]
    route = ev.RouteDecision(seq=2, time=AT, choice="answer", scores={"answer": -0.1})
    assert stream_lines(route)[0] == {
        "type": "system",
        "subtype": "route",
        "seq": 2,
        "time": "2025-01-02T03:04:05Z",
        "v": 2,
        "choice": "answer",
        "scores": {"answer": -0.1},
    }


def test_the_banner_is_one_line_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    start = ev.SessionStart(
        seq=1,
        time=AT,
        session="s1",
        cwd="/p",
        project="k",
        model="m",
        prompt="hi",
        aerix_version="0.1.0",
        window=8192,
        request=2,
        resumed=True,
    )
    HeadlessOutput("stream-json", out, err).event(start)
    assert err.getvalue() == "aerix 0.1.0 · m, 8192 tokens · session s1 (resumed, request 2)\n"
    assert json.loads(out.getvalue()) == {
        "type": "system",
        "subtype": "init",
        "session_id": "s1",
        "cwd": "/p",
        "model": "m",
        "request": 2,
        "resumed": True,
    }


class TerminalOut(io.StringIO):
    """stdout as a terminal sees it: rich asks ``isatty``."""

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_diff_is_in_git_s_colours(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    out = TerminalOut()
    HeadlessOutput("text", out, io.StringIO()).finish(result())
    bold, green, cyan, dim, reset = "\x1b[1m", "\x1b[32m", "\x1b[36m", "\x1b[2m", "\x1b[0m"
    assert out.getvalue() == (
        "Added two.\n\n"
        f"{bold}diff --git a/a.txt b/a.txt{reset}\n"
        f"{bold}--- a/a.txt{reset}\n"
        f"{bold}+++ b/a.txt{reset}\n"
        f"{cyan}@@ -1 +1,2 @@{reset}\n"
        " one\n"
        f"{green}+two{reset}\n"
        f"{dim}untracked: new.py{reset}\n"
    )
    monkeypatch.setenv("NO_COLOR", "1")
    plain = TerminalOut()
    HeadlessOutput("text", plain, io.StringIO()).finish(result())
    assert "\x1b[3" not in plain.getvalue()  # NO_COLOR: no colours (rich keeps bold and dim)

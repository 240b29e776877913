"""The headless output formats, rendered into strings and compared exactly."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk._internal.message_parser import parse_message

from aerix.adapters.claude.output import HeadlessOutput, error_object, outcome_line, result_object
from aerix.app.ports.request import RequestPiece, RequestResult, RequestUsage
from aerix.domain import events as ev
from aerix.domain.claude_format import message_id, record_uuid, session_namespace
from aerix.domain.diffs import FileStat, RequestDiff
from aerix.projections.claude_stream import ClaudeStream

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
        usage=RequestUsage(900, 40, 2, reused_tokens=600, pool_ms=750.4),
        diff=diff,
        duration_ms=1234.5,
        model="m",
        log=Path("/x/s1.jsonl"),
    )


def render(fmt: str, value: RequestResult) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    code = HeadlessOutput(fmt, out, err, ClaudeStream()).finish(value)  # type: ignore[arg-type]
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
    claude_keys = [
        *("type", "subtype", "is_error", "duration_ms", "duration_api_ms", "num_turns", "stop_reason"),
        *("session_id", "total_cost_usd", "usage", "modelUsage", "permission_denials", "uuid", "errors"),
    ]
    assert list(value)[: len(claude_keys)] == claude_keys
    assert value["subtype"] == "error_max_turns" and value["is_error"] is True and "result" not in value
    assert value["errors"] == ["budget: no reason given"]
    assert (value["duration_ms"], value["duration_api_ms"], value["total_cost_usd"]) == (1234, 750, 0)
    assert value["usage"] == {
        "input_tokens": 300,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 600,
        "output_tokens": 40,
    }
    assert value["modelUsage"]["m"]["inputTokens"] == 300 and value["generations"] == 2
    assert value["diff"]["numstat"] == [{"path": "a.txt", "added": 1, "removed": 0}]
    assert (value["diff"]["files"], value["diff"]["untracked"]) == (2, ["new.py"])
    assert (value["files_changed"], value["pieces"]) == (2, [])
    assert (
        value["outcome_line"]
        == "budget: no reason given · route edit · 2 turns · no pieces · 2 files changed"
    )
    # A failure's one line reaches stderr in json too, as it does in text.
    assert err == f"aerix: {value['outcome_line']} (session s1)\n"
    done = result_object(result())
    assert (done["subtype"], done["result"], done["stop_reason"]) == ("success", "Added two.", "end_turn")
    assert "errors" not in done


START = ev.SessionStart(
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


def session_lines(*records: ev.EventBase) -> list[dict[str, Any]]:
    stream = ClaudeStream()
    lines = []
    for record in (START, *records):
        stream.take(record)
        lines += stream.lines(record)
    return lines


def show(output: HeadlessOutput, *records: ev.EventBase) -> None:
    """Each record as a request hands it to the output: to its projections, then to it."""
    for record in records:
        for view in output.projections().values():
            view.take(record)
        output.event(record)


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
    spawn = ev.AgentSpawn(
        seq=2, time=AT, agent="a1.c3.r1", parent="a1", call="c3", kind="implementer", model="small"
    )
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
    tool = ev.Message(seq=6, time=AT, agent="a1", role="tool", text="[read c1] one", call="c1", tool="read")
    route = ev.RouteDecision(seq=7, time=AT, choice="answer", scores={"answer": -0.1})
    _, spawned, assistant, result_line, route_line = session_lines(spawn, turn, tool, route)
    assert spawned["subtype"] == "agent.spawn" and spawned["agent"] == "a1.c3.r1"
    assert assistant == {
        "type": "assistant",
        "message": {
            "model": "small",
            "id": message_id(session_namespace("s1"), 5),
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look first.", "signature": ""},
                {
                    "type": "tool_use",
                    "id": "toolu_a1_c3_r1_c1",
                    "name": "Read",
                    "input": {"file_path": "/p/a.txt"},
                },
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 2,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 8,
                "output_tokens": 3,
            },
        },
        "parent_tool_use_id": "toolu_a1_c3",
        "uuid": record_uuid(session_namespace("s1"), 5),
        "session_id": "s1",
        "agent": "a1.c3.r1",
    }
    assert result_line["type"] == "user" and result_line["parent_tool_use_id"] is None
    assert result_line["message"]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_a1_c1", "content": "[read c1] one"}
    ]
    assert route_line == {
        "type": "system",
        "subtype": "route",
        "uuid": record_uuid(session_namespace("s1"), 7),
        "session_id": "s1",
        "seq": 7,
        "time": "2025-01-02T03:04:05Z",
        "v": 2,
        "choice": "answer",
        "scores": {"answer": -0.1},
    }


@pytest.mark.parametrize(("threads", "words"), [(2, ", 2 threads"), (1, ", 1 thread"), (None, "")])
def test_the_banner_names_the_threads_the_main_member_computes_on(threads: int | None, words: str) -> None:
    """The figure ``member.list`` reported, recorded in ``session.start``; none when unknown."""
    err = io.StringIO()
    start = START.model_copy(update={"threads": threads, "request": 1, "resumed": False})
    show(HeadlessOutput("text", io.StringIO(), err, ClaudeStream()), start)
    assert err.getvalue() == f"aerix 0.1.0 · m, 8192 tokens{words} · session s1 (new)\n"


def test_the_banner_is_one_line_on_stderr_and_init_names_claudes_fields() -> None:
    out, err = io.StringIO(), io.StringIO()
    show(HeadlessOutput("stream-json", out, err, ClaudeStream()), START)
    assert err.getvalue() == "aerix 0.1.0 · m, 8192 tokens · session s1 (resumed, request 2)\n"
    init = json.loads(out.getvalue())
    assert {key: init[key] for key in ("type", "subtype", "session_id", "cwd", "model", "request")} == {
        "type": "system",
        "subtype": "init",
        "session_id": "s1",
        "cwd": "/p",
        "model": "m",
        "request": 2,
    }
    assert init["permissionMode"] == "bypassPermissions" and init["resumed"] is True
    assert re.fullmatch(r"\d+\.\d+\.\d+", init["claude_code_version"])


def test_every_line_of_every_event_kind_parses_with_the_agent_sdks_parser() -> None:
    """A session with each kind of line the formats print (a subagent's turn, a verdict, a turn
    that did not parse, an error result, a result of a request that could not start), through
    the Claude Agent SDK's own parser."""
    spawn = ev.AgentSpawn(seq=2, time=AT, agent="a1.c1", parent="a1", call="c1", kind="implementer")
    verdict = ev.Message(
        seq=3, time=AT, agent="a1.c1.v1", role="assistant", text="{}", verdict="fail", reason="no test"
    )
    unparsed = ev.Message(
        seq=4,
        time=AT,
        agent="a1",
        role="assistant",
        text="{oops",
        parse_error="not JSON",
        usage=ev.Usage(prompt_tokens=5, completion_tokens=2),
    )
    failed = ev.Message(seq=5, time=AT, agent="a1.c1", role="tool", text="boom", call="c2", is_error=True)
    hook = ev.Hook(seq=6, time=AT, event="Stop", outcome="blocked", reason="keep going")
    lines = session_lines(spawn, verdict, unparsed, failed, hook)
    lines += [result_object(result("budget", 2)), result_object(result()), error_object("no pool", 1)]
    parsed = [parse_message(line) for line in lines]
    assert [type(message).__name__ for message in parsed] == [
        *("SystemMessage", "SystemMessage", "AssistantMessage", "AssistantMessage", "UserMessage"),
        *("SystemMessage", "ResultMessage", "ResultMessage", "ResultMessage"),
    ]
    assert parsed[2].parent_tool_use_id == "toolu_a1_c1"  # the verifier of the piece a1.c1
    assert parsed[3].content[0].text == "{oops" and lines[3]["parse_error"] == "not JSON"
    assert parsed[4].content[0].is_error is True
    assert [(p.subtype, p.errors) for p in parsed[6:]] == [
        ("error_max_turns", ["budget: no reason given"]),
        ("success", None),
        ("error_during_execution", ["no pool"]),
    ]


def test_json_splits_the_usage_by_the_model_each_generation_ran_on() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = HeadlessOutput("json", out, err, ClaudeStream())
    spawn = ev.AgentSpawn(
        seq=2, time=AT, agent="a1.c1", parent="a1", call="c1", kind="implementer", model="small"
    )
    piece = ev.Message(
        seq=3,
        time=AT,
        agent="a1.c1",
        role="assistant",
        text="{}",
        final="ok",
        usage=ev.Usage(prompt_tokens=50, completion_tokens=5, recomputed_from=40),
    )
    root = ev.Message(
        seq=4,
        time=AT,
        agent="a1",
        role="assistant",
        text="{}",
        final="done",
        usage=ev.Usage(prompt_tokens=900, completion_tokens=35, recomputed_from=560),
    )
    show(output, START, spawn, piece, root)
    output.finish(result())
    value = json.loads(out.getvalue())  # only the result: json prints nothing as it goes
    assert {
        model: (u["inputTokens"], u["cacheReadInputTokens"], u["outputTokens"])
        for model, u in value["modelUsage"].items()
    } == {
        "small": (10, 40, 5),
        "m": (340, 560, 35),
    }
    assert value["modelUsage"]["m"]["contextWindow"] == 8192


class TerminalOut(io.StringIO):
    """stdout as a terminal sees it: rich asks ``isatty``."""

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_diff_is_in_git_s_colours(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    out = TerminalOut()
    HeadlessOutput("text", out, io.StringIO(), ClaudeStream()).finish(result())
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
    HeadlessOutput("text", plain, io.StringIO(), ClaudeStream()).finish(result())
    assert "\x1b[3" not in plain.getvalue()  # NO_COLOR: no colours (rich keeps bold and dim)

"""The Claude Code transcript projection, record by record, against what Claude Code 2.1 writes
(the real transcripts in tests/fixtures/claude-code)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

from aerix.domain import events as ev
from aerix.domain.claude_tools import claude_project_dir_name
from aerix.projections.claude_results import tool_use_result
from aerix.projections.transcript import ClaudeTranscript
from tests.aerix.session_streams import T0, start_session

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude-code"
SESSION = "0f9c1c7e-3d7b-4f8e-9d61-2b7a4c55e0aa"
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")


def _session() -> list[ev.EventBase]:
    """A request with a re-asked turn, a turn of two calls, a hook's context, a runtime note,
    a compaction and a subagent."""
    s = start_session(SESSION, cwd="/work/proj", model="qwen2.5-0.5b-instruct", git_branch="feature")
    at = T0

    def rec(cls: type[ev.EventBase], **fields: Any) -> None:
        nonlocal at
        at += timedelta(seconds=1)
        s.record(cls, at, **fields)

    rec(ev.AgentSpawn, agent="a1", kind="root", model="qwen2.5-0.5b-instruct")
    rec(ev.Segment, agent="a1", id="a1.hook1", role="user", kind="hook", text="# Hook context\nbe brief")
    rec(ev.Segment, agent="a1", id="a1.p1", role="user", kind="prompt", text="fix the bug")
    bad = ev.Usage(prompt_tokens=40, completion_tokens=7, recomputed_from=0, member="main")
    rec(ev.Message, agent="a1", role="assistant", turn=1, text="{bad", parse_error="unclosed", usage=bad)
    rec(ev.Segment, agent="a1", id="a1.n1", role="user", kind="prompt", text="answer with one JSON object")
    calls = [
        ev.ToolCall(id="c1", tool="read", input={"path": "a.py"}),
        ev.ToolCall(id="c2", tool="bash", input={"command": "ls", "timeout_secs": 5}),
    ]
    usage = ev.Usage(prompt_tokens=105, completion_tokens=20, recomputed_from=40, member="main")
    rec(ev.Message, agent="a1", role="assistant", turn=1, text="{}", thought="look", calls=calls, usage=usage)
    rec(ev.Message, agent="a1", role="tool", text="[read c1]\n1\tprint(1)", call="c1", tool="read")
    rec(ev.Message, agent="a1", role="tool", text="[bash c2]\na.py\n[exit 0]", call="c2", tool="bash")
    rec(ev.Compaction, agent="a1", tokens_before=425, tokens_after=137)
    rec(ev.Segment, agent="a1", id="a1.n2", role="user", kind="prompt", text="the context was compacted")
    agent_call = [ev.ToolCall(id="c3", tool="agent", input={"brief": "fix a.py"})]
    usage2 = ev.Usage(prompt_tokens=140, completion_tokens=9, recomputed_from=130, member="main")
    rec(ev.Message, agent="a1", role="assistant", turn=2, text="{}", calls=agent_call, usage=usage2)
    rec(ev.AgentSpawn, agent="a1.c3", parent="a1", kind="implementer", call="c3", model="tiny-coder")
    rec(ev.Segment, agent="a1.c3", id="a1.c3.brief", role="user", kind="brief", text="fix a.py", pinned=True)
    usage3 = ev.Usage(prompt_tokens=50, completion_tokens=10, member="small")
    rec(ev.Message, agent="a1.c3", role="assistant", turn=1, text="{}", final="fixed", usage=usage3)
    rec(ev.AgentEnd, agent="a1.c3", outcome="done", turns=1, summary="fixed")
    result = '[agent c3]\n{"outcome": "done", "summary": "fixed"}'
    rec(ev.Message, agent="a1", role="tool", text=result, call="c3", tool="agent")
    usage4 = ev.Usage(prompt_tokens=160, completion_tokens=3, recomputed_from=150, member="main")
    rec(ev.Message, agent="a1", role="assistant", turn=3, text="{}", final="done", usage=usage4)
    rec(ev.AgentEnd, agent="a1", outcome="done", turns=3)
    return s.take_new_records()


def _transcript() -> ClaudeTranscript:
    transcript = ClaudeTranscript()
    transcript.feed(_session())
    return transcript


def _content(record: dict[str, Any]) -> Any:
    return record["message"]["content"]


def test_records_carry_claude_codes_envelope() -> None:
    transcript = _transcript()
    records = transcript.records
    for record in records:
        assert SEMVER.match(record["version"]), record["version"]
        assert record["sessionId"] == SESSION and record["cwd"] == "/work/proj"
        assert record["gitBranch"] == "feature" and record["isSidechain"] is False
    uuids = [record["uuid"] for record in records]
    assert len(set(uuids)) == len(uuids)
    assert len({value[:8] for value in uuids}) == len(uuids), "uuids must differ from their first characters"


def test_each_record_follows_the_one_before_it() -> None:
    records = _transcript().records
    boundary = next(index for index, record in enumerate(records) if record["type"] == "system")
    assert records[0]["parentUuid"] is None and records[boundary]["parentUuid"] is None
    for index, record in enumerate(records):
        if index not in (0, boundary):
            assert record["parentUuid"] == records[index - 1]["uuid"], index
    assert records[boundary]["logicalParentUuid"] == records[boundary - 1]["uuid"]
    assert records[boundary]["compactMetadata"] == {"trigger": "auto", "preTokens": 425}


def test_one_generation_is_one_record_a_block_with_its_usage_once() -> None:
    records = _transcript().records
    by_message: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        if record["type"] == "assistant":
            by_message[record["message"]["id"]].append(record)
    failed, calls, agent_call, final = by_message.values()
    # A turn that failed to parse is recorded with its tokens.
    assert _content(failed[0]) == [{"type": "text", "text": "{bad"}]
    assert failed[0]["message"]["usage"]["output_tokens"] == 7
    # thinking (with its signature field), then one tool_use a record, one message id and request.
    assert [_content(record)[0]["type"] for record in calls] == ["thinking", "tool_use", "tool_use"]
    assert "signature" in _content(calls[0])[0]
    assert len({record["requestId"] for record in calls}) == 1
    assert all(record["requestId"].startswith("req_") for record in calls)
    assert [("usage" in r["message"], r["message"]["stop_reason"]) for r in calls] == [
        (False, None),
        (False, None),
        (True, "tool_use"),
    ]
    assert calls[-1]["message"]["usage"] == {
        "input_tokens": 65,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 40,
        "output_tokens": 20,
    }
    assert final[-1]["message"]["stop_reason"] == "end_turn"
    assert {record["message"]["model"] for record in records if record["type"] == "assistant"} == {
        "qwen2.5-0.5b-instruct"
    }
    assert len({failed[0]["message"]["id"], calls[0]["message"]["id"], agent_call[0]["message"]["id"]}) == 3


def test_tool_results_name_their_call_and_carry_the_tools_shape() -> None:
    records = _transcript().records
    uses = {
        _content(record)[0]["id"]: record
        for record in records
        if record["type"] == "assistant" and _content(record)[0]["type"] == "tool_use"
    }
    read_use = _content(uses["toolu_a1_c1"])[0]
    assert read_use["name"] == "Read" and read_use["input"] == {"file_path": "/work/proj/a.py"}
    assert _content(uses["toolu_a1_c2"])[0]["input"] == {"command": "ls", "timeout": 5000}
    results = [r for r in records if r["type"] == "user" and isinstance(_content(r), list)]
    read, bash, task = results
    assert read["sourceToolAssistantUUID"] == uses["toolu_a1_c1"]["uuid"]
    assert bash["sourceToolAssistantUUID"] == uses["toolu_a1_c2"]["uuid"]
    assert read["toolUseResult"]["file"]["filePath"] == "/work/proj/a.py"
    assert _content(read)[0]["content"] == "1\tprint(1)"  # the output alone, as Claude Code's
    assert bash["toolUseResult"] == {"stdout": "a.py", "stderr": "", "interrupted": False, "isImage": False}
    assert task["toolUseResult"]["status"] == "completed"
    # The subagent's run as Claude Code reports it: 4 s from spawn to result, no tool calls, its
    # last response's usage and that usage's total.
    assert {
        key: task["toolUseResult"][key] for key in ("totalDurationMs", "totalTokens", "totalToolUseCount")
    } == {
        "totalDurationMs": 4000,
        "totalTokens": 60,
        "totalToolUseCount": 0,
    }
    assert task["toolUseResult"]["usage"]["output_tokens"] == 10
    real_task = next(
        json.loads(line)["toolUseResult"]
        for line in (FIXTURES / "spotter_main.jsonl").read_text(encoding="utf-8").splitlines()
        if "totalToolUseCount" in line
    )
    assert list(task["toolUseResult"]) == list(real_task)
    assert task["toolUseResult"]["agentId"] == "a1.c3"
    assert _content(uses["toolu_a1_c3"])[0]["name"] == "Agent"


def test_runtime_notes_and_hook_context_are_meta() -> None:
    records = _transcript().records
    prompts = [(r["message"]["content"], r.get("isMeta", False)) for r in records if r["type"] == "user"]
    prompts = [(text, meta) for text, meta in prompts if isinstance(text, str)]
    assert prompts == [
        ("# Hook context\nbe brief", True),
        ("fix the bug", False),
        ("answer with one JSON object", True),
        ("the context was compacted", True),
    ]


def test_subagents_have_their_own_records() -> None:
    transcript = _transcript()
    agent_id = "a1.c3"  # the agent_id hooks are given, so a hook finds its agent's file
    assert list(transcript.subagents) == [agent_id]
    side = transcript.subagents[agent_id]
    assert all(record["isSidechain"] and record["agentId"] == agent_id for record in side)
    assert side[0]["parentUuid"] is None and side[1]["parentUuid"] == side[0]["uuid"]
    assert side[1]["message"]["model"] == "tiny-coder"
    assert not any(record["isSidechain"] for record in transcript.records)


def test_a_rebuild_gives_the_same_records() -> None:
    first, again = _transcript(), _transcript()
    assert again.records == first.records and again.subagents == first.subagents


def _shape(record: dict[str, Any]) -> tuple[Any, ...]:
    content = record.get("message", {}).get("content")
    return (
        record["type"],
        record.get("subtype"),
        isinstance(content, str),
        "toolUseResult" in record,
        bool(record.get("isMeta")),
        bool(record.get("isCompactSummary")),
        record["isSidechain"],
    )


def test_records_have_the_keys_claude_code_writes_in_its_order() -> None:
    """Every key a record has is one Claude Code 2.1 writes on records of its type, in the
    order of a real record of the same shape."""
    keys: dict[str, set[str]] = defaultdict(set)
    orders: dict[tuple[Any, ...], list[str]] = {}
    for name in ("spotter_main.jsonl", "spotter_sub.jsonl", "spotter_compact.jsonl"):
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            keys[record["type"]] |= set(record)
            if record["type"] in ("user", "assistant", "system"):
                orders.setdefault(_shape(record), list(record))
    transcript = _transcript()
    compared = 0
    for record in [*transcript.records, *next(iter(transcript.subagents.values()))]:
        assert set(record) <= keys[record["type"]], set(record) - keys[record["type"]]
        shape = _shape(record)  # a main-chain meta record has a real counterpart in a sidechain
        order = orders.get(shape) or orders.get((*shape[:-1], not shape[-1]))
        if order is not None:
            compared += 1
            assert [key for key in record if key in order] == [key for key in order if key in record]
    assert compared == len(transcript.records) + 2


def test_project_folder_names_follow_claude_code() -> None:
    assert claude_project_dir_name("/home/user/work/my-repo") == "-home-user-work-my-repo"
    assert claude_project_dir_name("/Users/ali/.claude/projects") == "-Users-ali--claude-projects"
    assert claude_project_dir_name("/tmp/ça va 🙂") == "-tmp--a-va---"  # 🙂 is two UTF-16 units
    # Past 200 characters: cut, then Claude Code's hash of the whole path (JavaScript's string
    # hash in base 36; these values are what that computation gives).
    assert claude_project_dir_name("/" + "x" * 300) == "-" + "x" * 199 + "-x8zr69"
    assert claude_project_dir_name("/home/" + "é" * 250).endswith("-8wvvlt")


def test_tool_use_results_take_each_tools_shape() -> None:
    write = tool_use_result(
        "write", {"file_path": "/w/a.py", "content": "x\n"}, "replaced a.py (2 bytes, 1 lines)", False
    )
    assert write == {
        "type": "update",
        "filePath": "/w/a.py",
        "content": "x\n",
        "structuredPatch": [],
        "originalFile": None,
    }
    edit = tool_use_result(
        "edit",
        {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"},
        "edited a.py: replaced 1",
        False,
    )
    assert (edit["filePath"], edit["oldString"], edit["newString"], edit["replaceAll"]) == (
        "/w/a.py",
        "a",
        "b",
        False,
    )
    assert tool_use_result("glob", {"pattern": "*.py"}, "a.py\nb/c.py", False)["filenames"] == [
        "a.py",
        "b/c.py",
    ]
    assert tool_use_result("glob", {"pattern": "*.go"}, "no files match *.go", False)["numFiles"] == 0
    grep = tool_use_result(
        "grep", {"pattern": "x"}, "a.py:1: x = 1\nb.py:4: x()\n[stopped after 2 matches; …]", False
    )
    assert (grep["numFiles"], grep["filenames"], grep["numLines"]) == (2, ["a.py", "b.py"], 2)
    timed_out = tool_use_result("bash", {"command": "sleep 9"}, "partial\n[timeout after 5s]", False)
    assert timed_out["stdout"] == "partial" and timed_out["interrupted"] is True
    job = tool_use_result(
        "bash", {"command": "make", "run_in_background": True}, "started job j1 (make)", False
    )
    assert job["backgroundTaskId"] == "j1" and job["stdout"] == ""
    assert (
        tool_use_result("read", {"file_path": "/w/nope"}, "no such file: nope", True)
        == "Error: no such file: nope"
    )
    assert tool_use_result("repo_map", {}, "a.py\n  def f", False) == "a.py\n  def f"

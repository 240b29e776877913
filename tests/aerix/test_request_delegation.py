"""``aerix -p`` with delegation, end to end: the real console script in a temporary git
repository, a real caldrix pool whose main member is scripted (the real tokenizer, template and
constraints; answers chosen here). A request routed ``edit`` makes the root a planner, which
delegates; the piece's implementer writes the file and its verifier checks it.

What the request prints and keeps must include the piece: the diff's ``untracked:`` line for the
file the implementer wrote, stream-json lines for the subagents with their parent tool-use id,
the Claude Code transcript's subagent files, ``aerix sessions show`` indenting the piece, and a
``--continue`` that rebuilds the root alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.queries import load_for_resume
from tests.aerix.request_world import (
    World,
    aerix,
    make_project,
    make_world,
    session_events,
    start_scripted_pool,
    stop_pool,
)

pytestmark = [pytest.mark.e2e]

BRIEF = "Create hello.txt holding the line hi."
CHECK = "cat hello.txt prints hi"


def _turn(thought: str, tool: str, tool_input: dict[str, Any]) -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": tool, "input": tool_input}]})


def _final(thought: str, text: str) -> str:
    return json.dumps({"thought": thought, "final": text})


PIECE = [
    _turn("Delegate the file.", "agent", {"brief": BRIEF, "check": CHECK}),
    _turn("Write it.", "write", {"path": "hello.txt", "content": "hi\n"}),
    _final("Written.", "I wrote hello.txt."),
    _turn("Run the check.", "bash", {"command": "cat hello.txt"}),
    json.dumps({"thought": "It prints hi.", "final": {"verdict": "pass", "reason": "cat printed hi"}}),
    _final("The piece passed.", "hello.txt is in place."),
]


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[tuple[World, Path, Path]]:
    """A world, a git project whose settings name its own pool socket, and that socket."""
    socket = tmp_path / "run" / "pool.sock"
    world = make_world(tmp_path / "world", {"pool": {"socket": str(socket)}})
    proj = make_project(tmp_path / "proj", {"README.md": "# Demo\n"})
    (proj / ".aerix" / "agents").mkdir(parents=True)
    (proj / ".aerix" / "agents" / "tidy.md").write_text(
        "---\nname: tidy\ndescription: Tidies files\n---\nTidy.\n"
    )
    (proj / ".git" / "info" / "exclude").write_text(".aerix/\n")
    try:
        yield world, proj, socket
    finally:
        stop_pool(world, socket)


def by_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def test_an_edit_request_delegates_and_its_output_includes_the_piece(
    scripted: tuple[World, Path, Path],
) -> None:
    world, proj, socket = scripted
    start_scripted_pool(world, socket, ["edit", *PIECE])
    done = aerix(world, proj, "-p", "create hello.txt", "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    result = lines[-1]
    assert (result["outcome"], result["route"], result["result"]) == (
        "done",
        "edit",
        "hello.txt is in place.",
    )
    assert (proj / "hello.txt").read_text() == "hi\n"
    # The implementer's file is in the request's diff.
    assert result["diff"]["untracked"] == ["hello.txt"]

    # stream-json: the root's agent call, then the subagents' turns and results under it.
    root_call = next(
        block
        for line in lines
        if line["type"] == "assistant" and line["agent"] == "a1"
        for block in line["message"]["content"]
        if block["type"] == "tool_use"
    )
    assert (root_call["id"], root_call["name"]) == ("toolu_a1_c1", "Agent")  # Claude Code's names
    subagent_lines = [
        line for line in lines if line["type"] in ("assistant", "user") and line["agent"] != "a1"
    ]
    assert {line["agent"] for line in subagent_lines} == {"a1.c1", "a1.c1.v1"}
    assert {line["parent_tool_use_id"] for line in subagent_lines} == {"toolu_a1_c1"}
    root_lines = [line for line in lines if line["type"] in ("assistant", "user") and line["agent"] == "a1"]
    assert root_lines and all(line["parent_tool_use_id"] is None for line in root_lines)
    spawned = [line["agent"] for line in lines if line.get("subtype") == "agent.spawn"]
    assert spawned == ["a1", "a1.c1", "a1.c1.v1"]
    [piece] = [
        block
        for line in lines
        if line["type"] == "user" and line["agent"] == "a1"
        for block in line["message"]["content"]
    ]
    assert piece["tool_use_id"] == "toolu_a1_c1"
    assert json.loads(piece["content"].split("\n", 1)[1])["outcome"] == "done"
    # The result names the piece and how it ended, and so does its outcome line.
    assert (result["pieces"], result["files_changed"]) == ([{"id": "a1.c1", "outcome": "done"}], 1)
    assert result["outcome_line"] == "done · route edit · 2 turns · pieces a1.c1 done · 1 file changed"

    session = result["session_id"]
    events = session_events(world, session)
    [agent_result] = [e for e in by_type(events, "message") if e.get("tool") == "agent"]
    assert (agent_result["agent"], agent_result["call"], agent_result["outcome"]) == ("a1", "c1", "done")
    system = next(e for e in by_type(events, "segment") if e["kind"] == "system")
    assert "# Agent definitions" in system["text"] and "- tidy: Tidies files" in system["text"]
    # Every segment and message names its agent.
    assert all(e.get("agent") for e in events if e["type"] in ("segment", "message"))

    # The Claude Code transcript: the call as Claude's Agent (Task) call, each subagent in a file
    # of its own.
    rebuilt = aerix(world, proj, "sessions", "rebuild", session)
    assert rebuilt.returncode == 0, rebuilt.stderr
    [folder] = [p.parent for p in world.sessions.glob(f"*/{session}.jsonl")]
    main = [json.loads(line) for line in (folder / f"{session}.claude.jsonl").read_text().splitlines()]
    assert not any(record["isSidechain"] for record in main)
    task = next(
        block
        for record in main
        if record["type"] == "assistant"
        for block in record["message"]["content"]
        if block["type"] == "tool_use"
    )
    assert task["name"] == "Agent"  # Claude Code's name since 2.1.63 (Task before)
    assert task["input"] == {
        "description": BRIEF,
        "subagent_type": "general-purpose",
        "prompt": BRIEF,
        "check": CHECK,
    }
    task_result = next(r for r in main if isinstance(r.get("toolUseResult"), dict))
    assert task_result["toolUseResult"]["agentId"] == "a1.c1"
    assert task_result["toolUseResult"]["status"] == "completed"
    assert task_result["message"]["content"][0]["tool_use_id"] == task["id"]
    subagents = folder / session / "subagents"
    assert sorted(p.name for p in subagents.iterdir()) == ["agent-a1.c1.jsonl", "agent-a1.c1.v1.jsonl"]
    implementer = [json.loads(line) for line in (subagents / "agent-a1.c1.jsonl").read_text().splitlines()]
    assert all(r["isSidechain"] is True and r["agentId"] == "a1.c1" for r in implementer)
    assert implementer[0]["parentUuid"] is None and implementer[0]["type"] == "user"
    assert implementer[0]["message"]["content"].startswith(f"# Your task\n{BRIEF}")

    # sessions show: the piece's lines indented under the root's.
    shown = aerix(world, proj, "sessions", "show", session)
    assert shown.returncode == 0, shown.stderr
    show = shown.stdout.splitlines()
    spawn_line = next(line for line in show if "a1.c1 spawned (implementer" in line)
    root_line = next(line for line in show if "a1 spawned (root)" in line)
    assert spawn_line.index("a1.c1") == root_line.index("a1 spawned") + 2
    verifier_line = next(line for line in show if "a1.c1.v1 ended done (verdict pass)" in line)
    assert verifier_line.index("a1.c1.v1") == root_line.index("a1 spawned") + 2

    # sessions rm takes the subagent files too.
    removed = aerix(world, proj, "sessions", "rm", session)
    assert removed.returncode == 0, removed.stderr
    assert not (folder / session).exists()


def test_text_output_shows_the_subagents_file_and_continue_rebuilds_the_root_only(
    scripted: tuple[World, Path, Path],
) -> None:
    world, proj, socket = scripted
    start_scripted_pool(world, socket, ["edit", *PIECE, "answer", _final("Nothing more.", "all done")])
    done = aerix(world, proj, "-p", "create hello.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello.txt is in place.\n\nuntracked: hello.txt\n"

    files = SessionFiles(world.sessions)
    [ref] = files.catalog.refs()
    resume = load_for_resume(files, ref.id)
    files.log.close()
    root_ids = [segment.id for segment in resume.root.ordered()]
    assert root_ids == ["a1.system", "a1.p1", "a1.m1", "a1.c1", "a1.m2"]

    again = aerix(world, proj, "-p", "anything else?", "--continue", "--output-format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["result"] == "all done"
    events = session_events(world, ref.id)
    second = [e for e in events if e["seq"] > by_type(events, "session.start")[-1]["seq"]]
    # Request 2 spawned the root alone: no subagent was resumed.
    assert [e["agent"] for e in by_type(second, "agent.spawn")] == ["a1"]
    assert [e["id"] for e in by_type(second, "segment")][:1] == ["a1.p2"]

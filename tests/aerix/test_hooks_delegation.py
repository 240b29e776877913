"""Hooks around delegation under ``aerix -p``: the real console script on a real scripted pool,
hook scripts as real processes (``cchooks`` where Claude Code users would use it), configured in
``.claude/settings.json``. An ``edit`` request's root delegates one piece; the hooks fire around
its agents (SubagentStart, SubagentStop, AgentSpawn, Verify) and around the ``agent`` call like
around any tool (PreToolUse, PostToolUse)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.aerix.request_world import World, make_world, stop_pool
from tests.aerix.test_hooks_e2e import Project, final, of, results, turn

pytestmark = [pytest.mark.model, pytest.mark.e2e]

BRIEF = "Create hello.txt holding the line hi."
CHECK = "cat hello.txt prints hi"


def verdict(passed: bool, reason: str) -> str:
    return json.dumps(
        {"thought": "Checked.", "final": {"verdict": "pass" if passed else "fail", "reason": reason}}
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("hooks-delegation")
    yield make_world(root, {"context": {"max_new_tokens": 256}, "delegation": {"max_turns": 8}})


@pytest.fixture
def project(world: World, tmp_path: Path) -> Iterator[Project]:
    made = Project(world, tmp_path)
    yield made
    stop_pool(world, made.socket)


SUBAGENT_START = """\
import json, sys

payload = json.load(sys.stdin)
context = f"Hook for {payload['agent_type']} {payload['agent_id']}: use British spelling."
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": context}}))
"""

SUBAGENT_STOP_ONCE = """\
import json, sys

payload = json.load(sys.stdin)
# The subagent's own transcript is up to date: its last assistant record is this final.
records = [json.loads(line) for line in open(payload["agent_transcript_path"])]
last = [r for r in records if r["type"] == "assistant"][-1]
assert all(r["isSidechain"] and r["agentId"] == payload["agent_id"] for r in records)
assert payload["last_assistant_message"] in json.dumps(last["message"]["content"]), last
if not payload["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "Also write bye.txt before you stop."}))
"""

AGENT_REVIEW = """\
import json, sys

payload = json.load(sys.stdin)
assert payload["tool_name"] == "Agent", payload["tool_name"]
status = payload["tool_response"]["status"]
answer = {"hookEventName": "PostToolUse", "additionalContext": f"piece {status}"}
print(json.dumps({"hookSpecificOutput": answer}))
"""


def test_subagent_hooks_reach_the_piece_and_the_agent_call_goes_through_tool_hooks(project: Project) -> None:
    subagent_stop = project.script("subagent_stop", SUBAGENT_STOP_ONCE)
    project.hooks(
        {
            "SubagentStart": [("", project.script("subagent_start", SUBAGENT_START))],
            "SubagentStop": [("implementer", subagent_stop)],
            "PreToolUse": [("Task", "true")],
            "PostToolUse": [("Agent", project.script("agent_review", AGENT_REVIEW))],
            "AgentSpawn": [("", "true")],
            "Verify": [("", "true")],
        }
    )
    completions = [
        "edit",
        turn(("agent", {"brief": BRIEF, "check": CHECK}), thought="Delegate it."),
        turn(("write", {"path": "hello.txt", "content": "hi\n"})),
        final("I wrote hello.txt."),
        turn(("write", {"path": "bye.txt", "content": "bye\n"})),
        final("I wrote hello.txt and bye.txt."),
        turn(("bash", {"command": "cat hello.txt"})),
        verdict(True, "cat printed hi"),
        final("hello.txt is in place."),
    ]
    result, events, stderr = project.run(completions, "create hello.txt")
    assert (result["outcome"], result["route"], result["result"]) == (
        "done",
        "edit",
        "hello.txt is in place.",
    ), stderr
    assert (project.root / "hello.txt").read_text() == "hi\n"
    assert (project.root / "bye.txt").read_text() == "bye\n"

    # SubagentStart fired before the implementer and the verifier; its context opened each.
    starts = project.stdin_seen("SubagentStart")
    assert [(s["agent_id"], s["agent_type"]) for s in starts] == [
        ("a1.c1", "implementer"),
        ("a1.c1.v1", "verifier"),
    ]
    for agent, agent_type in (("a1.c1", "implementer"), ("a1.c1.v1", "verifier")):
        [segment] = of(events, "segment", agent=agent, kind="hook")
        assert segment["pinned"] is True
        assert segment["text"] == f"# Hook context\nHook for {agent_type} {agent}: use British spelling."

    # SubagentStop (matched to the implementer) continued it once, with its reason.
    stops = project.stdin_seen("SubagentStop")
    assert [(s["agent_id"], s["agent_type"], s["stop_hook_active"]) for s in stops] == [
        ("a1.c1", "implementer", False),
        ("a1.c1", "implementer", True),
        ("a1.c1.v1", "verifier", False),
    ]
    session_folder = Path(stops[0]["transcript_path"]).with_suffix("").with_suffix("")
    assert stops[0]["agent_transcript_path"] == str(session_folder / "subagents" / "agent-a1.c1.jsonl")
    assert [h["outcome"] for h in of(events, "hook", event="SubagentStop", command=subagent_stop)] == [
        "blocked",
        "ok",
    ]
    [note] = [s for s in of(events, "segment", agent="a1.c1", kind="prompt") if s["label"] == "stop hook"]
    assert note["text"] == "Also write bye.txt before you stop."
    [implementer_end] = of(events, "agent.end", agent="a1.c1")
    assert implementer_end["summary"] == "I wrote hello.txt and bye.txt."
    assert len(of(events, "hook", event="SubagentStop", agent="a1.c1", decision="block")) == 1

    # The agent call went through PreToolUse (Claude's Task/Agent shape) and PostToolUse, whose
    # context reached the root with the piece's result.
    [pre] = [p for p in project.stdin_seen("PreToolUse") if p["aerix_tool_name"] == "agent"]
    assert (pre["tool_name"], pre["tool_input"]["prompt"], pre["aerix_tool_name"]) == (
        "Agent",
        BRIEF,
        "agent",
    )
    [post] = [p for p in project.stdin_seen("PostToolUse") if p["aerix_tool_name"] == "agent"]
    assert post["tool_response"]["status"] == "completed"
    piece = results(events)["c1"]
    assert piece.endswith("\n\nPostToolUse:Agent hook additional context: piece completed")
    assert json.loads(piece.split("\n", 1)[1].split("\n\n")[0])["outcome"] == "done"

    # AgentSpawn with each subagent's spawn (not the root's), Verify with the verifier.
    spawns = project.stdin_seen("AgentSpawn")
    assert [(s["agent_id"], s["parent"], s["brief"]) for s in spawns] == [
        ("a1.c1", "a1", BRIEF),
        ("a1.c1.v1", "a1", BRIEF),
    ]
    [verify] = project.stdin_seen("Verify")
    assert (verify["agent_id"], verify["check"]) == ("a1.c1.v1", CHECK)
    assert verify["files_touched"] == ["hello.txt", "bye.txt"]


def test_a_pre_tool_use_deny_on_agent_refuses_the_piece_before_it_spawns(project: Project) -> None:
    deny = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "no delegation in this project",
            }
        }
    )
    project.hooks({"PreToolUse": [("Agent", f"echo '{deny}'")]})
    completions = [
        "edit",
        turn(("agent", {"brief": BRIEF, "check": CHECK}), thought="Delegate it."),
        final("I could not delegate."),
    ]
    result, events, _ = project.run(completions, "create hello.txt")
    assert result["outcome"] == "done"
    assert results(events)["c1"] == "[agent c1]\nrefused: no delegation in this project"
    assert [e["agent"] for e in of(events, "agent.spawn")] == ["a1"]
    assert not (project.root / "hello.txt").exists()


def test_continue_false_at_agent_spawn_ends_the_caller_and_records_the_unrun_agent(project: Project) -> None:
    stop = json.dumps({"continue": False, "stopReason": "no pieces today"})
    project.hooks({"AgentSpawn": [("", f"echo '{stop}'")]})
    completions = ["edit", turn(("agent", {"brief": BRIEF, "check": CHECK}), thought="Delegate it.")]
    result, events, _ = project.run(completions, "create hello.txt")
    assert result["outcome"] == "killed"
    [piece_end] = of(events, "agent.end", agent="a1.c1")
    assert (piece_end["outcome"], piece_end["reason"]) == ("killed", "no pieces today")
    [root_end] = of(events, "agent.end", agent="a1")
    assert (root_end["outcome"], root_end["reason"]) == ("killed", "no pieces today")
    assert not of(events, "segment", agent="a1.c1")

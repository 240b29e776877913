"""Claude Code's permission rules under ``aerix -p``: the real console script in a real git
repository, rules where Claude Code users write them (``.claude/settings.json``) or on the
command line (``--disallowedTools``, ``--tools``), and a real scripted pool (the real tokenizer,
template and constraints, answers chosen by the test)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.aerix.request_world import (
    World,
    aerix,
    make_project,
    make_world,
    session_events,
    start_scripted_pool,
    stop_pool,
)
from tests.aerix.test_hooks_e2e import final, of, turn

pytestmark = [pytest.mark.model, pytest.mark.e2e]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("permissions"), {"context": {"max_new_tokens": 256}})


class Project:
    """A git project with its own scripted pool; Claude Code's settings in ``.claude/``."""

    def __init__(self, world: World, root: Path) -> None:
        self.world = world
        self.root = make_project(root / "proj", {"a.txt": "one\n", ".env": "TOKEN=hunter2\n"})
        self.socket = root / "pool" / "pool.sock"
        (self.root / ".aerix").mkdir()
        (self.root / ".git" / "info" / "exclude").write_text(".aerix/\n.claude/\n")
        (self.root / ".aerix" / "settings.json").write_text(
            json.dumps({"pool": {"socket": str(self.socket)}})
        )

    def claude_settings(self, data: dict[str, Any]) -> Path:
        path = self.root / ".claude" / "settings.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data))
        return path

    def run(
        self, completions: list[str], *args: str, constraints: list[str] | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
        start_scripted_pool(self.world, self.socket, completions, constraints)
        done = aerix(self.world, self.root, "-p", *args, "--output-format", "json")
        assert done.stdout.strip(), done.stderr
        result = json.loads(done.stdout)
        assert result["exit_code"] == done.returncode
        return result, session_events(self.world, result["session_id"]), done.stderr


@pytest.fixture
def project(world: World, tmp_path: Path) -> Iterator[Project]:
    made = Project(world, tmp_path)
    yield made
    stop_pool(world, made.socket)


def tool_results(events: list[dict[str, Any]], agent: str = "a1") -> dict[str, dict[str, Any]]:
    return {m["call"]: m for m in of(events, "message", role="tool", agent=agent)}


def test_a_deny_rule_in_claudes_settings_refuses_the_call_and_says_why(project: Project) -> None:
    settings = project.claude_settings({"permissions": {"deny": ["Bash(touch:*)", "Read(./.env)"]}})
    calls = turn(
        ("bash", {"command": "touch made.txt"}),
        ("bash", {"command": "echo fine && touch also.txt"}),
        ("bash", {"command": "echo fine"}),
        ("read", {"path": ".env"}),
        ("grep", {"pattern": "one|TOKEN"}),
    )
    result, events, _ = project.run(["investigate", calls, final()], "make the files")
    assert result["outcome"] == "done"
    assert not (project.root / "made.txt").exists() and not (project.root / "also.txt").exists()
    got = tool_results(events)
    why = f"(from {settings}); the call did not run"
    assert got["c1"]["text"] == f"[bash c1]\nerror: denied by the permission rule Bash(touch:*) {why}"
    assert got["c2"]["text"] == f"[bash c2]\nerror: denied by the permission rule Bash(touch:*) {why}"
    assert got["c3"]["text"].startswith("[bash c3]\nfine\n[exit 0]")
    assert got["c4"]["text"] == f"[read c4]\nerror: denied by the permission rule Read(./.env) {why}"
    assert "a.txt:1: one" in got["c5"]["text"] and "hunter2" not in got["c5"]["text"]
    assert "[1 file a permission rule denies reading not searched]" in got["c5"]["text"]
    # The events name the rule and its file; the model read the refusal as an error result.
    assert [(c, got[c]["denied_rule"], got[c]["denied_from"], got[c]["is_error"]) for c in ("c1", "c4")] == [
        ("c1", "Bash(touch:*)", str(settings), True),
        ("c4", "Read(./.env)", str(settings), True),
    ]
    assert got["c3"].get("denied_rule") is None
    # Claude Code's permission_denials: the refused calls, in Claude's names and inputs.
    assert result["permission_denials"] == [
        {"tool_name": "Bash", "tool_use_id": "toolu_a1_c1", "tool_input": {"command": "touch made.txt"}},
        {
            "tool_name": "Bash",
            "tool_use_id": "toolu_a1_c2",
            "tool_input": {"command": "echo fine && touch also.txt"},
        },
        {
            "tool_name": "Read",
            "tool_use_id": "toolu_a1_c4",
            "tool_input": {"file_path": f"{project.root}/.env"},
        },
    ]


def test_a_bad_rule_is_one_line_naming_the_file_and_nothing_runs(project: Project) -> None:
    settings = project.claude_settings({"permissions": {"deny": ["Bash(rm"]}})
    done = aerix(project.world, project.root, "-p", "hi")
    assert done.returncode != 0 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    assert str(settings) in line and "'Bash(rm' has no closing ')'" in line and "Bash(rm:*)" in line
    bad_flag = aerix(project.world, project.root, "-p", "hi", "--disallowedTools", "Edit,Bash()")
    assert bad_flag.returncode == 64
    assert bad_flag.stderr.strip() == (
        "aerix: --disallowedTools: 'Bash()' has nothing between its parentheses; "
        "write Bash to deny every call"
    )


def test_disallowed_bash_leaves_the_turn_schema_and_its_call_is_not_a_valid_turn(project: Project) -> None:
    """``--disallowedTools Bash``: the root is spawned without bash, so a member answering with a
    bash call anyway (one without the JSON constraint, which would have kept it out) gets its
    answer refused as not a valid turn and is asked again; nothing runs."""
    calls = turn(("bash", {"command": "touch made.txt"}))
    result, events, stderr = project.run(
        ["investigate", calls, final("I could not.")],
        "make the file",
        "--disallowedTools",
        "Bash,WebFetch",
        constraints=["regex"],
    )
    assert result["outcome"] == "done" and result["result"] == "I could not.", stderr
    [spawn] = of(events, "agent.spawn", agent="a1")
    assert "bash" not in spawn["tools"] and "web_fetch" not in spawn["tools"] and "read" in spawn["tools"]
    refused = [m for m in of(events, "message", role="assistant", agent="a1") if m.get("parse_error")]
    assert len(refused) == 1 and "bash" in refused[0]["parse_error"]
    assert not of(events, "message", role="tool") and not (project.root / "made.txt").exists()
    # The system segment still lists every tool (the prefix every context shares).
    [system] = of(events, "segment", id="a1.system")
    assert "\n- bash: Run a shell command" in system["text"]


def test_tools_sets_what_every_agent_may_use(project: Project) -> None:
    calls = turn(("grep", {"pattern": "one"}), ("read", {"path": "a.txt"}))
    start_scripted_pool(project.world, project.socket, ["investigate", calls, final("one")])
    done = aerix(
        project.world,
        project.root,
        "-p",
        "find one",
        "--tools",
        "Read,Grep",
        "--output-format",
        "stream-json",
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    [init] = [line for line in lines if line.get("subtype") == "init"]
    assert init["tools"] == ["Read", "Grep"]
    result = lines[-1]
    assert result["type"] == "result" and result["outcome"] == "done" and result["permission_denials"] == []
    events = session_events(project.world, result["session_id"])
    [spawn] = of(events, "agent.spawn", agent="a1")
    assert spawn["tools"] == ["read", "grep"]
    got = tool_results(events)
    assert got["c1"]["text"].startswith("[grep c1]\na.txt:1: one")
    assert got["c2"]["text"] == "[read c2]\n1\tone"
    # --tools "" leaves no tool: the turn schema offers only a final answer.
    stop_pool(project.world, project.socket)
    start_scripted_pool(project.world, project.socket, ["answer", final("nothing to use")])
    bare = aerix(project.world, project.root, "-p", "hi", "--tools", "", "--output-format", "json")
    none = json.loads(bare.stdout)
    assert none["outcome"] == "done", bare.stderr
    [spawn] = of(session_events(project.world, none["session_id"]), "agent.spawn", agent="a1")
    assert spawn["tools"] == []


def verdict(reason: str) -> str:
    return json.dumps({"thought": "Checked.", "final": {"verdict": "pass", "reason": reason}})


def test_the_rules_hold_for_every_piece_of_a_delegation(project: Project) -> None:
    """A bare ``Bash`` takes bash from the implementer and the verifier as from the root;
    ``Agent(reviewer)`` refuses the call naming that definition before anything spawns."""
    settings = project.claude_settings({"permissions": {"deny": ["Bash", "Agent(reviewer)"]}})
    # Installed, so an agent call can name it (the definition field offers the installed ones).
    agents = project.root / ".claude" / "agents"
    agents.mkdir()
    (agents / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews\n---\nReview it.\n")
    brief, check = "Create hello.txt holding the line hi.", "hello.txt holds hi"
    completions = [
        "edit",
        turn(("agent", {"brief": brief, "check": check, "definition": "reviewer"}), thought="Delegate it."),
        turn(("agent", {"brief": brief, "check": check}), thought="Without the reviewer, then."),
        turn(("write", {"path": "hello.txt", "content": "hi\n"})),
        final("I wrote hello.txt."),
        turn(("read", {"path": "hello.txt"})),
        verdict("it holds hi"),
        final("hello.txt is in place."),
    ]
    result, events, stderr = project.run(completions, "create hello.txt")
    assert (result["outcome"], result["route"]) == ("done", "edit"), stderr
    assert (project.root / "hello.txt").read_text() == "hi\n"
    got = tool_results(events)
    assert got["c1"]["text"] == (
        f"[agent c1]\nerror: denied by the permission rule Agent(reviewer) (from {settings}); "
        "the call did not run"
    )
    spawns = {spawn["agent"]: spawn for spawn in of(events, "agent.spawn")}
    assert set(spawns) == {"a1", "a1.c2", "a1.c2.v1"}  # nothing spawned for the refused call
    assert all("bash" not in spawn["tools"] for spawn in spawns.values())
    assert "write" in spawns["a1.c2"]["tools"]
    assert spawns["a1.c2.v1"]["tools"] == ["read", "grep", "glob", "repo_map"]
    assert result["permission_denials"] == [
        {
            "tool_name": "Agent",
            "tool_use_id": "toolu_a1_c1",
            "tool_input": {
                "description": brief,
                "subagent_type": "reviewer",
                "prompt": brief,
                "check": check,
            },
        }
    ]

"""Claude Code's tool names and input fields, both ways."""

from __future__ import annotations

from aerix.domain.claude_tools import (
    aerix_tool_name,
    claude_tool_name,
    from_claude_input,
    to_claude_input,
    tool_name_aliases,
)


def test_names_both_ways() -> None:
    assert [claude_tool_name(t) for t in ("bash", "read", "write", "edit", "glob", "grep", "repo_map")] == [
        "Bash",
        "Read",
        "Write",
        "Edit",
        "Glob",
        "Grep",
        "repo_map",
    ]
    assert aerix_tool_name("Task") == "agent" and aerix_tool_name("Agent") == "agent"
    assert aerix_tool_name("edit") == "edit" and aerix_tool_name("NotebookEdit") is None
    assert tool_name_aliases("agent") == ("agent", "Agent", "Task")


def test_inputs_as_a_claude_hook_sees_them() -> None:
    assert to_claude_input(
        "edit", {"path": "src/a.py", "old": "x", "new": "y", "replace_all": True}, "/work"
    ) == {"file_path": "/work/src/a.py", "old_string": "x", "new_string": "y", "replace_all": True}
    assert to_claude_input("bash", {"command": "ls", "timeout_secs": 30, "background": True}, "/w") == {
        "command": "ls",
        "timeout": 30000,
        "run_in_background": True,
    }
    assert to_claude_input("read", {"path": "/abs/f", "offset": 3}, "/w") == {
        "file_path": "/abs/f",
        "offset": 3,
    }


def test_a_path_is_made_absolute_against_each_calls_own_cwd() -> None:
    # Paths made absolute are remembered (a rebuild converts the same few again and again):
    # by (cwd, path), so the same relative path under another cwd is its own.
    for _ in range(2):
        assert to_claude_input("read", {"path": "src/../a.py"}, "/w")["file_path"] == "/w/a.py"
        assert to_claude_input("read", {"path": "src/../a.py"}, "/other/w")["file_path"] == "/other/w/a.py"
    assert to_claude_input("read", {"path": "src/../a.py"}, None)["file_path"] == "src/../a.py"


def test_a_hooks_updated_input_comes_back_in_aerix_fields() -> None:
    assert from_claude_input("edit", {"file_path": "/w/a.py", "old_string": "x", "new_string": "y"}) == {
        "path": "/w/a.py",
        "old": "x",
        "new": "y",
    }
    assert from_claude_input("bash", {"command": "ls", "timeout": 1500, "description": "list"}) == {
        "command": "ls",
        "timeout_secs": 2,
    }
    assert from_claude_input("grep", {"pattern": "todo", "-i": True, "output_mode": "content"}) == {
        "pattern": "(?i)todo"
    }
    # aerix's own field names pass through unchanged
    assert from_claude_input("read", {"path": "a", "limit": 5}) == {"path": "a", "limit": 5}


def test_an_agent_call_in_claudes_agent_shape_and_back() -> None:
    brief = "Fix the parser so the last line is kept.\nIt lives in parser.py."
    claude = to_claude_input("agent", {"brief": brief, "check": "make test", "member": "big"}, None)
    assert claude == {
        "description": "Fix the parser so the last line is kept.",
        "subagent_type": "general-purpose",
        "prompt": brief,
        "check": "make test",
        "model": "big",
    }
    long = to_claude_input("agent", {"brief": "word " * 30, "check": "x", "definition": "fixer"}, None)
    assert len(long["description"]) == 60 and long["description"].endswith("…")
    assert long["subagent_type"] == "fixer"
    # general-purpose is Claude Code's "no particular definition": it names none in aerix.
    assert from_claude_input("agent", claude) == {"brief": brief, "check": "make test", "member": "big"}
    assert from_claude_input("agent", {"prompt": "p", "subagent_type": "fixer"}) == {
        "brief": "p",
        "definition": "fixer",
    }

"""Claude Code's hook contract, the pure parts: matchers, reading an answer, combining answers,
the stdin shapes and translating ``updatedInput`` back."""

from __future__ import annotations

import json

import pytest

from aerix.domain import bounds
from aerix.domain.hook_answers import HandlerRun, HookAnswer, combine, parse_answer, preview
from aerix.domain.hook_contract import (
    HookSource,
    matcher_matches,
    select_handlers,
    unknown_events,
    unrunnable_handlers,
)
from aerix.domain.hook_payloads import (
    claude_tool_input,
    common_fields,
    tool_fields,
    tool_response,
    updated_input,
)
from aerix.domain.settings import Settings


def hooks(config: dict[str, object]) -> HookSource:
    return HookSource(Settings.model_validate({"hooks": config}).hooks)


def command(text: str, **extra: object) -> dict[str, object]:
    return {"type": "command", "command": text, **extra}


# ---- matchers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "values", "expected"),
    [
        ("", ["bash", "Bash"], True),
        ("*", ["read", "Read"], True),
        ("Bash", ["bash", "Bash"], True),
        ("bash", ["bash", "Bash"], True),
        ("Edit|Write", ["write", "Write"], True),
        ("Edit|Write", ["read", "Read"], False),
        ("Edit, Write", ["edit", "Edit"], True),
        ("Bas", ["bash", "Bash"], False),  # an exact name, not a prefix
        ("Notebook.*", ["NotebookEdit"], True),
        ("mcp__memory__.*", ["mcp__memory__create"], True),
        ("mcp__memory", ["mcp__memory__create"], False),  # exact: a bare server name matches nothing
        ("Ed.t", ["edit", "Edit"], True),  # a regex, searched anywhere
        ("(unclosed", ["bash", "Bash"], False),  # not a valid pattern: matches nothing
        ("Task", ["agent", "Agent", "Task"], True),
    ],
)
def test_matchers_follow_claude_code(matcher: str, values: list[str], expected: bool) -> None:
    assert matcher_matches(matcher, values) is expected


def test_handlers_are_selected_by_event_and_matcher_once_each() -> None:
    settings = hooks(
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [command("guard.sh"), command("log.sh")]},
                {"matcher": "Edit|Write", "hooks": [command("fmt.sh")]},
                {"matcher": "*", "hooks": [command("log.sh")]},  # the same handler again: runs once
            ],
            "Stop": [{"matcher": "ignored", "hooks": [command("tests.sh")]}],
        }
    )
    bash = select_handlers([settings], "PreToolUse", ["bash", "Bash"])
    assert [h.command for h in bash] == ["guard.sh", "log.sh"]
    assert [h.command for h in select_handlers([settings], "PreToolUse", ["edit", "Edit"])] == [
        "fmt.sh",
        "log.sh",
    ]
    # Stop has no matcher in Claude Code: its groups run whatever the matcher says.
    assert [h.command for h in select_handlers([settings], "Stop", [])] == ["tests.sh"]
    assert select_handlers([settings], "SessionEnd", ["other"]) == []


def test_timeouts_and_postcompact_handlers_and_plugin_roots() -> None:
    settings = hooks(
        {
            "UserPromptSubmit": [{"hooks": [command("a"), command("b", timeout=5)]}],
            "PostCompact": [{"matcher": "auto", "hooks": [command("c")]}],
            "ContextCompact": [{"hooks": [command("d")]}],
        }
    )
    plugin = HookSource(hooks({"PreCompact": [{"hooks": [command("e")]}]}).hooks, "kit", "/plugins/kit")
    prompt = select_handlers([settings], "UserPromptSubmit", [])
    assert [h.timeout_secs for h in prompt] == [bounds.HOOK_SHORT_TIMEOUT_SECS, 5]
    compact = select_handlers([settings], "ContextCompact", ["auto"])
    assert [(h.event_name, h.command) for h in compact] == [("ContextCompact", "d"), ("PostCompact", "c")]
    assert select_handlers([settings], "ContextCompact", ["manual"])[0].command == "d"
    [pre] = select_handlers([settings, plugin], "PreCompact", ["auto"])
    assert (pre.timeout_secs, pre.plugin, pre.plugin_root) == (
        bounds.HOOK_TIMEOUT_SECS,
        "kit",
        "/plugins/kit",
    )


def test_other_handler_types_and_events_are_reported_not_run() -> None:
    source = hooks(
        {
            "PreToolUse": [{"hooks": [{"type": "http", "url": "http://x"}, command("a", args=["-v"])]}],
            "Notification": [{"hooks": [command("say")]}],
        }
    )
    [runnable] = select_handlers([source], "PreToolUse", ["bash"])
    assert (runnable.command, runnable.args) == ("a", ("-v",))
    assert unrunnable_handlers(source.hooks) == {"http": 1}
    assert unknown_events(source.hooks) == ["Notification"]


# ---- one answer -------------------------------------------------------------------------------


def run(exit_code: int | None, stdout: str = "", stderr: str = "", **kwargs: object) -> HandlerRun:
    return HandlerRun(exit_code, stdout, stderr, **kwargs)  # type: ignore[arg-type]


def test_exit_2_blocks_with_stderr_even_when_json_says_allow() -> None:
    allow = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
    answer = parse_answer("PreToolUse", run(2, allow, "no rm -rf here\n"))
    assert (answer.outcome, answer.decision, answer.reason) == ("blocked", "deny", "no rm -rf here")
    stop = parse_answer("Stop", run(2, "", ""))
    assert (stop.decision, stop.reason) == ("block", "blocked by a hook (exit 2, no stderr)")
    halt = parse_answer("Stop", run(2, '{"continue": false, "stopReason": "enough"}', "why"))
    assert halt.stop and halt.stop_reason == "enough" and halt.decision == "block"


def test_other_exit_codes_are_non_blocking_errors_unless_json_decides() -> None:
    failed = parse_answer("PreToolUse", run(1, "", "boom"))
    assert (failed.outcome, failed.decision) == ("error", None)
    assert failed.error == "Failed with non-blocking status code 1: boom"
    assert parse_answer("Stop", run(3)).error == "Failed with non-blocking status code 3: No stderr output"
    decided = parse_answer("Stop", run(1, '{"decision": "block", "reason": "tests fail"}'))
    assert (decided.outcome, decided.decision, decided.reason) == ("blocked", "block", "tests fail")


def test_plain_stdout_is_context_only_for_session_start_and_user_prompt_submit() -> None:
    assert parse_answer("SessionStart", run(0, "branch: main\n")).context == "branch: main"
    assert parse_answer("UserPromptSubmit", run(0, "today is Monday")).context == "today is Monday"
    assert parse_answer("PostToolUse", run(0, "formatted 3 files")) == HookAnswer("ok")


def test_garbage_that_looks_like_json_is_an_error_and_a_timeout_decides_nothing() -> None:
    garbage = parse_answer("PreToolUse", run(0, "{not json at all"))
    assert garbage.outcome == "error" and garbage.decision is None
    assert garbage.error is not None and "not valid JSON" in garbage.error
    assert parse_answer("PreToolUse", run(0, "[1, 2]")) == HookAnswer("ok")  # not an object: plain text
    timed = parse_answer("PreToolUse", run(None, '{"decision": "block"}', timed_out=True))
    assert (timed.outcome, timed.decision) == ("timeout", None)
    assert (
        parse_answer("Stop", run(None, start_error="No such file")).error == "could not start: No such file"
    )


def test_pre_tool_use_json_forms() -> None:
    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "not in prod",
        },
        "systemMessage": "guard fired",
    }
    answer = parse_answer("PreToolUse", run(0, json.dumps(deny)))
    assert (answer.outcome, answer.decision, answer.reason, answer.system_message) == (
        "blocked",
        "deny",
        "not in prod",
        "guard fired",
    )
    rewrite = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"command": "ls -la"},
            "additionalContext": "listing instead",
        }
    }
    answer = parse_answer("PreToolUse", run(0, json.dumps(rewrite)))
    assert (answer.decision, answer.updated_input, answer.context) == (
        "allow",
        {"command": "ls -la"},
        "listing instead",
    )
    # The deprecated top-level form still maps: approve -> allow, block -> deny.
    old = parse_answer("PreToolUse", run(0, '{"decision": "block", "reason": "old style"}'))
    assert (old.decision, old.reason) == ("deny", "old style")
    wrong = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}
    assert parse_answer("PreToolUse", run(0, json.dumps(wrong))).outcome == "error"


def test_universal_fields_and_events_without_control() -> None:
    halt = parse_answer("PostToolUse", run(0, '{"continue": false, "stopReason": "build broke"}'))
    assert (halt.stop, halt.stop_reason) == (True, "build broke")
    # SessionEnd and ContextCompact have no decision control: continue and systemMessage go.
    end = parse_answer("SessionEnd", run(0, '{"continue": false, "systemMessage": "bye"}'))
    assert (end.stop, end.system_message) == (False, None)
    post = {"hookSpecificOutput": {"hookEventName": "PostCompact"}, "continue": False}
    assert parse_answer("ContextCompact", run(0, json.dumps(post))) == HookAnswer("ok")
    # A block on an event that cannot block is only a reason shown.
    assert parse_answer("SessionStart", run(0, '{"decision": "block", "reason": "x"}')).decision is None


# ---- answers combined -----------------------------------------------------------------------------


def test_deny_beats_ask_beats_allow_and_contexts_concatenate() -> None:
    answers = [
        HookAnswer("ok", "allow", "fine", "ctx one", {"command": "a"}),
        HookAnswer("ok", "ask", "sure?"),
        HookAnswer("blocked", "deny", "no", "ctx two"),
        HookAnswer("blocked", "deny", "never"),
    ]
    verdict = combine(answers)
    assert (verdict.decision, verdict.reason, verdict.blocked) == ("deny", "no\nnever", True)
    assert verdict.context == "ctx one\n\nctx two"
    assert combine(answers[:2]).decision == "ask"
    assert combine(answers[:2]).updated_input == {"command": "a"}
    assert (
        combine([HookAnswer("ok"), HookAnswer("blocked", "block", "run the tests")]).reason == "run the tests"
    )
    stopped = combine([HookAnswer("ok", stop=True, stop_reason="halt"), HookAnswer("ok", system_message="m")])
    assert (stopped.stop, stopped.stop_reason, stopped.system_messages) == (True, "halt", ("m",))
    assert combine([]).decision is None and not combine([]).blocked


def test_long_output_becomes_a_preview() -> None:
    text = "x" * (bounds.HOOK_OUTPUT_MAX_CHARS + 5)
    cut = preview(text, bounds.HOOK_OUTPUT_MAX_CHARS, "/spool/a1.hook1")
    assert cut.startswith("x" * bounds.HOOK_OUTPUT_MAX_CHARS + "\n[hook output cut: 5 more characters")
    assert cut.endswith("the whole output is in /spool/a1.hook1]")
    assert preview("short", 10, None) == "short"


# ---- stdin --------------------------------------------------------------------------------------


def test_common_fields_name_a_subagent_only_inside_one() -> None:
    root = common_fields("Stop", session_id="s", transcript_path="/t", cwd="/p", permission_mode="default")
    assert root == {
        "session_id": "s",
        "transcript_path": "/t",
        "cwd": "/p",
        "hook_event_name": "Stop",
        "permission_mode": "default",
    }
    sub = common_fields(
        "SubagentStop",
        session_id="s",
        transcript_path="/t",
        cwd="/p",
        permission_mode="default",
        agent_id="a1.c3",
        agent_type="test-runner",
    )
    assert (sub["agent_id"], sub["agent_type"]) == ("a1.c3", "test-runner")


def test_tool_inputs_in_claude_codes_fields_with_absolute_paths() -> None:
    assert claude_tool_input("bash", {"command": "ls"}, "/p") == {
        "command": "ls",
        "description": "",
        "timeout": bounds.BASH_TIMEOUT_SECS * 1000,
        "run_in_background": False,
    }
    assert claude_tool_input("edit", {"path": "src/a.py", "old": "x", "new": "y"}, "/p") == {
        "file_path": "/p/src/a.py",
        "old_string": "x",
        "new_string": "y",
        "replace_all": False,
    }
    assert claude_tool_input("read", {"path": "/etc/hosts"}, "/p") == {
        "file_path": "/etc/hosts",
        "offset": 1,
        "limit": bounds.READ_LIMIT_LINES,
    }
    fields = tool_fields("glob", {"pattern": "*.py", "path": "src"}, "/p", "toolu_a1_c1")
    assert fields == {
        "tool_name": "Glob",
        "tool_input": {"pattern": "*.py", "path": "/p/src"},
        "tool_use_id": "toolu_a1_c1",
        "aerix_tool_name": "glob",
        "aerix_tool_input": {"pattern": "*.py", "path": "src"},
    }
    assert tool_fields("repo_map", {}, "/p", "t")["tool_name"] == "repo_map"
    agent = tool_fields("agent", {"brief": "fix it", "check": "make test"}, "/p", "t")
    assert agent["tool_name"] == "Agent" and agent["tool_input"]["prompt"] == "fix it"


def test_updated_input_comes_back_in_aerix_fields() -> None:
    assert updated_input("bash", {"command": "ls -la", "timeout": 30_000, "description": "list"}) == {
        "command": "ls -la",
        "timeout_secs": 30,
    }
    assert updated_input("edit", {"file_path": "/p/a.py", "old_string": "a", "new_string": "b"}) == {
        "path": "/p/a.py",
        "old": "a",
        "new": "b",
    }
    assert updated_input("write", {"path": "b.txt", "content": "hi"}) == {"path": "b.txt", "content": "hi"}


def test_tool_responses_are_shaped_as_claude_codes() -> None:
    assert tool_response("bash", {"command": "ls"}, "a\nb\n[exit 0]", "/p") == {
        "stdout": "a\nb\n",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
    }
    assert tool_response("bash", {}, "partial\n[timeout after 5s]", "/p")["interrupted"] is True
    assert tool_response("bash", {}, "started job j1: sleep 9", "/p")["backgroundTaskId"] == "j1"
    write = tool_response(
        "write", {"path": "a.txt", "content": "hi\n"}, "created a.txt (3 bytes, 1 lines)", "/p"
    )
    assert write == {"type": "create", "filePath": "/p/a.txt", "content": "hi\n", "success": True}
    edit = tool_response("edit", {"path": "a.txt", "old": "h", "new": "H"}, "edited a.txt: replaced 1", "/p")
    assert (edit["filePath"], edit["oldString"], edit["newString"], edit["success"]) == (
        "/p/a.txt",
        "h",
        "H",
        True,
    )
    grep = tool_response("grep", {"pattern": "x"}, "a.py:1: x\nb.py:4: x = 1", "/p")
    assert (grep["numFiles"], grep["filenames"], grep["numLines"]) == (2, ["a.py", "b.py"], 2)
    assert tool_response("glob", {"pattern": "*.md"}, "no files match *.md", "/p")["numFiles"] == 0
    assert tool_response("plan", {"op": "read"}, "1. do it", "/p") == {"output": "1. do it"}

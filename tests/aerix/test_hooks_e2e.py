"""A project's Claude Code hooks under ``aerix -p``: the real console script on a real scripted
pool (the real tokenizer, template and constraints, answers chosen by the test), hook scripts
as real processes, most of them written with ``cchooks`` as Claude Code users write them, and
configured where Claude Code reads them (``.claude/settings.json``, a plugin's ``hooks.json``)."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.domain import bounds
from tests.aerix.request_world import (
    World,
    aerix,
    make_project,
    make_world,
    session_events,
    start_scripted_pool,
    stop_pool,
)

pytestmark = [pytest.mark.model, pytest.mark.e2e]

PY = sys.executable


def turn(*calls: tuple[str, dict[str, Any]], thought: str = "Go on.") -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": tool, "input": args} for tool, args in calls]})


def final(text: str = "All done.") -> str:
    return json.dumps({"thought": "Done.", "final": text})


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("hooks")
    world = make_world(root, {"context": {"max_new_tokens": 256}, "delegation": {"max_turns": 8}})
    yield world


class Project:
    """A git project with its own scripted pool and its hooks in ``.claude/settings.json``."""

    def __init__(self, world: World, root: Path) -> None:
        self.world = world
        self.root = make_project(root / "proj", {"a.txt": "one\n"})
        self.scripts = root / "scripts"
        self.scripts.mkdir()
        self.socket = root / "pool" / "pool.sock"
        self.seen = root / "seen.jsonl"  # every stdin the recorder hook got
        (self.root / ".aerix").mkdir()
        (self.root / ".git" / "info" / "exclude").write_text(".aerix/\n.claude/\n")
        self.settings({"pool": {"socket": str(self.socket)}}, ".aerix/settings.json")

    def settings(self, data: dict[str, Any], where: str = ".claude/settings.json") -> None:
        path = self.root / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))

    def script(self, name: str, text: str) -> str:
        path = self.scripts / f"{name}.py"
        path.write_text(textwrap.dedent(text))
        return f"{PY} {path}"

    def hooks(self, config: dict[str, list[tuple[str, str] | tuple[str, str, float]]]) -> None:
        """``{event: [(matcher, command[, timeout]), ...]}``; every event also gets the recorder."""
        hooks: dict[str, list[dict[str, Any]]] = {}
        for event, handlers in config.items():
            groups = hooks.setdefault(event, [])
            for handler in handlers:
                entry: dict[str, Any] = {"type": "command", "command": handler[1]}
                if len(handler) == 3:
                    entry["timeout"] = handler[2]
                groups.append({"matcher": handler[0], "hooks": [entry]})
            groups.append({"hooks": [{"type": "command", "command": f"cat >> {self.seen}"}]})
        self.settings({"hooks": hooks})

    def run(self, completions: list[str], *args: str) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
        start_scripted_pool(self.world, self.socket, completions)
        done = aerix(self.world, self.root, "-p", *args, "--output-format", "json")
        assert done.stdout.strip(), done.stderr
        result = json.loads(done.stdout)
        assert result["exit_code"] == done.returncode
        return result, session_events(self.world, result["session_id"]), done.stderr

    def stdin_seen(self, event: str) -> list[dict[str, Any]]:
        lines = self.seen.read_text().splitlines() if self.seen.exists() else []
        return [payload for payload in map(json.loads, lines) if payload["hook_event_name"] == event]


@pytest.fixture
def project(world: World, tmp_path: Path) -> Iterator[Project]:
    made = Project(world, tmp_path)
    yield made
    stop_pool(world, made.socket)


def of(events: list[dict[str, Any]], event_type: str, **fields: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == event_type and all(e.get(k) == v for k, v in fields.items())]


def results(events: list[dict[str, Any]]) -> dict[str, str]:
    return {m["call"]: m["text"] for m in of(events, "message", role="tool")}


GUARD = """\
from cchooks import PreToolUseContext, create_context

context = create_context()
assert isinstance(context, PreToolUseContext)
command = context.tool_input.get("command", "")
if "rm -rf" in command:
    context.output.deny("rm -rf is not allowed in this project")
elif context.tool_name == "Write" and context.tool_input["file_path"].endswith("draft.txt"):
    moved = {**context.tool_input, "file_path": context.tool_input["file_path"].replace("draft", "final")}
    context.output.allow("write the final name", updated_input=moved)
elif command.startswith("curl"):
    context.output.exit_block("no network from here")
else:
    context.output.allow()
"""


def test_a_cchooks_pre_tool_use_guard_denies_blocks_and_rewrites(project: Project) -> None:
    project.hooks({"PreToolUse": [("Bash|Write", project.script("guard", GUARD))], "PostToolUse": []})
    calls = turn(
        ("bash", {"command": "rm -rf build"}),
        ("bash", {"command": "curl http://example.org"}),
        ("write", {"path": "draft.txt", "content": "hi\n"}),
        ("bash", {"command": "echo fine"}),
    )
    result, events, _ = project.run(["investigate", calls, final()], "tidy up")
    assert result["outcome"] == "done"
    got = results(events)
    assert got["c1"] == "[bash c1]\nrefused: rm -rf is not allowed in this project"
    assert got["c2"] == "[bash c2]\nrefused: no network from here"
    assert (project.root / "final.txt").read_text() == "hi\n" and not (project.root / "draft.txt").exists()
    assert got["c4"].startswith("[bash c4]\nfine\n[exit 0]")
    runs = of(events, "hook", event="PreToolUse", matcher="Bash|Write")
    assert [(r["call"], r["outcome"], r["decision"], r["exit"]) for r in runs] == [
        ("c1", "blocked", "deny", 0),
        ("c2", "blocked", "deny", 2),
        ("c3", "ok", "allow", 0),
        ("c4", "ok", "allow", 0),
    ]
    [write] = [p for p in project.stdin_seen("PreToolUse") if p["tool_name"] == "Write"]
    assert write["tool_input"] == {"file_path": f"{project.root}/draft.txt", "content": "hi\n"}
    assert write["aerix_tool_name"] == "write" and write["tool_use_id"] == "toolu_a1_c3"
    assert write["cwd"] == str(project.root) and write["permission_mode"] == "bypassPermissions"
    assert Path(write["transcript_path"]).name == f"{result['session_id']}.claude.jsonl"
    # No PostToolUse for the refused calls; the written one reports Claude's Write shape.
    posts = project.stdin_seen("PostToolUse")
    assert [p["tool_use_id"] for p in posts] == ["toolu_a1_c3", "toolu_a1_c4"]
    assert posts[0]["tool_response"]["filePath"] == f"{project.root}/final.txt"
    assert posts[1]["tool_response"] == {
        "stdout": "fine\n",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
    }


FEEDBACK = """\
from cchooks import PostToolUseContext, create_context

context = create_context()
assert isinstance(context, PostToolUseContext)
if context.tool_name == "Edit":
    context.output.challenge("line 1 is too short; run the formatter")
else:
    context.output.add_context("remember the changelog")
"""


def test_post_tool_use_feedback_reaches_the_model_with_the_result(project: Project) -> None:
    project.hooks({"PostToolUse": [("Edit|Read", project.script("feedback", FEEDBACK))]})
    calls = turn(("edit", {"path": "a.txt", "old": "one", "new": "two"}), ("read", {"path": "a.txt"}))
    _, events, _ = project.run(["investigate", calls, final()], "edit it")
    got = results(events)
    assert got["c1"].endswith("\n\nPostToolUse:Edit hook feedback: line 1 is too short; run the formatter")
    assert got["c2"].endswith("\n\nPostToolUse:Read hook additional context: remember the changelog")
    assert (project.root / "a.txt").read_text() == "two\n"
    [edit] = [p for p in project.stdin_seen("PostToolUse") if p["tool_name"] == "Edit"]
    assert edit["tool_input"]["old_string"] == "one" and edit["tool_response"]["success"] is True


STOP_ONCE = """\
from cchooks import StopContext, create_context

context = create_context()
assert isinstance(context, StopContext)
if context.stop_hook_active:
    context.output.allow()
else:
    context.output.prevent("Also write done.txt before you stop.")
"""


def test_a_stop_hook_continues_the_agent_once(project: Project) -> None:
    project.hooks({"Stop": [("", project.script("stop_once", STOP_ONCE))]})
    write = turn(("write", {"path": "done.txt", "content": "done\n"}))
    result, events, _ = project.run(["investigate", final("Nothing to do."), write, final()], "check")
    assert (result["outcome"], result["result"]) == ("done", "All done.")
    assert (project.root / "done.txt").exists()
    [note] = [s for s in of(events, "segment", kind="prompt") if s["label"] == "stop hook"]
    assert note["text"] == "Also write done.txt before you stop."
    stops = project.stdin_seen("Stop")
    assert [(s["stop_hook_active"], s["last_assistant_message"]) for s in stops] == [
        (False, "Nothing to do."),
        (True, "All done."),
    ]


def test_a_stop_hook_that_never_lets_go_is_bounded(project: Project) -> None:
    never = 'echo \'{"decision": "block", "reason": "keep going"}\''
    project.hooks({"Stop": [("", never)]})
    finals = [final(f"try {n}") for n in range(bounds.STOP_HOOK_CONTINUES + 1)]
    result, events, _ = project.run(["investigate", *finals], "loop")
    assert (result["outcome"], result["result"]) == ("done", f"try {bounds.STOP_HOOK_CONTINUES}")
    assert len(of(events, "hook", event="Stop", command=never)) == bounds.STOP_HOOK_CONTINUES + 1
    notes = [s for s in of(events, "segment", kind="prompt") if s["label"] == "stop hook"]
    assert len(notes) == bounds.STOP_HOOK_CONTINUES


SESSION_START = """\
from cchooks import SessionStartContext, create_context

context = create_context()
assert isinstance(context, SessionStartContext)
print(f"Hook says: started from {context.source}")
"""

PROMPT_GUARD = """\
from cchooks import UserPromptSubmitContext, create_context

context = create_context()
assert isinstance(context, UserPromptSubmitContext)
if "password" in context.prompt:
    context.output.block("prompts must not contain passwords")
else:
    context.output.add_context("The user prefers short answers.")
"""


def test_session_start_context_and_user_prompt_submit(project: Project) -> None:
    project.hooks(
        {
            "SessionStart": [("startup|resume", project.script("start", SESSION_START))],
            "UserPromptSubmit": [("", project.script("prompt", PROMPT_GUARD))],
            "SessionEnd": [("", "true")],
        }
    )
    result, events, _ = project.run(["answer", final("Hi.")], "say hi")
    assert result["outcome"] == "done"
    [hook] = of(events, "segment", kind="hook")
    assert hook["pinned"] and hook["text"] == "# Hook context\nHook says: started from startup"
    [prompt] = of(events, "segment", kind="prompt")
    assert prompt["text"] == "say hi\n\nThe user prefers short answers."
    kinds = [s["kind"] for s in of(events, "segment", agent="a1")]
    assert kinds[:4] == ["system", "instructions", "hook", "prompt"] or kinds[:3] == [
        "system",
        "hook",
        "prompt",
    ]
    [end] = project.stdin_seen("SessionEnd")
    assert (end["reason"], end["outcome"], end["exit_code"]) == ("other", "done", 0)
    assert of(events, "hook")[-1]["event"] == "SessionEnd"  # after session.end

    blocked, events, _ = project.run(["answer", final()], "my password is hunter2")
    assert (blocked["outcome"], blocked["exit_code"]) == ("killed", bounds.EXIT_KILLED)
    assert (
        blocked["reason"] == "a UserPromptSubmit hook blocked the prompt: prompts must not contain passwords"
    )
    assert not of(events, "route") and not of(events, "agent.spawn")


PRE_COMPACT_ONCE = """\
import os
from cchooks import PreCompactContext, create_context

context = create_context()
assert isinstance(context, PreCompactContext) and context.trigger == "auto"
mark = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], ".aerix", "compact-blocked")
if not os.path.exists(mark):
    open(mark, "w").close()
    context.output.exit_block("not yet")
"""


def test_pre_compact_blocks_a_pass_and_context_compact_follows_the_next(project: Project) -> None:
    project.settings(
        {"pool": {"socket": str(project.socket)}, "context": {"soft_ratio": 0.05, "target_ratio": 0.05}},
        ".aerix/settings.json",
    )
    project.hooks(
        {
            "PreCompact": [("auto", project.script("pre_compact", PRE_COMPACT_ONCE))],
            "PostCompact": [("auto", "true")],
        }
    )
    (project.root / "long.txt").write_text("".join(f"line {n} of a long file\n" for n in range(40)))
    read = turn(("read", {"path": "long.txt"}))
    result, events, _ = project.run(["investigate", read, read, final()], "read it twice")
    assert result["outcome"] == "done"
    pre = of(events, "hook", event="PreCompact", matcher="auto")
    assert [h["outcome"] for h in pre] == ["blocked", "ok"]
    [compaction] = of(events, "compaction")
    assert compaction["replaced"][0]["id"] == "a1.c1"
    [after] = project.stdin_seen("PostCompact")
    assert after["trigger"] == "auto" and "compacted tool result of call c1" in after["compact_summary"]
    assert after["tokens_before"] > after["tokens_after"]
    assert of(events, "hook", event="PostCompact")[0]["seq"] > compaction["seq"]


def test_continue_false_ends_the_agent_killed_with_its_stop_reason(project: Project) -> None:
    halt = 'echo \'{"continue": false, "stopReason": "the build is broken; stop here"}\''
    project.hooks({"PostToolUse": [("Bash", halt)]})
    calls = turn(("bash", {"command": "echo one"}), ("bash", {"command": "echo two > two.txt"}))
    result, events, _ = project.run(["investigate", calls, final()], "build")
    assert (result["outcome"], result["exit_code"]) == ("killed", bounds.EXIT_KILLED)
    assert result["reason"] == "the build is broken; stop here"
    assert not (project.root / "two.txt").exists()  # the turn's later call never ran
    [end] = of(events, "agent.end")
    assert (end["outcome"], end["reason"]) == ("killed", "the build is broken; stop here")
    assert of(events, "hook", event="PostToolUse", command=halt)[0]["stop"] is True


def test_a_hook_that_times_out_or_prints_garbage_blocks_nothing(project: Project) -> None:
    project.hooks(
        {
            "PreToolUse": [
                ("Bash", 'sleep 60; echo \'{"decision": "block"}\'', 1),
                ("Bash", "echo '{this is not json'"),
                ("Bash", "echo oops >&2; exit 1"),
            ]
        }
    )
    result, events, stderr = project.run(
        ["investigate", turn(("bash", {"command": "echo ran"})), final()], "run"
    )
    assert result["outcome"] == "done"
    assert results(events)["c1"].startswith("[bash c1]\nran\n")
    runs = {h["command"]: h for h in of(events, "hook", event="PreToolUse", matcher="Bash")}
    timed = runs['sleep 60; echo \'{"decision": "block"}\'']
    assert (timed["outcome"], timed.get("exit"), timed.get("decision")) == ("timeout", None, None)
    assert runs["echo '{this is not json'"]["outcome"] == "error"
    assert runs["echo oops >&2; exit 1"]["reason"] == "Failed with non-blocking status code 1: oops"
    assert "hook PreToolUse: Failed with non-blocking status code 1: oops" in stderr
    assert "Traceback" not in stderr


def test_a_plugins_hook_and_skill_load(project: Project) -> None:
    plugin = project.root / ".aerix" / "plugins" / "kit"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "kit", "version": "1.0.0"}')
    (plugin / "skills" / "greet").mkdir(parents=True)
    (plugin / "skills" / "greet" / "SKILL.md").write_text(
        "---\ndescription: Greet\n---\nGreet $ARGUMENTS warmly.\n"
    )
    (plugin / "hooks").mkdir()
    (plugin / "hooks" / "guard.py").write_text(textwrap.dedent(GUARD))
    hooks = {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": f"{PY} ${{CLAUDE_PLUGIN_ROOT}}/hooks/guard.py"}],
            }
        ]
    }
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"description": "a guard", "hooks": hooks}))
    broken = project.root / ".aerix" / "plugins" / "broken"
    (broken / "hooks").mkdir(parents=True)
    (broken / "hooks" / "hooks.json").write_text("{oops")
    result, events, stderr = project.run(
        ["investigate", turn(("bash", {"command": "rm -rf /tmp/x"})), final()], "/kit:greet Ada"
    )
    assert result["outcome"] == "done"
    [prompt] = of(events, "segment", kind="prompt")
    assert prompt["text"] == "Greet Ada warmly."
    assert results(events)["c1"] == "[bash c1]\nrefused: rm -rf is not allowed in this project"
    [run] = of(events, "hook", event="PreToolUse")
    assert run["plugin"] == "kit"
    assert stderr.count(f"plugin {broken}: skipped") == 1

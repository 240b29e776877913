"""The real Claude Code CLI (pinned: the one the Claude Agent SDK bundles) on ``caldrix serve``.

Claude Code runs offline against the front with the environment the issue gives; the pool's
member is the scripted engine (the embedded model's real vocabulary and template, answers from
a script), so the agent's behaviour is chosen and everything between — Claude Code's own
requests, the front, the tool grammar, the protocol, the prefix store — is real.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.caldrix.front_harness import claude_binary, claude_env, logged_requests, scripted_front

pytestmark = pytest.mark.e2e

CLAUDE_SECS = 600


def run_claude(front_url_env: dict[str, str], cwd: Path, prompt: str, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [str(claude_binary()), "-p", prompt, "--output-format", "json", *args],
        cwd=cwd,
        env=front_url_env,
        capture_output=True,
        text=True,
        timeout=CLAUDE_SECS,
    )
    assert done.returncode == 0, f"claude exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    result: dict[str, object] = json.loads(done.stdout)
    return result


def replies(front_log: str) -> list[tuple[int, int, int, str]]:
    """(prompt, resumed, output, stop reason) of each reply, from the front's log."""
    pattern = r"(\d+) prompt tokens \((\d+) resumed, \d+ computed\), (\d+) output tokens, (\w+)"
    return [(int(a), int(b), int(c), d) for a, b, c, d in re.findall(pattern, front_log)]


def write_call(path: Path, content: str) -> str:
    arguments = json.dumps({"file_path": str(path), "content": content})
    return f'<tool_call>\n{{"name": "Write", "arguments": {arguments}}}\n</tool_call>'


@pytest.mark.parametrize("tool_text", ["full", "brief"])
def test_claude_code_writes_a_file_through_the_front_and_resumes_its_prompt(
    tmp_path: Path, tool_text: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = work / "hello.txt"
    script = [write_call(target, "hi"), "I created hello.txt containing hi."]
    log = tmp_path / "requests"
    flags = ("--log-requests", str(log), "--tool-text", tool_text)
    with scripted_front(tmp_path, script, *flags) as (_, front):
        result = run_claude(
            claude_env(front.url, tmp_path / "home"),
            work,
            "Create hello.txt containing hi",
            "--permission-mode",
            "acceptEdits",
        )
        front_log = front.log()

    assert target.read_text() == "hi"
    assert result["is_error"] is False and result["subtype"] == "success"
    assert result["result"] == "I created hello.txt containing hi."
    first, second = replies(front_log)
    assert first[3] == "tool_use" and second[3] == "end_turn"
    # Claude Code's prompt (system, tools, environment) is over 8k tokens, about half that with
    # the tools brief (the call above still held to Write's full schema); the second request
    # adds the call and its result, and resumes the first one's rows.
    assert first[0] > 8000 if tool_text == "full" else 3000 < first[0] < 7000
    assert second[1] >= first[0] - 8, (first, second)
    usage = result["usage"]
    assert isinstance(usage, dict) and usage["cache_read_input_tokens"] == second[1]
    # Both requests as Claude Code sent them: streamed, with the billing header the front drops.
    requests = [r for r in logged_requests(log) if r["method"] == "POST"]  # the harness's HEAD / too
    assert [r["path"] for r in requests] == ["/v1/messages", "/v1/messages"]
    assert requests[0]["query"] == "beta=true" and requests[0]["body"]["stream"] is True
    assert requests[0]["body"]["system"][0]["text"].startswith("x-anthropic-billing-header:")
    assert "x-api-key" not in requests[0]["headers"] and "authorization" not in requests[0]["headers"]
    kinds = [block["type"] for block in requests[1]["body"]["messages"][-1]["content"]]
    assert kinds == ["tool_result"]


def test_claude_code_runs_a_subagent_through_the_front(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    call = {
        "description": "Say hello",
        "prompt": "SUBTASK-7 say hello",
        "subagent_type": "claude",
        "run_in_background": False,
    }
    script = [
        {
            "text": f'<tool_call>\n{{"name": "Agent", "arguments": {json.dumps(call)}}}\n</tool_call>',
            "when": "Delegate the greeting",
        },
        {"text": "SUBTASK-RESULT-7: hello", "when": "SUBTASK-7 say hello"},
        {"text": "The subagent said hello.", "when": "SUBTASK-RESULT-7"},
    ]
    with scripted_front(tmp_path, script) as (_, front):
        env = claude_env(front.url, tmp_path / "home")
        result = run_claude(env, work, "Delegate the greeting to a subagent")
        front_log = front.log()

    assert result["result"] == "The subagent said hello."
    stats = result["subagent_stats"]
    assert isinstance(stats, dict) and stats["completed"] == 1 and stats["failed"] == 0
    main_call, subagent, main_answer = replies(front_log)
    assert main_call[3] == "tool_use" and subagent[3] == "end_turn" and main_answer[3] == "end_turn"
    assert subagent[0] != main_call[0]  # the subagent's own, shorter prompt

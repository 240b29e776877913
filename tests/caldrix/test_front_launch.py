"""``caldrix launch claude``: the pool found, a front started with a fresh key, Claude Code run on
it with the environment it needs, the front stopped when Claude Code exits."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from caldrix.front.launch import claude_environment, mark_onboarded
from tests.caldrix.front_harness import claude_binary, launch_front, start_scripted

pytestmark = pytest.mark.e2e


def test_launch_runs_claude_on_the_pool_through_a_keyed_front(tmp_path: Path) -> None:
    # Words from the second paragraph of Claude Code's Bash description: a prompt that holds them
    # got the tools in full, where launch asks the front for --tool-text brief.
    full_tools = {"text": "The tools came in full.", "when": "Avoid using this tool to run"}
    pool = start_scripted(tmp_path, [full_tools, {"text": "Launched and answering.", "when": "MARK-launch"}])
    home = tmp_path / "home"
    home.mkdir()
    log = tmp_path / "requests"
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "caldrix",
                "launch",
                "claude",
                "--socket",
                str(pool.socket_path),
                "--claude",
                str(claude_binary()),
                f"--serve-flag=--log-requests={log}",
                "--",
                "-p",
                "MARK-launch say something",
                "--output-format",
                "json",
            ],
            cwd=tmp_path,
            env={
                **os.environ,
                "HOME": str(home),
                "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "ANTHROPIC_API_KEY": "sk-should-not-be-sent",
            },
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        pool.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["result"] == "Launched and answering."
    (request,) = [json.loads(p.read_text()) for p in sorted(log.glob("*-POST-v1_messages.json"))]
    assert request["body"]["model"] == "main"
    assert (
        not (home / ".claude.json").exists()
        or "hasCompletedOnboarding" not in (home / ".claude.json").read_text()
    )


def test_tool_text_brief_shortens_the_prompt_for_the_members_it_names(tmp_path: Path) -> None:
    body = {
        "model": "main",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {
                "name": "Bash",
                "description": "Runs a command.\n\n" + "Quote every path that has a space in it. " * 40,
                "input_schema": {
                    "type": "object",
                    "properties": {"command": {"type": "string", "description": "The command. " * 20}},
                },
            }
        ],
    }
    pool = start_scripted(tmp_path, [])
    counts: dict[str, int] = {}
    try:
        for flags in (
            (),
            ("--tool-text", "brief"),
            ("--tool-text", "main=brief"),
            ("--tool-text", "other=brief"),
        ):
            front = launch_front(tmp_path, pool.socket_path, *flags)
            try:
                with front.client() as client:
                    answer = client.post("/v1/messages/count_tokens", json=body)
                assert answer.status_code == 200, answer.text
                counts[" ".join(flags)] = answer.json()["input_tokens"]
            finally:
                front.stop()
        refused = subprocess.run(
            [
                sys.executable,
                "-m",
                "caldrix",
                "serve",
                "--socket",
                str(pool.socket_path),
                "--tool-text",
                "short",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        pool.stop()
    full = counts[""]
    assert counts["--tool-text brief"] == counts["--tool-text main=brief"] < full / 4
    assert counts["--tool-text other=brief"] == full
    assert refused.returncode == 64
    assert refused.stderr.strip() == (
        "caldrix: --tool-text short: give MODE or MEMBER=MODE, MODE one of full, brief"
    )


def test_launch_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "caldrix", "launch", "claude", "--claude", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 64
    assert done.stderr.strip() == f"caldrix: --claude {tmp_path / 'nothing'}: no such program"


def test_the_version_and_the_pool_never_import_the_http_stack() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "caldrix", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.startswith("caldrix ")
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert not imported & {"starlette", "uvicorn", "sse_starlette", "httpx2"}


def test_the_environment_claude_gets() -> None:
    env = claude_environment(
        {"PATH": "/bin", "ANTHROPIC_API_KEY": "sk-mine"}, "http://127.0.0.1:9", "k", "main", "decision"
    )
    assert env["PATH"] == "/bin"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["ANTHROPIC_AUTH_TOKEN"] == "k"
    assert env["ANTHROPIC_API_KEY"] == ""
    assert env["ANTHROPIC_MODEL"] == env["CLAUDE_CODE_SUBAGENT_MODEL"] == "main"
    assert env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == env["ANTHROPIC_SMALL_FAST_MODEL"] == "decision"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert int(env["API_TIMEOUT_MS"]) >= 600_000
    # Past Claude Code's default 300 s, so pings keep a slow stream going rather than a
    # non-streamed resend replacing it.
    assert int(env["CLAUDE_STREAM_IDLE_TIMEOUT_MS"]) > 300_000
    assert env["API_FORCE_IDLE_TIMEOUT"] == "0"


def test_a_pool_launch_starts_has_a_window_for_claude_code_and_flash_attention() -> None:
    from caldrix.cli.main import build_parser, serving_flags_from

    launched = build_parser().parse_args(["launch", "claude"])
    pool = build_parser().parse_args(["pool", *shlex.split(launched.pool_flags)])
    flags = serving_flags_from(pool)
    assert flags.ctx == 32768 and flags.flash_attention
    # --pool-flags replaces the default whole, flash attention included.
    launched = build_parser().parse_args(["launch", "claude", "--pool-flags", "--ctx 16384"])
    assert not serving_flags_from(
        build_parser().parse_args(["pool", *shlex.split(launched.pool_flags)])
    ).flash_attention


def test_onboarded_keeps_what_claude_json_held(tmp_path: Path) -> None:
    (tmp_path / ".claude.json").write_text(json.dumps({"theme": "dark"}))
    mark_onboarded(tmp_path)
    assert json.loads((tmp_path / ".claude.json").read_text()) == {
        "theme": "dark",
        "hasCompletedOnboarding": True,
    }

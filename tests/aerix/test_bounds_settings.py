"""Bounds, settings defaults, and the settings files: merge order, Claude Code hooks, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aerix.adapters.paths import config_home
from aerix.adapters.project.settings_files import claude_home, load_settings, parse_settings
from aerix.domain import bounds
from aerix.domain.settings import DEFAULT_MAIN_MODEL, HookHandler, MemberFlags, Settings
from aerix.errors import SettingsError
from caldrix.models.embedded import DEFAULT_MODEL_NAME


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_bounds_are_the_spec_numbers() -> None:
    assert (bounds.TURN_RETRIES, bounds.MAX_CALLS_PER_TURN, bounds.THOUGHT_MAX_CHARS) == (2, 8, 600)
    assert (bounds.HARD_LIMIT_HITS, bounds.MIN_CUT_TURN_TOKENS, bounds.RESULT_APPEND_TRIES) == (2, 64, 3)
    assert (bounds.STOP_HOOK_CONTINUES, bounds.ROUTING_MAX_TOKENS, bounds.CAS_RETRIES) == (5, 8, 3)
    assert (bounds.BASH_TIMEOUT_SECS, bounds.BASH_MAX_TIMEOUT_SECS, bounds.BASH_KILL_GRACE_SECS) == (
        120,
        600,
        2,
    )
    assert (bounds.BASH_CANCEL_POLL_SECS, bounds.JOB_WAIT_EXTRA_SECS, bounds.JOB_WAIT_POLL_SECS) == (
        0.1,
        10,
        1,
    )
    assert (bounds.HOOK_TIMEOUT_SECS, bounds.HOOK_SHORT_TIMEOUT_SECS) == (600, 30)
    assert {"UserPromptSubmit", "SessionEnd"} == bounds.HOOK_SHORT_TIMEOUT_EVENTS
    assert (bounds.POOL_CONTROL_TIMEOUT_SECS, bounds.FRAME_GAP_SECS, bounds.AUTOSTART_POLL_SECS) == (
        30,
        600,
        0.5,
    )
    assert (bounds.GIT_TIMEOUT_SECS, bounds.REMOTE_LOOKUP_TIMEOUT_SECS) == (30, 10)
    assert (bounds.COMPACTION_SKIP_TOKENS, bounds.BYTES_PER_TOKEN) == (24, 3)
    assert (bounds.GREP_MAX_FILE_BYTES, bounds.GREP_LINE_MAX_CHARS, bounds.GREP_MAX_MATCHES) == (
        8 << 20,
        400,
        200,
    )
    assert (bounds.READ_LIMIT_LINES, bounds.READ_LINE_MAX_CHARS) == (200, 2000)
    assert bounds.EXIT_BUDGET == 2


def test_defaults_are_the_spec_defaults() -> None:
    settings = Settings()
    assert settings.pool.caldrix == "caldrix" and settings.pool.socket is None
    # The default main model is the one caldrix names in its hints and setup pulls.
    assert settings.pool.main == DEFAULT_MAIN_MODEL == DEFAULT_MODEL_NAME == "qwen2.5-coder-1.5b"
    assert settings.pool.start_timeout_secs == 900 and settings.pool.max_connections == 4
    assert settings.pool.decision is None
    delegation = settings.delegation
    assert (delegation.max_turns, delegation.retries, delegation.depth, delegation.parallel) == (40, 2, 3, 4)
    assert delegation.planner_tools == ("repo_map", "agent", "plan", "context")
    assert (settings.context.soft_ratio, settings.context.target_ratio) == (0.70, 0.50)
    assert settings.context.tool_caps.cap_for("agent") == settings.context.tool_caps.agent
    assert settings.tune.member is None and settings.tune.sessions == 20
    assert settings.hooks == {}


def test_member_flags_become_command_line_and_load_flags() -> None:
    flags = MemberFlags(ctx=4096, threads=2, chat_template="chatml")
    assert flags.as_cli_args() == ["--ctx", "4096", "--threads", "2", "--chat-template", "chatml"]
    assert flags.as_load_flags() == {"ctx": 4096, "threads": 2, "chat_template": "chatml"}


def test_later_files_win_and_dotted_keys_work(tmp_path: Path) -> None:
    write_json(config_home() / "settings.json", {"pool": {"main": "user.gguf", "max_connections": 2}})
    write_json(tmp_path / ".aerix/settings.json", {"pool.main": "project.gguf", "delegation": {"depth": 1}})
    write_json(
        tmp_path / ".aerix/settings.local.json", {"delegation.depth": 2, "context.tool_caps.bash": 999}
    )
    loaded = load_settings(tmp_path)
    assert loaded.settings.pool.main == "project.gguf"
    assert loaded.settings.pool.max_connections == 2
    assert loaded.settings.delegation.depth == 2
    assert loaded.settings.context.tool_caps.bash == 999
    assert len(loaded.files) == 3


def test_claude_code_hooks_merge_and_other_claude_keys_are_ignored(tmp_path: Path) -> None:
    handler = {"type": "command", "command": "check.sh", "timeout": 30}
    write_json(claude_home() / "settings.json", {"model": "opus", "hooks": {"Stop": [{"hooks": [handler]}]}})
    write_json(
        tmp_path / ".claude/settings.json",
        {
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]},
        },
    )
    # The same handler again in the local file runs once; a new one is added.
    write_json(
        tmp_path / ".claude/settings.local.json",
        {
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [handler, {"type": "command", "command": "other.sh"}]}
                ]
            }
        },
    )
    write_json(
        tmp_path / ".aerix/settings.json",
        {
            "hooks": {
                "PreToolUse": [{"matcher": "edit", "hooks": [{"type": "command", "command": "aerix-own.sh"}]}]
            }
        },
    )
    hooks = load_settings(tmp_path).settings.hooks
    assert [h.command for g in hooks["Stop"] for h in g.hooks] == ["check.sh"]
    pre = [(group.matcher, [h.command for h in group.hooks]) for group in hooks["PreToolUse"]]
    assert pre == [("Bash", ["check.sh"]), ("edit", ["aerix-own.sh"]), ("Bash", ["other.sh"])]


def test_bad_json_names_the_file_and_the_place(tmp_path: Path) -> None:
    path = tmp_path / ".aerix/settings.json"
    path.parent.mkdir()
    path.write_text('{"pool": {"main": "x",}}')
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    assert str(path) in caught.value.message and "line 1" in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"pool": {"start_timeout": 5}}, "unknown key 'pool.start_timeout'"),
        ({"delegation.depth": "deep"}, "'delegation.depth'"),
        ({"delegation": {"planner_tools": ["repo_map", "shell"]}}, "unknown tool shell"),
        ({"context": {"soft_ratio": 0.4}}, "target_ratio must not exceed soft_ratio"),
        ({"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}, "a command hook needs a 'command'"),
        ([1, 2], "must hold a JSON object"),
    ],
)
def test_a_bad_value_is_one_line_naming_file_and_key(tmp_path: Path, data: object, expected: str) -> None:
    path = write_json(tmp_path / ".aerix/settings.local.json", data)
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    assert caught.value.message.startswith(f"settings: {path}: ")
    assert expected in caught.value.message
    assert "\n" not in caught.value.message


def test_hook_timeouts_default_by_event() -> None:
    handler = HookHandler(command="x")
    assert handler.timeout_for("PreToolUse") == 600 and handler.timeout_for("UserPromptSubmit") == 30
    assert (
        handler.timeout_for("SessionEnd") == 30
        and HookHandler(command="x", timeout=5).timeout_for("Stop") == 5
    )


def test_parse_settings_accepts_a_mapping() -> None:
    settings = parse_settings({"tune.member": "big.gguf", "disableAllHooks": True}, "inline")
    assert settings.tune.member == "big.gguf" and settings.disable_all_hooks

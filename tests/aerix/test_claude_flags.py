"""Claude Code's command line and stdin protocol on aerix, piece by piece: the flags (acted on,
ignored and named, refused), the settings flags, and the stdin lines. The whole runs, with the
Claude Agent SDK as the client, are tests/aerix/test_claude_sdk.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from aerix.adapters.claude.stream_input import BadLine, ControlRequest, UserPrompt, parse_line
from aerix.adapters.paths import config_home
from aerix.adapters.project.settings_files import SettingsOverrides, load_settings, parse_sources
from aerix.app.request.options import RequestFlags, SessionOptions
from aerix.claude_flags import ACTED_ON, IGNORED, ignored_note
from aerix.cli.main import build_parser, main, split_prompt
from aerix.domain.bounds import EXIT_USAGE
from aerix.errors import SettingsError
from aerix.wiring.stream_session import run_stream_input

DOCS = Path(__file__).parents[2] / "docs" / "commands.md"


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_the_sdks_command_line_parses_and_names_only_what_aerix_ignores() -> None:
    sdk_line = [
        *("--output-format", "stream-json", "--verbose", "--system-prompt", "", "--max-turns", "3"),
        *("--allowedTools", "Read,Bash", "--disallowedTools", "WebSearch", "--model", "claude-sonnet-4-5"),
        *("--permission-mode", "bypassPermissions", "--resume=abc", "--setting-sources=user,project"),
        *("--add-dir", "/tmp", "--mcp-config", '{"mcpServers": {}}', "--include-partial-messages"),
        *("--max-budget-usd", "0.5", "--fork-session", "--plugin-dir", "/p", "--max-thinking-tokens", "9"),
        *("--effort", "low", "--json-schema", "{}", "--input-format", "stream-json"),
    ]
    args = build_parser().parse_args(sdk_line)
    assert (args.resume, args.max_turns, args.setting_sources) == ("abc", 3, "user,project")
    assert args.disallowed_tools == [
        "WebSearch"
    ]  # acted on: a deny rule (tests/aerix/test_permissions_e2e.py)
    assert args.fork_session  # acted on: the session is copied (tests/aerix/test_fork_session.py)
    note = ignored_note(args)
    assert note is not None and note.count("\n") == 0
    named = note.split(": ", 1)[1].split(", ")
    assert named == [
        *("--model", "--mcp-config", "--include-partial-messages"),
        *("--plugin-dir", "--max-thinking-tokens", "--effort", "--json-schema"),
    ]
    quiet = build_parser().parse_args(["--output-format", "stream-json", "--system-prompt", ""])
    assert ignored_note(quiet) is None
    planned = build_parser().parse_args(
        ["-p", "x", "--permission-mode", "plan", "--system-prompt", "Be terse"]
    )
    assert ignored_note(planned) == (
        "ignored (Claude Code flags aerix does not act on; see docs/commands.md): "
        "--system-prompt, --permission-mode plan"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input-format", "stream-json", "-p", "x"], "needs --output-format stream-json"),
        (["-p", "x", "--output-format", "stream-json", "--input-format", "stream-json"], "drop -p's PROMPT"),
        (["-p", "x", "--session-id", "not-a-uuid"], "--session-id not-a-uuid is not a UUID"),
        (["-p", "x", "--setting-sources", "user,team"], "team is not a settings source"),
        (["-p", "x", "--disallowedTools", "Read,Bash(rm"], "--disallowedTools: 'Bash(rm' has no closing ')'"),
        (["-p", "x", "--disallowedTools", "Bash()"], "write Bash to deny every call"),
    ],
)
def test_a_claude_flag_used_wrongly_is_one_line_and_nothing_runs(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert message in captured.err and captured.err.count("\n") == 1 and captured.out == ""


def test_an_unknown_flag_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--output-format", "stream-json", "--no-such-flag"])
    assert exited.value.code == EXIT_USAGE and "--no-such-flag" in capsys.readouterr().err


def test_every_claude_flag_is_in_the_docs() -> None:
    docs = DOCS.read_text()
    for flag in (*ACTED_ON, *(flag for flag, _, _ in IGNORED)):
        assert f"`{flag}" in docs, flag


def test_setting_sources_and_settings_layer_the_files(tmp_path: Path) -> None:
    write_json(config_home() / "settings.json", {"pool": {"main": "user.gguf"}})
    write_json(tmp_path / ".aerix/settings.json", {"delegation": {"depth": 1}})
    project_only = load_settings(tmp_path, SettingsOverrides(sources=parse_sources("project")))
    assert project_only.settings.pool.main != "user.gguf" and project_only.settings.delegation.depth == 1
    assert project_only.files == (tmp_path / ".aerix/settings.json",)
    # --settings: JSON text above the local files, Claude's keys and aerix's, others left out.
    text = json.dumps(
        {
            "disableAllHooks": True,
            "delegation.depth": 2,
            "permissions": {"deny": ["Bash"]},
            "spinnerTipsEnabled": 1,
        }
    )
    layered = load_settings(tmp_path, SettingsOverrides(extra=text))
    assert layered.settings.disable_all_hooks and layered.settings.delegation.depth == 2
    assert [(deny.rule.text, deny.origin) for deny in layered.permissions.deny] == [("Bash", "--settings")]
    assert layered.settings.pool.main == "user.gguf" and layered.files[-1] == Path("--settings")
    # ... or a file, relative to the working directory.
    write_json(tmp_path / "sub" / "extra.json", {"pool": {"main": "extra.gguf"}})
    from_file = load_settings(tmp_path, SettingsOverrides(extra="extra.json"), cwd=tmp_path / "sub")
    assert from_file.settings.pool.main == "extra.gguf"
    with pytest.raises(SettingsError, match="--settings: not valid JSON"):
        load_settings(tmp_path, SettingsOverrides(extra="{nope"))
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(tmp_path, SettingsOverrides(extra="missing.json"))
    with pytest.raises(SettingsError, match="--settings"):
        load_settings(tmp_path, SettingsOverrides(extra=json.dumps({"delegation": {"depth": "deep"}})))


def test_stdin_lines_are_prompts_control_requests_or_one_named_problem() -> None:
    sdk_prompt = {"type": "user", "session_id": "", "message": {"role": "user", "content": "hi"}}
    assert parse_line(1, json.dumps(sdk_prompt)) == UserPrompt("hi")
    blocks = [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {}},
        {"type": "text", "text": "here"},
    ]
    assert parse_line(2, json.dumps({"type": "user", "message": {"content": blocks}})) == UserPrompt(
        "look\nhere", ("image",)
    )
    request = {"type": "control_request", "request_id": "r1", "request": {"subtype": "interrupt"}}
    assert parse_line(3, json.dumps(request)) == ControlRequest("r1", "interrupt", {"subtype": "interrupt"})
    for quiet in ({"type": "keep_alive"}, {"type": "control_response", "response": {}}):
        assert parse_line(4, json.dumps(quiet)) is None
    assert parse_line(5, "   ") is None
    assert parse_line(6, "{oops") == BadLine(
        6, "not JSON (Expecting property name enclosed in double quotes, column 2)"
    )
    assert parse_line(7, "[1]") == BadLine(7, "not a JSON object")
    assert isinstance(parse_line(8, json.dumps({"type": "assistant"})), BadLine)
    assert isinstance(parse_line(9, json.dumps({"type": "user", "message": {}})), BadLine)
    assert isinstance(parse_line(10, json.dumps({"type": "control_request", "request": {}})), BadLine)


def test_control_requests_are_answered_without_a_pool_and_a_bad_line_is_one_note(
    tmp_path: Path,
) -> None:
    """No user line, so no request runs: the control requests are answered from the settings
    alone; a line that is not JSON, or not text, is one note each, not a traceback."""
    requests = [
        {
            "type": "control_request",
            "request_id": "i",
            "request": {"subtype": "initialize", "hooks": {"Stop": []}},
        },
        {
            "type": "control_request",
            "request_id": "m",
            "request": {"subtype": "set_permission_mode", "mode": "plan"},
        },
        {
            "type": "control_request",
            "request_id": "b",
            "request": {"subtype": "set_permission_mode", "mode": "bypassPermissions"},
        },
        {"type": "control_request", "request_id": "s", "request": {"subtype": "mcp_status"}},
        {"type": "control_request", "request_id": "x", "request": {"subtype": "get_context_usage"}},
    ]
    raw = "".join(json.dumps(r) + "\n" for r in requests).encode() + b"{nope\n\xff\xfe\n"
    source = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert run_stream_input(SessionOptions(tmp_path), RequestFlags(), source, out, err) == 0
    answers = {
        line["response"]["request_id"]: line["response"]
        for line in map(json.loads, out.getvalue().splitlines())
    }
    assert answers["i"]["subtype"] == "success" and answers["i"]["response"]["commands"] == []
    assert answers["m"] == {
        "subtype": "error",
        "request_id": "m",
        "error": "aerix -p asks no permission: it runs as bypassPermissions",
    }
    assert (answers["b"]["subtype"], answers["s"]["response"]) == ("success", {"mcpServers": []})
    assert answers["x"]["subtype"] == "error" and "get_context_usage" in answers["x"]["error"]
    notes = err.getvalue().splitlines()
    assert notes[0].startswith("aerix: the SDK's hook callbacks are not called")
    assert notes[1].startswith("aerix: stdin line 6: not JSON")
    assert notes[2] == "aerix: stdin line 7: not UTF-8 text; left out" and len(notes) == 3


def test_a_claude_flags_value_is_never_taken_for_the_first_prompt() -> None:
    argv = ["--system-prompt", "", "--model", "m", "--allowedTools", "Read", "fix it", "--effort", "low"]
    assert split_prompt(argv, ["sessions"]) == (
        ["--system-prompt", "", "--model", "m", "--allowedTools", "Read", "--effort", "low"],
        "fix it",
    )

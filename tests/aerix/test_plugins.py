"""Plugins found at startup: Claude Code's plugin layout in aerix's user and project plugin
folders, ``enabledPlugins``, bad files as notes, and the startup listing the output shows.
Real folders in a real git repository, read through ``ProjectFiles`` as a request reads them."""

from __future__ import annotations

import io
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from aerix.adapters.claude.output import HeadlessOutput
from aerix.adapters.paths import claude_projects_dir, config_home
from aerix.adapters.project.project import ProjectFiles
from aerix.app.pool.members import BoundMembers
from aerix.app.ports.pool import MemberInfo
from aerix.app.request.opening import startup_listing
from aerix.domain import events as ev
from aerix.domain.claude_tools import claude_tool_name
from aerix.domain.tools import TOOL_NAMES
from aerix.projections.claude_stream import ClaudeStream


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


GUARD = {"type": "command", "command": "./guard.sh", "timeout": 10}
LINT, TRUE = {"type": "command", "command": "make lint"}, {"type": "command", "command": "true"}
HOOKS = {
    "description": "guards",
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [GUARD]}],
        "Stop": [{"hooks": [LINT, TRUE]}],
    },
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    user = config_home() / "plugins"
    manifest = {"name": "reviewer", "version": "1.2.0", "description": "Code review helpers", "author": {}}
    write(user / "review-kit" / ".claude-plugin" / "plugin.json", json.dumps(manifest))
    write(user / "review-kit" / "skills" / "review" / "SKILL.md", "Review $ARGUMENTS\n")
    write(user / "review-kit" / "agents" / "critic.md", "---\nname: critic\n---\nBe critical.\n")
    write(user / "review-kit" / "hooks" / "hooks.json", json.dumps(HOOKS))
    write(user / "shared" / "commands" / "ship.md", "Ship it.\n")  # no manifest: named by its folder
    write(user / "not-a-plugin" / "README.md", "just a folder\n")
    project = root / ".aerix" / "plugins"
    write(project / "shared" / ".claude-plugin" / "plugin.json", '{"name": "shared", "version": "2.0"}')
    write(project / "broken" / ".claude-plugin" / "plugin.json", "{not json")
    write(project / "loose" / "hooks" / "hooks.json", '{"hooks": {"Stop": "make"}}')
    return root


def test_plugins_are_found_in_user_and_project_folders(repo: Path) -> None:
    project = ProjectFiles().load(repo / "src")
    by_name = {plugin.name: plugin for plugin in project.plugins}
    assert list(by_name) == ["reviewer", "shared"]
    reviewer = by_name["reviewer"]
    assert (reviewer.scope, reviewer.version) == ("user", "1.2.0")
    assert reviewer.description == "Code review helpers"
    assert (reviewer.skills, reviewer.agents) == (("review",), ("critic",))
    assert reviewer.hooks == ("PreToolUse (1)", "Stop (2)")
    assert reviewer.enabled and reviewer.path == config_home() / "plugins" / "review-kit"
    shared = by_name["shared"]  # the project's replaces the user's of the same name
    assert (shared.scope, shared.version, shared.commands) == ("project", "2.0", ())
    # A broken plugin (its manifest or its hooks.json unusable) is one note, and skipped.
    notes = [note for note in project.notes if note.startswith("plugin ")]
    assert len(notes) == 2
    broken, loose = repo / ".aerix" / "plugins" / "broken", repo / ".aerix" / "plugins" / "loose"
    assert notes[0].startswith(f"plugin {broken}: skipped (plugin.json is not valid JSON")
    assert notes[1].startswith(f"plugin {loose}: skipped (hooks/hooks.json: 'Stop'")


def test_enabled_plugins_bring_their_skills_commands_and_hooks(repo: Path) -> None:
    plugin = config_home() / "plugins" / "review-kit"
    write(plugin / "commands" / "triage.md", "---\ndescription: Triage an issue\n---\nTriage #$1 in $2.\n")
    write(plugin / "skills" / "lint" / "SKILL.md", "Run ${CLAUDE_PLUGIN_ROOT}/bin/lint on $0.\n")
    write(repo / ".claude" / "commands" / "frontend" / "ship.md", "Ship $1 now; all: $ARGUMENTS\n")
    write(repo / ".claude" / "skills" / "ship" / "SKILL.md", "The skill ship beats the command.\n")
    write(repo / ".claude" / "commands" / "fix.md", "Fix issue $1 ($ARGUMENTS).\n")
    project = ProjectFiles().load(repo)
    names = project.skills.names
    assert {"reviewer:review", "reviewer:triage", "reviewer:lint", "fix", "ship"} <= set(names)
    assert project.skills.expand_prompt("/reviewer:triage 42 web") == "Triage #42 in web."
    lint = project.skills.expand_prompt("/reviewer:lint src")
    assert lint.startswith(f"Run {plugin}/bin/lint on src.\n") and lint.endswith("ARGUMENTS: src")
    assert project.skills.expand_prompt("/fix 7") == "Fix issue 7 (7).\n"
    assert project.skills.expand_prompt("/ship") == "The skill ship beats the command.\n"
    [settings_hooks, reviewer_hooks] = project.hook_sources
    assert (reviewer_hooks.plugin, reviewer_hooks.plugin_root) == ("reviewer", str(plugin))
    assert list(reviewer_hooks.hooks) == ["PreToolUse", "Stop"] and settings_hooks.plugin is None
    write(repo / ".aerix" / "settings.json", json.dumps({"enabledPlugins": {"reviewer": False}}))
    off = ProjectFiles().load(repo)
    assert "reviewer:review" not in off.skills.names and len(off.hook_sources) == 1


def test_claude_codes_installed_plugins_load_when_its_settings_enable_them(
    repo: Path, tmp_path: Path
) -> None:
    claude = claude_projects_dir().parent
    install = claude / "plugins" / "cache" / "acme" / "formatter" / "1.0.0"
    write(install / ".claude-plugin" / "plugin.json", '{"name": "formatter", "version": "1.0.0"}')
    write(install / "hooks" / "hooks.json", json.dumps({"hooks": {"PostToolUse": [{"hooks": [TRUE]}]}}))
    write(install / "skills" / "format" / "SKILL.md", "Format the code.\n")
    installs = {
        "version": 2,
        "plugins": {"formatter@acme": [{"installPath": str(install), "version": "1.0.0"}]},
    }
    write(claude / "plugins" / "installed_plugins.json", json.dumps(installs))
    installed = {p.name: p for p in ProjectFiles().load(repo).plugins}["formatter"]
    assert (installed.scope, installed.enabled) == ("claude", False)  # installed, not enabled
    write(claude / "settings.json", json.dumps({"enabledPlugins": {"formatter@acme": True}}))
    project = ProjectFiles().load(repo)
    assert {p.name: p for p in project.plugins}["formatter"].enabled
    assert "formatter:format" in project.skills.names
    assert [source.plugin for source in project.hook_sources] == [None, "formatter", "reviewer"]


def test_disable_all_hooks_and_what_aerix_does_not_run_are_startup_notes(repo: Path) -> None:
    hooks = {
        "Notification": [{"hooks": [TRUE]}],
        "PreToolUse": [{"hooks": [{"type": "http", "url": "http://localhost:1/h"}]}],
    }
    write(repo / ".claude" / "settings.json", json.dumps({"hooks": hooks}))
    project = ProjectFiles().load(repo)
    notes = [note for note in project.notes if note.startswith("hooks (settings)")]
    assert notes == [
        "hooks (settings): 1 'http' handler is not run; aerix runs command hooks",
        "hooks (settings): Notification is not an event aerix fires; its handlers never run",
    ]
    write(repo / ".claude" / "settings.local.json", json.dumps({"disableAllHooks": True}))
    assert ProjectFiles().load(repo).hook_sources == ()


def test_enabled_plugins_turns_one_off_by_name_or_marketplace_key(repo: Path) -> None:
    write(repo / ".aerix" / "settings.json", json.dumps({"enabledPlugins": {"reviewer@acme": False}}))
    write(repo / ".aerix" / "settings.local.json", json.dumps({"enabledPlugins": {"shared": True}}))
    project = ProjectFiles().load(repo)
    enabled = {plugin.name: plugin.enabled for plugin in project.plugins}
    assert enabled == {"reviewer": False, "shared": True}


def test_the_startup_listing_reaches_the_stream_json_init_line(repo: Path) -> None:
    write(repo / "AGENTS.md", "Be brief.\n")
    write(repo / ".aerix" / "skills" / "deploy" / "SKILL.md", "Deploy.\n")
    write(repo / ".aerix" / "settings.json", json.dumps({"hooks": HOOKS["hooks"]}))
    project = ProjectFiles().load(repo)
    main = MemberInfo("main", "smollm2-135m", "ready", 8192, "cpu", ("json", "one_of"))
    listing = startup_listing(project, BoundMembers(main))
    out, err = io.StringIO(), io.StringIO()
    output = HeadlessOutput("stream-json", out, err, ClaudeStream())
    output.startup(listing)
    start = ev.SessionStart(
        seq=1,
        time=datetime(2025, 1, 2, tzinfo=UTC),
        session="s1",
        cwd=str(repo),
        project="k",
        model="smollm2-135m",
        prompt="hi",
        aerix_version="0.1.0",
    )
    output.stream.take(start)  # as the session's writer feeds it
    output.event(start)
    init = json.loads(out.getvalue())
    assert (init["type"], init["subtype"], init["session_id"]) == ("system", "init", "s1")
    assert init["tools"] == [claude_tool_name(tool) for tool in TOOL_NAMES]  # Claude Code's names
    assert init["skills"] == ["deploy", "reviewer:review"]
    assert init["members"] == {"main": "smollm2-135m", "decision": None}
    assert init["instruction_files"] == [str(repo / "AGENTS.md")]
    assert init["settings_files"] == [str(repo / ".aerix" / "settings.json")]
    assert init["hooks"] == ["PreToolUse (1)", "Stop (2)"]
    assert [(p["name"], p["enabled"], p["scope"]) for p in init["plugins"]] == [
        ("reviewer", True, "user"),
        ("shared", True, "project"),
    ]
    assert init["plugins"][0]["path"] == str(config_home() / "plugins" / "review-kit")


def test_enabled_plugins_bring_their_agent_definitions_namespaced(repo: Path) -> None:
    project = ProjectFiles().load(repo)
    critic = project.agents.get("reviewer:critic")
    assert critic is not None and critic.body == "Be critical."
    assert project.agents.names == ("reviewer:critic",)
    write(repo / ".aerix" / "settings.json", json.dumps({"enabledPlugins": {"reviewer": False}}))
    assert ProjectFiles().load(repo).agents.names == ()

"""The root agent's prompt note and tools for a planner, from the embedded prompts and the
settings as a user writes them."""

from __future__ import annotations

from aerix.adapters.project.settings_files import parse_settings
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.app.request.root_context import planner_tool_names, prompt_text, root_tools
from aerix.domain.permissions import Permissions, parse_base_tools, rules_from
from aerix.domain.tools import TOOL_NAMES


def test_the_planner_note_names_the_configured_tools() -> None:
    settings = parse_settings({"delegation.planner_tools": ["repo_map", "plan", "agent"]})
    planner_tools = settings.delegation.planner_tools
    text = prompt_text("Split the parser.", "plan", EmbeddedPrompts(), planner_tools)
    assert text.startswith("Split the parser.\n\nYou are the planner for this request.")
    assert "You may only use repo_map, plan and agent." in text and "{tools}" not in text
    assert [tool.name for tool in root_tools("plan", settings)] == ["repo_map", "plan", "agent"]


def test_the_default_planner_note_and_the_other_routes() -> None:
    default = prompt_text("Fix it.", "edit", EmbeddedPrompts())
    assert "You may only use repo_map, agent, plan and context." in default
    assert prompt_text("Why?", "answer", EmbeddedPrompts()) == "Why?"
    assert [tool.name for tool in root_tools("investigate", parse_settings({}))] == list(TOOL_NAMES)


def test_the_permissions_narrow_the_root_and_the_planner_note_says_what_is_left() -> None:
    settings = parse_settings({})
    permissions = Permissions(rules_from(["repo_map", "Bash(rm:*)"], "settings.json"))
    assert [tool.name for tool in root_tools("plan", settings, permissions)] == ["agent", "plan", "context"]
    assert "bash" in [tool.name for tool in root_tools("answer", settings, permissions)]  # a specifier: kept
    names = planner_tool_names(settings, permissions)
    assert "You may only use agent, plan and context." in prompt_text(
        "Fix it.", "edit", EmbeddedPrompts(), names
    )
    only = Permissions(base=parse_base_tools("Read,Grep"))
    assert [tool.name for tool in root_tools("investigate", settings, only)] == ["read", "grep"]
    assert planner_tool_names(settings, only) == []


def test_a_planner_that_could_not_delegate_is_no_planner() -> None:
    without_agents = parse_settings({"delegation.depth": 0})
    edit_tools = [tool.name for tool in root_tools("edit", without_agents)]
    assert edit_tools == [name for name in TOOL_NAMES if name != "agent"]
    assert planner_tool_names(without_agents) == []
    assert prompt_text("Fix it.", "edit", EmbeddedPrompts(), []) == "Fix it."
    denied = Permissions(rules_from(["Agent"], "settings.json"))
    assert "agent" not in [tool.name for tool in root_tools("plan", parse_settings({}), denied)]
    assert "write" in [tool.name for tool in root_tools("plan", parse_settings({}), denied)]
    only = Permissions(base=parse_base_tools("Read,Grep"))
    assert [tool.name for tool in root_tools("edit", parse_settings({}), only)] == ["read", "grep"]


def test_the_planner_routes_setting_says_which_roots_only_delegate() -> None:
    acting = parse_settings({"delegation.planner_routes": ["plan"]})
    routes = acting.delegation.planner_routes
    assert [tool.name for tool in root_tools("edit", acting)] == list(TOOL_NAMES)
    assert prompt_text("Fix it.", "edit", EmbeddedPrompts(), planner_tool_names(acting), routes) == "Fix it."
    assert "You may only use" in prompt_text(
        "Split it.", "plan", EmbeddedPrompts(), planner_tool_names(acting), routes
    )
    assert [tool.name for tool in root_tools("plan", acting)] == ["repo_map", "agent", "plan", "context"]
    nowhere = parse_settings({"delegation.planner_routes": []})
    assert [tool.name for tool in root_tools("plan", nowhere)] == list(TOOL_NAMES)
    assert planner_tool_names(nowhere) == []

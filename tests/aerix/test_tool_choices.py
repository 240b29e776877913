"""A tool field that names something is built from what exists: the turn schema offers the
installed definitions, the loaded members and the installed skills as enums, or leaves the
field out, and llguidance then refuses any other name. The system segment lists the same."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from llguidance import LLMatcher, LLTokenizer

from aerix.domain.input_check import input_problem
from aerix.domain.tool_choices import (
    MEMBER_OFFERED_WHEN,
    NO_SKILLS_DESCRIPTION,
    ToolChoices,
    listed_tools,
    offered_tools,
)
from aerix.domain.tools import AGENT, SKILL, TOOLS, TOOLS_BY_NAME, render_tool_descriptions
from aerix.domain.turns import turn_schema

BYTES = LLTokenizer("byte")
PROSE = "The function should take a string as input"


def _offered(choices: ToolChoices) -> dict[str, dict[str, Any]]:
    return {tool.name: dict(tool.input_schema) for tool in offered_tools(TOOLS, choices)}


def _accepts(schema: dict[str, Any], tool: str, tool_input: Mapping[str, object]) -> bool:
    text = json.dumps({"thought": "t", "calls": [{"tool": tool, "input": tool_input}]})
    grammar = LLMatcher.grammar_from_json_schema(schema)
    matcher = LLMatcher(BYTES, grammar, log_level=0)
    return matcher.consume_tokens(BYTES.tokenize_bytes(text.encode())) and matcher.is_accepting()


def test_installed_definitions_and_other_members_become_enums() -> None:
    choices = ToolChoices(("reader", "tidy"), ("notes",), members=("main", "big"), own_member="main")
    agent = _offered(choices)["agent"]["properties"]
    assert agent["definition"] == {
        "type": "string",
        "description": "an agent definition to use (optional)",
        "enum": ["reader", "tidy"],
    }
    assert agent["member"]["enum"] == ["main", "big"] and "maxLength" not in agent["member"]
    assert _offered(choices)["skill"]["properties"]["name"]["enum"] == ["notes"]
    # The other tools are the catalogue's own.
    assert offered_tools(TOOLS, choices)[0] is TOOLS_BY_NAME["read"]


def test_nothing_to_name_leaves_the_field_out() -> None:
    alone = ToolChoices((), (), members=("main",), own_member="main")
    agent = _offered(alone)["agent"]
    assert list(agent["properties"]) == ["brief", "check"]
    assert agent["required"] == ["brief", "check"]
    # No skill installed: the tool stays (every agent has every tool), and only lists.
    [skill] = [tool for tool in offered_tools(TOOLS, alone) if tool.name == "skill"]
    assert list(skill.properties) == ["list"] and skill.description == NO_SKILLS_DESCRIPTION
    # A pool with no member ready but the caller's (another one loading, say) names none either.
    assert "member" not in _offered(ToolChoices(members=("main",), own_member="main"))["agent"]["properties"]
    # The catalogue is untouched.
    assert list(AGENT.properties) == ["brief", "check", "definition", "member"]
    assert list(SKILL.properties) == ["name", "args", "list"]


def test_the_constraint_refuses_a_name_that_does_not_exist() -> None:
    named = turn_schema(offered_tools(TOOLS, ToolChoices(("reader",), ("notes",), ("main", "big"), "main")))
    bare = turn_schema(offered_tools(TOOLS, ToolChoices(members=("main",), own_member="main")))
    for schema in (named, bare):
        assert LLMatcher.validate_grammar(LLMatcher.grammar_from_json_schema(schema), BYTES) == ""
        jsonschema.Draft202012Validator.check_schema(schema)
    call = {"brief": "b", "check": "c"}
    # The catalogue's own field is free text: the prose a small model wrote fits in it.
    assert _accepts(turn_schema(TOOLS), "agent", {**call, "definition": PROSE, "member": PROSE})
    assert _accepts(named, "agent", {**call, "definition": "reader", "member": "big"})
    assert not _accepts(named, "agent", {**call, "definition": PROSE})
    assert not _accepts(named, "agent", {**call, "member": PROSE})
    assert not _accepts(named, "skill", {"name": PROSE})
    assert _accepts(named, "skill", {"name": "notes", "args": "x"})
    assert _accepts(bare, "agent", call)
    assert not _accepts(bare, "agent", {**call, "definition": "reader"})
    assert not _accepts(bare, "agent", {**call, "member": "main"})
    assert not _accepts(bare, "skill", {"name": "notes"})
    assert _accepts(bare, "skill", {"list": True})


def test_an_unconstrained_turn_is_told_the_names_there_are() -> None:
    """A member without the JSON constraint can still write the prose; the parse names the
    choices (the turn is asked again instead of the call failing as a result)."""
    [agent] = [
        tool
        for tool in offered_tools(
            TOOLS, ToolChoices(("reader", "tidy"), members=("main",), own_member="main")
        )
        if tool.name == "agent"
    ]
    call = {"brief": "b", "check": "c"}
    assert input_problem({**call, "definition": PROSE}, agent.input_schema) == (
        "'definition' must be one of reader, tidy"
    )
    assert input_problem({**call, "member": "big"}, agent.input_schema) == (
        "unknown field 'member' (fields: brief, check, definition)"
    )


def test_the_system_segment_lists_what_the_schema_offers() -> None:
    listed = render_tool_descriptions(listed_tools(TOOLS, ("reader", "tidy"), ("notes",)))
    assert (
        "  input: brief (string); check (string); definition (reader | tidy, optional); "
        "member (string, optional)\n" in listed
    )
    assert MEMBER_OFFERED_WHEN.strip() in listed
    assert "  input: name (notes, optional); args (string, optional); list (boolean, optional)" in listed
    bare = render_tool_descriptions(listed_tools(TOOLS, (), ()))
    assert "  input: brief (string); check (string); member (string, optional)\n" in bare
    assert f"- skill: {NO_SKILLS_DESCRIPTION}\n  input: list (boolean, optional)\n" in bare
    # Every tool is still listed: the text is the same for every agent of the directory.
    assert [line.split(":")[0] for line in bare.splitlines() if line.startswith("- ")] == [
        f"- {tool.name}" for tool in TOOLS
    ]

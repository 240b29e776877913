"""The turn schema compiles in llguidance and constrains what the spec says; parsing keeps the
spec's limits and explains failures to the model."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from llguidance import LLMatcher, LLTokenizer

from aerix.domain import bounds
from aerix.domain.tools import (
    DEFAULT_PLANNER_TOOLS,
    TOOLS,
    TOOLS_BY_NAME,
    VERIFIER_TOOLS,
    render_tool_descriptions,
)
from aerix.domain.turns import (
    ECHOED_PLACEHOLDER,
    ECHOED_THOUGHT,
    EMPTY_FINAL,
    TurnParseError,
    parse_turn,
    render_turns_section,
    turn_schema,
)

PLANNER = [TOOLS_BY_NAME[name] for name in DEFAULT_PLANNER_TOOLS]
VERIFIER = [TOOLS_BY_NAME[name] for name in VERIFIER_TOOLS]
BYTES = LLTokenizer("byte")


def grammar(schema: dict[str, object]) -> str:
    return LLMatcher.grammar_from_json_schema(schema)


def accepts(schema: dict[str, object], text: str) -> bool:
    matcher = LLMatcher(BYTES, grammar(schema), log_level=0)
    return matcher.consume_tokens(BYTES.tokenize_bytes(text.encode())) and matcher.is_accepting()


@pytest.mark.parametrize(
    ("tools", "verifier"), [(TOOLS, False), (PLANNER, False), (VERIFIER, True), ((), False)]
)
def test_schema_compiles_in_llguidance(tools: list, verifier: bool) -> None:
    schema = turn_schema(tools, verifier=verifier)
    assert LLMatcher.validate_grammar(grammar(schema), BYTES) == ""
    jsonschema.Draft202012Validator.check_schema(schema)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (*_strings(key), *_strings(item))]
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


def test_the_examples_shown_to_the_model_are_placeholders_it_cannot_pass_off_as_answers() -> None:
    """A small model echoes its example: "The project builds with `make`; I read README.md to
    check." came back as the answer to five different requests."""
    section = render_turns_section()
    examples = [line.strip() for line in section.splitlines() if line.strip().startswith("{")]
    assert len(examples) == 3
    call, final, verdict = (json.loads(example) for example in examples)
    assert (set(call), set(final), set(verdict)) == (
        {"thought", "calls"},
        {"thought", "final"},
        {"thought", "final"},
    )
    values = [
        s for s in _strings([call, final, verdict]) if s not in ("thought", "calls", "final", "tool", "input")
    ]
    assert values and all(
        s.startswith("<") and s.endswith(">") for s in values if s not in ("verdict", "reason")
    )
    # Under the constraint the call's tool and the verdict cannot be written as shown …
    assert not accepts(turn_schema(TOOLS), examples[0])
    assert not accepts(turn_schema(VERIFIER, verifier=True), examples[2])
    # … and a final (or a verdict's reason) that only echoes its placeholder does not parse.
    assert accepts(turn_schema(TOOLS), examples[1])
    with pytest.raises(TurnParseError, match="only repeats the example's placeholder") as raised:
        parse_turn(examples[1], TOOLS)
    assert raised.value.problem == ECHOED_PLACEHOLDER
    echoed = json.dumps({"thought": "ok", "final": {"verdict": "pass", "reason": verdict["final"]["reason"]}})
    with pytest.raises(TurnParseError, match="placeholder"):
        parse_turn(echoed, VERIFIER, verifier=True)
    # A mix of the examples' words is no answer either (smollm2-135m answered this one).
    with pytest.raises(TurnParseError, match="placeholder"):
        parse_turn(
            '{"thought": "<what you found>", "final": "<what you checked and what they showed>"}', TOOLS
        )
    assert parse_turn('{"thought": "ok", "final": "I read <a.txt>."}', TOOLS).final == "I read <a.txt>."


@pytest.mark.parametrize(
    "thought",
    ["<why these calls>", "<what you did>", " <why you are done> ", "<what you found>"],
)
def test_a_thought_that_only_echoes_a_placeholder_does_not_parse(thought: str) -> None:
    """The screen showed a turn whose thought was "<what you did>": a mix of the examples' words."""
    calls = json.dumps({"thought": thought, "calls": [{"tool": "read", "input": {"path": "a.txt"}}]})
    with pytest.raises(TurnParseError) as raised:
        parse_turn(calls, TOOLS)
    assert raised.value.problem == ECHOED_THOUGHT
    assert raised.value.message.startswith(f"Your answer was not a valid turn: {ECHOED_THOUGHT}. ")
    with pytest.raises(TurnParseError) as raised:
        parse_turn(json.dumps({"thought": thought, "final": "a.txt is empty"}), TOOLS)
    assert raised.value.problem == ECHOED_THOUGHT
    verdict = {"thought": thought, "final": {"verdict": "pass", "reason": "the tests pass"}}
    with pytest.raises(TurnParseError) as raised:
        parse_turn(json.dumps(verdict), VERIFIER, verifier=True)
    assert (raised.value.problem, '"verdict"' in raised.value.message) == (ECHOED_THOUGHT, True)


def test_what_is_wrong_with_the_calls_or_final_is_named_before_an_echoed_thought() -> None:
    unknown = '{"thought": "<why these calls>", "calls": [{"tool": "fly", "input": {}}]}'
    with pytest.raises(TurnParseError, match="tool 'fly' cannot be called here"):
        parse_turn(unknown, TOOLS)
    with pytest.raises(TurnParseError) as raised:
        parse_turn('{"thought": "<why you are done>", "final": "<what you did>"}', TOOLS)
    assert raised.value.problem == ECHOED_PLACEHOLDER


@pytest.mark.parametrize(
    "thought", ["", "Read <a.txt> first.", "<a.txt> then <b.txt>", "<" + "x" * 200 + ">"]
)
def test_a_thought_with_angle_brackets_in_its_own_words_parses(thought: str) -> None:
    turn = parse_turn(
        json.dumps({"thought": thought, "calls": [{"tool": "read", "input": {"path": "a"}}]}), TOOLS
    )
    assert turn.thought == thought and [call.tool for call in turn.calls] == ["read"]


def test_schema_refuses_what_the_spec_refuses() -> None:
    schema = turn_schema(PLANNER)
    good = '{"thought": "map first", "calls": [{"tool": "repo_map", "input": {}}]}'
    assert accepts(schema, good)
    assert not accepts(schema, " " + good)  # whitespace before the top-level value
    assert not accepts(schema, '{"thought": "x", "calls": [{"tool": "read", "input": {"path": "a"}}]}')
    assert not accepts(schema, '{"thought": "' + "x" * (bounds.THOUGHT_MAX_CHARS + 1) + '", "final": "done"}')
    assert not accepts(schema, '{"thought": "x", "final": "a", "calls": []}')
    verdict = turn_schema(VERIFIER, verifier=True)
    assert accepts(verdict, '{"thought": "ok", "final": {"verdict": "fail", "reason": "tests fail"}}')
    assert not accepts(verdict, '{"thought": "ok", "final": {"verdict": "maybe", "reason": "?"}}')
    assert not accepts(verdict, '{"thought": "ok", "final": "looks fine"}')


def test_each_call_carries_its_tools_input_schema() -> None:
    schema = turn_schema(TOOLS)
    branches = schema["oneOf"][0]["properties"]["calls"]["items"]["oneOf"]
    assert [b["properties"]["tool"]["const"] for b in branches] == [tool.name for tool in TOOLS]
    bash = next(b for b in branches if b["properties"]["tool"]["const"] == "bash")["properties"]["input"]
    assert bash["properties"]["timeout_secs"]["maximum"] == 600
    assert bash["properties"]["timeout_secs"]["default"] == 120


def _calls_turn(*calls: tuple[str, dict[str, object]]) -> str:
    turn = {"thought": "t", "calls": [{"tool": tool, "input": args} for tool, args in calls]}
    return json.dumps(turn, ensure_ascii=False)


def test_the_schema_bounds_the_calls_and_every_string_that_names_something() -> None:
    schema = turn_schema(TOOLS)
    eight = [("read", {"path": f"f{n}"}) for n in range(bounds.MAX_CALLS_PER_TURN)]
    assert accepts(schema, _calls_turn(*eight))
    assert not accepts(schema, _calls_turn(*eight, ("read", {"path": "one more"})))
    path, name = bounds.PATH_MAX_CHARS, bounds.NAME_MAX_CHARS
    # At the bound, in characters: even four-byte characters keep a path within PATH_MAX.
    assert accepts(schema, _calls_turn(("read", {"path": "𝄞" * path})))
    assert len(("𝄞" * path).encode()) == bounds.PATH_MAX_BYTES
    over_path, over_pattern = "p" * (path + 1), "g" * (bounds.PATTERN_MAX_CHARS + 1)
    bounded: list[tuple[str, dict[str, object], str]] = [
        ("read", {"path": over_path}, "path"),
        ("write", {"path": over_path, "content": ""}, "path"),
        ("edit", {"path": over_path, "old": "a", "new": "b"}, "path"),
        ("glob", {"pattern": over_pattern}, "pattern"),
        ("glob", {"pattern": "*", "path": over_path}, "path"),
        ("grep", {"pattern": over_pattern}, "pattern"),
        ("grep", {"pattern": "x", "path": over_path}, "path"),
        ("grep", {"pattern": "x", "glob": over_pattern}, "glob"),
        ("skill", {"name": "s" * (name + 1)}, "name"),
        ("agent", {"brief": "b", "check": "c", "definition": "d" * (name + 1)}, "definition"),
        ("agent", {"brief": "b", "check": "c", "member": "m" * (name + 1)}, "member"),
        ("context", {"op": "drop", "ids": ["i" * (name + 1)]}, "ids"),
        ("web_fetch", {"url": "u" * (bounds.URL_MAX_CHARS + 1)}, "url"),
    ]
    for tool, args, field in bounded:
        assert not accepts(schema, _calls_turn((tool, args))), (tool, field)
        value = args[field]
        at_the_bound = [value[0][:-1]] if isinstance(value, list) else str(value)[:-1]
        assert accepts(schema, _calls_turn((tool, {**args, field: at_the_bound}))), (tool, field)


def test_free_text_stays_unbounded_in_the_schema() -> None:
    schema = turn_schema(TOOLS)
    long = "x" * (bounds.PATH_MAX_CHARS * 3)
    for tool, args in [
        ("write", {"path": "a", "content": long}),
        ("edit", {"path": "a", "old": long, "new": long}),
        ("bash", {"command": long}),
        ("agent", {"brief": long, "check": long}),
        ("plan", {"op": "write", "text": long}),
    ]:
        assert accepts(schema, _calls_turn((tool, args))), tool
    assert accepts(schema, json.dumps({"thought": "t", "final": long}))


def test_without_the_constraint_a_long_name_still_parses_as_before() -> None:
    """The bounds are the constraint's: an unconstrained member's turn keeps the parse rules it
    had (the tool answers a path no file can have)."""
    turn = parse_turn(_calls_turn(("read", {"path": "p" * (bounds.PATH_MAX_CHARS + 1)})), TOOLS)
    assert len(turn.calls[0].input["path"]) == bounds.PATH_MAX_CHARS + 1


def test_parse_gives_ids_cuts_the_thought_and_drops_calls_over_eight() -> None:
    calls = [{"tool": "read", "input": {"path": f"f{i}.py"}} for i in range(11)]
    turn = parse_turn(json.dumps({"thought": "t" * 700, "calls": calls}), TOOLS, first_call_number=4)
    assert len(turn.thought) == bounds.THOUGHT_MAX_CHARS
    assert [call.id for call in turn.calls] == [f"c{n}" for n in range(4, 12)]
    assert turn.calls[0].input == {"path": "f0.py"}
    assert len(turn.notes) == 1 and turn.notes[0].startswith("3 calls after the first 8 were dropped")
    assert not turn.is_final


def test_parse_final_and_verdict() -> None:
    final = parse_turn('{"thought": "done", "final": "It builds."}', TOOLS)
    assert final.is_final and final.final == "It builds." and final.calls == ()
    verdict = parse_turn(
        '{"thought": "", "final": {"verdict": "fail", "reason": "no test"}}', VERIFIER, verifier=True
    )
    assert verdict.verdict is not None and not verdict.verdict.passed and verdict.verdict.reason == "no test"


def test_parse_is_lenient_about_surroundings_and_claude_names() -> None:
    text = (
        'Sure!\n```json\n{"thought": "look", "calls": [{"tool": "Read", "input": {"file_path": "/a.py"}},'
        ' {"tool": "Bash", "input": {"command": "ls", "timeout": 5000, "description": "list"}}]}\n```'
    )
    turn = parse_turn(text, TOOLS)
    assert [(c.tool, dict(c.input)) for c in turn.calls] == [
        ("read", {"path": "/a.py"}),
        ("bash", {"command": "ls", "timeout_secs": 5}),
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("I will read the file.", "no JSON object found"),
        ('{"thought": "x", "calls": [', "invalid JSON"),
        ('{"thought": "x"}', 'needs "calls" or "final"'),
        ('{"thought": "x", "calls": [], "final": "y"}', "either"),
        (
            '{"thought": "x", "calls": [{"tool": "read", "input": {"path": "a"}}]}',
            "tool 'read' cannot be called here",
        ),
        ('{"thought": "x", "calls": [{"tool": "agent", "input": {"brief": "b"}}]}', "'check' is required"),
        (
            '{"thought": "x", "calls": [{"tool": "plan", "input": {"op": "erase"}}]}',
            "must be one of read, write",
        ),
        ('{"thought": 3, "final": "y"}', '"thought" must be a string'),
    ],
)
def test_parse_errors_explain_themselves_to_the_model(text: str, problem: str) -> None:
    with pytest.raises(TurnParseError) as caught:
        parse_turn(text, PLANNER)
    assert problem in caught.value.message
    assert caught.value.message.startswith("Your answer was not a valid turn: ")
    assert '"calls"' in caught.value.message and '"final"' in caught.value.message


def test_a_verifier_without_a_verdict_is_told_the_shape() -> None:
    with pytest.raises(TurnParseError) as caught:
        parse_turn('{"thought": "x", "final": "looks good"}', VERIFIER, verifier=True)
    assert '"verdict"' in caught.value.message


def test_tool_descriptions_list_every_tool_and_its_fields() -> None:
    text = render_tool_descriptions()
    assert text.startswith("# Tools\n")
    for tool in TOOLS:
        assert re.search(rf"^- {tool.name}: ", text, re.MULTILINE)
    assert "timeout_secs (integer, optional, default 120, at most 600)" in text
    assert "repo_map" in text and "input: no input" in text


@pytest.mark.parametrize("final", ["...", "", "  ", "—", "…?!"])
def test_a_final_without_one_word_does_not_parse(final: str) -> None:
    """smollm2-135m ended a request ``done`` with the final "..."; such a turn is asked again."""
    with pytest.raises(TurnParseError) as raised:
        parse_turn(json.dumps({"thought": "done", "final": final}), TOOLS)
    assert raised.value.problem == EMPTY_FINAL


def test_a_short_final_with_a_word_parses() -> None:
    assert parse_turn(json.dumps({"thought": "done", "final": "42."}), TOOLS).final == "42."

"""Constraints: compiling each kind, refusing bad ones with llguidance's reason, and constrained
generations on the real model checked by independent validators."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from aerix.domain.tools import BASH, READ
from aerix.domain.turns import turn_schema
from caldrix.engine_seam import GenerationParams, GenerationResult, ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.errors import ConstraintInvalid
from caldrix.generation.constraints import compile_constraint
from caldrix.generation.decoding import run_generation
from caldrix.generation.templates import render_context
from tests.caldrix.sinks import CollectingSink
from tests.default_model import default_model_path

pytestmark = pytest.mark.model


MODEL = default_model_path()

#: Aerix's own turn schema ("The turn": a thought and either calls or a final) for an agent that
#: may call read and bash: every object closed with ``additionalProperties: false``, the calls a
#: oneOf over the tools, each with its real input schema, and aerix's llguidance options.
TURN_SCHEMA: dict[str, Any] = turn_schema([READ, BASH])


def _as_the_spec_writes_it(schema: object) -> object:
    """``schema`` without ``additionalProperties`` and without aerix's llguidance options: the
    turn object as the spec shows it, whose oneOf branches are not provably disjoint, so
    caldrix's own JSON defaults (``coerce_one_of``) have to carry it."""
    if isinstance(schema, list):
        return [_as_the_spec_writes_it(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    dropped = ("additionalProperties", "x-guidance")
    return {key: _as_the_spec_writes_it(value) for key, value in schema.items() if key not in dropped}


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    opened = open_llamacpp(MODEL, ServingFlags(threads=1, ctx=2048))
    yield opened
    opened.close()


def _generate(engine: LlamaCppEngine, request: str, params: GenerationParams) -> GenerationResult:
    prompt = render_context(engine, [{"id": "u", "role": "user", "text": request, "pinned": False}])
    sink = CollectingSink()
    result = run_generation(engine, prompt.prompt_tokens, params, sink)
    assert "".join(sink.pieces) == result.text
    return result


def test_json_output_is_valid_against_the_schema(engine: LlamaCppEngine) -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "age": {"type": "integer", "minimum": 0},
            "colours": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
        },
        "required": ["name", "age", "colours"],
        "additionalProperties": False,
    }
    params = GenerationParams(max_new_tokens=80, constraint={"json": schema})
    result = _generate(engine, "Describe a person as JSON.", params)
    assert result.finish == "stop"
    assert result.text == result.text.strip()  # no whitespace around the top-level value
    jsonschema.validate(json.loads(result.text), schema)


TURN_SYSTEM = (
    'Every reply is one JSON object. To use tools: {"thought": "why", "calls": [{"tool": "read", '
    '"input": {"path": "a.txt"}}]}. To answer: {"thought": "why", "final": "the answer"}. '
    "Tools: read (path), bash (command)."
)


@pytest.mark.parametrize(
    "schema", [_as_the_spec_writes_it(TURN_SCHEMA), TURN_SCHEMA], ids=["as-spec", "closed"]
)
@pytest.mark.parametrize("request_text", ["Read the file README.md.", "What is 2 + 2?"])
def test_the_spec_turn_schema_yields_a_valid_turn(
    engine: LlamaCppEngine, schema: dict[str, object], request_text: str
) -> None:
    segments = [
        {"id": "s", "role": "system", "text": TURN_SYSTEM, "pinned": True},
        {"id": "u", "role": "user", "text": request_text, "pinned": False},
    ]
    prompt = render_context(engine, segments).prompt_tokens
    params = GenerationParams(max_new_tokens=200, constraint={"json": schema})
    result = run_generation(engine, prompt, params, CollectingSink())
    assert result.finish == "stop", result.text
    turn = json.loads(result.text)
    jsonschema.validate(turn, schema)


def test_the_turn_schema_with_a_sampled_temperature_stays_valid(engine: LlamaCppEngine) -> None:
    schema = TURN_SCHEMA
    for seed in (1, 2):
        params = GenerationParams(max_new_tokens=200, constraint={"json": schema}, temperature=0.9, seed=seed)
        result = _generate(engine, "Run the tests with bash, then say what happened.", params)
        if result.finish == "stop":
            jsonschema.validate(json.loads(result.text), schema)
        else:  # cut by max_new_tokens before the JSON closed
            assert result.finish == "length" and result.text.startswith("{")


def test_one_of_output_is_exactly_one_option(engine: LlamaCppEngine) -> None:
    options = ["answer", "edit", "investigate", "plan"]
    params = GenerationParams(max_new_tokens=8, constraint={"one_of": options}, logprobs=4)
    result = _generate(engine, "Classify: fix the failing test in parser.py", params)
    assert result.text in options
    assert result.finish == "stop"
    first = result.logprobs[0] if result.logprobs else {}
    assert len(first["top"]) >= 2  # type: ignore[arg-type]  # the routing scores


def test_regex_output_matches_the_whole_pattern(engine: LlamaCppEngine) -> None:
    pattern = r"[A-Z][a-z]+ (is|are) [0-9]{1,3} years old\."
    params = GenerationParams(max_new_tokens=30, constraint={"regex": pattern})
    result = _generate(engine, "How old is your cat?", params)
    assert result.finish == "stop"
    assert re.fullmatch(pattern, result.text), result.text


def test_lark_output_follows_the_grammar(engine: LlamaCppEngine) -> None:
    grammar = (
        'start: "Colours: " colours "."\n'
        'colours: colour | colour ", " colour | colour ", " colour ", " colour\n'
        'colour: "red" | "green" | "blue"'
    )
    params = GenerationParams(max_new_tokens=30, constraint={"lark": grammar})
    result = _generate(engine, "Name some colours.", params)
    assert result.finish == "stop"
    assert result.text.startswith("Colours: ") and result.text.endswith(".")
    colours = result.text[len("Colours: ") : -1].split(", ")
    assert colours and set(colours) <= {"red", "green", "blue"}


def test_forced_tokens_count_as_output(engine: LlamaCppEngine) -> None:
    schema = {"type": "object", "properties": {"answer": {"const": "forty-two"}}, "required": ["answer"]}
    params = GenerationParams(max_new_tokens=30, constraint={"json": schema}, logprobs=2)
    result = _generate(engine, "What is the answer?", params)
    assert json.loads(result.text) == {"answer": "forty-two"}
    assert result.completion_tokens == len(result.output_token_ids) == len(result.logprobs or [])


@pytest.mark.parametrize(
    ("constraint", "reason"),
    [
        ({"json": {"type": "nope"}}, "nope"),
        ({"json": {"type": "object", "properties": {"a": {"$ref": "#/missing"}}}}, "missing"),
        ({"json": "not a schema"}, "must be a JSON schema"),
        ({"regex": "(unclosed"}, "unclosed group"),
        ({"lark": "start: undefined_rule"}, "undefined_rule"),
        ({"one_of": []}, "non-empty list"),
        ({"one_of": ["ok", 3]}, "non-empty list of strings"),
        ({"sql": "select"}, "exactly one key"),
        ({"json": {}, "regex": "a"}, "exactly one key"),
    ],
)
def test_invalid_constraints_are_refused_with_the_reason(
    engine: LlamaCppEngine, constraint: dict[str, object], reason: str
) -> None:
    with pytest.raises(ConstraintInvalid, match=re.escape(reason)) as info:
        compile_constraint(constraint, engine.lltokenizer())
    assert "\n" not in str(info.value)


def test_an_invalid_constraint_fails_before_any_row_is_computed(engine: LlamaCppEngine) -> None:
    engine.truncate(0)
    params = GenerationParams(max_new_tokens=5, constraint={"regex": "(("})
    with pytest.raises(ConstraintInvalid):
        _generate(engine, "hello", params)
    assert list(engine.live_tokens) == []


class EvaluationLog:
    """The real engine, with a note of how many tokens each ``evaluate`` call carried after
    the prompt was in (the decode phase)."""

    def __init__(self, engine: LlamaCppEngine, prompt_len: int) -> None:
        self._engine = engine
        self._prompt_len = prompt_len
        self.decode_calls: list[int] = []

    def evaluate(self, tokens: list[int]) -> None:
        if len(self._engine.live_tokens) >= self._prompt_len:
            self.decode_calls.append(len(tokens))
        self._engine.evaluate(tokens)

    def __getattr__(self, name: str) -> object:
        return getattr(self._engine, name)


def test_forced_tokens_are_evaluated_in_one_batch(engine: LlamaCppEngine) -> None:
    schema = {"type": "object", "properties": {"answer": {"const": "forty-two"}}, "required": ["answer"]}
    prompt = render_context(
        engine, [{"id": "u", "role": "user", "text": "What is the answer?", "pinned": False}]
    ).prompt_tokens
    logged = EvaluationLog(engine, len(prompt))
    params = GenerationParams(max_new_tokens=30, constraint={"json": schema})
    result = run_generation(logged, prompt, params, CollectingSink())  # type: ignore[arg-type]
    assert json.loads(result.text) == {"answer": "forty-two"}
    # The whole value is forced, so no token was sampled and evaluated on its own: the forced
    # runs went in batched calls (the last run is not evaluated at all, nothing follows it).
    assert logged.decode_calls and min(logged.decode_calls) > 1
    assert sum(logged.decode_calls) < result.completion_tokens

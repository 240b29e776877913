"""The scripted engine on the real model's vocabulary, through the shared generation loop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from caldrix.engine_seam import GenerationParams, ServingFlags
from caldrix.engines.loader import open_engine
from caldrix.engines.scripted import ScriptedEngine
from caldrix.errors import BadRequest
from caldrix.generation.decoding import run_generation
from caldrix.generation.templates import render_context
from caldrix.models.references import resolve_model
from tests.caldrix.sinks import DiscardingSink

SCHEMA = {
    "type": "object",
    "properties": {"thought": {"type": "string"}, "final": {"type": "string"}},
    "required": ["thought", "final"],
    "additionalProperties": False,
    "x-guidance": {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "},
}


@pytest.fixture(scope="module")
def model_path() -> Path:
    return resolve_model("smollm2-135m").path


def _engine(model_path: Path, folder: Path, script: object) -> ScriptedEngine:
    path = folder / "script.json"
    path.write_text(json.dumps(script))
    engine = open_engine(model_path, ServingFlags(engine="scripted", script=str(path), ctx=1024))
    assert isinstance(engine, ScriptedEngine)
    return engine


@pytest.fixture
def engine(model_path: Path, tmp_path: Path) -> Iterator[ScriptedEngine]:
    engine = _engine(
        model_path,
        tmp_path,
        [
            '{"thought": "t", "final": "exact"}',
            'Sure! {"thought": "x", "final": "y"} Hope that helps.',
            "plain words only",
            "free text, no constraint",
        ],
    )
    yield engine
    engine.close()


def _generate(engine: ScriptedEngine, prompt: str, constraint: dict[str, object] | None) -> str:
    tokens = render_context(engine, [{"role": "user", "text": prompt}]).prompt_tokens
    params = GenerationParams(max_new_tokens=80, constraint=constraint)
    return run_generation(engine, tokens, params, DiscardingSink()).text


def test_each_generation_takes_the_next_completion_and_the_constraint_wins(engine: ScriptedEngine) -> None:
    constraint: dict[str, object] = {"json": SCHEMA}
    assert _generate(engine, "one", constraint) == '{"thought": "t", "final": "exact"}'
    assert _generate(engine, "two", constraint) == '{"thought": "x", "final": "y"}'
    third = json.loads(_generate(engine, "three", constraint))
    assert third["thought"] == "plain words only"
    assert _generate(engine, "four", None) == "free text, no constraint"
    assert _generate(engine, "five", None) == ""  # the script ran out: EOS at once


def test_the_script_declares_the_constraints_the_member_claims(model_path: Path, tmp_path: Path) -> None:
    engine = _engine(model_path, tmp_path, {"completions": ["x"], "constraints": ["regex"]})
    try:
        assert engine.capabilities.constraints == ("regex",)
        assert engine.capabilities.snapshots is False
    finally:
        engine.close()


def test_a_missing_or_bad_script_is_one_line(model_path: Path, tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match=r"^--engine scripted needs --script FILE"):
        open_engine(model_path, ServingFlags(engine="scripted"))
    with pytest.raises(BadRequest, match=r"^no script file at "):
        open_engine(model_path, ServingFlags(engine="scripted", script=str(tmp_path / "none.json")))
    bad = tmp_path / "bad.json"
    bad.write_text('{"completions": [1, 2]}')
    with pytest.raises(BadRequest, match=r"must be a JSON list of strings"):
        open_engine(model_path, ServingFlags(engine="scripted", script=str(bad)))


def test_with_script_prefill_the_rows_are_the_models_and_the_prefix_store_resumes_them(
    model_path: Path, tmp_path: Path
) -> None:
    """``script_prefill`` computes every row with llama.cpp: the engine keeps snapshots, the
    prefix store restores a shared head for a second prompt, and the output is still the
    script's."""
    from caldrix.store.prefix_store import PrefixStore

    script = tmp_path / "script.json"
    script.write_text(json.dumps(['{"thought": "a", "final": "one"}', '{"thought": "b", "final": "two"}']))
    flags = ServingFlags(engine="scripted", script=str(script), script_prefill=True, ctx=1024)
    engine = open_engine(model_path, flags)
    try:
        assert isinstance(engine, ScriptedEngine)
        assert engine.capabilities.snapshots is True and engine.footprint_bytes
        store = PrefixStore(64 * 1024 * 1024, member="test")
        head = [{"role": "system", "text": "You are a careful agent. " * 40}]
        first = render_context(engine, [*head, {"role": "user", "text": "first"}]).prompt_tokens
        params = GenerationParams(max_new_tokens=40, constraint={"json": SCHEMA})
        done = store.generate(engine, first, params, DiscardingSink(), appended=True)
        assert (done.text, done.recomputed_from) == ('{"thought": "a", "final": "one"}', 0)
        engine.truncate(0)  # the live rows are gone: only the store holds the head now
        second = render_context(engine, [*head, {"role": "user", "text": "second"}]).prompt_tokens
        again = store.generate(engine, second, params, DiscardingSink(), appended=True)
        head_rows = len(render_context(engine, head).segment_tokens[0])
        assert again.text == '{"thought": "b", "final": "two"}'
        assert head_rows <= again.recomputed_from < len(second)
    finally:
        engine.close()


def test_a_completion_with_when_is_taken_by_the_prompt_that_holds_its_text(
    model_path: Path, tmp_path: Path
) -> None:
    engine = _engine(
        model_path,
        tmp_path,
        [
            {"text": "for the verifier", "when": "You are a verifier"},
            {"text": "for piece B", "when": "piece B"},
            "anyone's",
        ],
    )
    try:
        assert _generate(engine, "Do piece B now.", None) == "for piece B"
        assert _generate(engine, "Do piece A now.", None) == "anyone's"
        assert _generate(engine, "You are a verifier of piece A.", None) == "for the verifier"
        assert _generate(engine, "You are a verifier again.", None) == ""  # each is taken once
    finally:
        engine.close()
    bad = tmp_path / "bad.json"
    bad.write_text('[{"text": "no when"}]')
    with pytest.raises(BadRequest, match=r"must be a JSON list of strings"):
        open_engine(model_path, ServingFlags(engine="scripted", script=str(bad)))

"""The legacy GGML engine on a tiny gpt2 file written by the test helper, through the real
ctransformers library: loading and detection, tokens, rows, and the shared decoding loop
with every constraint kind."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from caldrix.engine_seam import ALL_CONSTRAINTS, Engine, GenerationParams, ServingFlags
from caldrix.engines.ctransformers import CtransformersEngine, open_ctransformers
from caldrix.errors import CaldrixError, ContextOverflow, InternalError, PrecheckFailed
from caldrix.generation.decoding import common_prefix_length, run_generation
from caldrix.generation.templates import CHATML_TEMPLATE, render_context
from tests.caldrix.ggml_writer import END_OF_TEXT, TinyGpt2, tiny_vocab, write_tiny_gpt2
from tests.caldrix.sinks import CollectingSink
from tests.default_model import default_model_path

#: ggml's old thread pool spins and sleeps: on a busy two-core machine one thread runs this
#: tiny model hundreds of times faster than two.
ONE_THREAD = 1
SMOLLM2 = default_model_path()


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gpt2(tmp_path_factory.mktemp("ggml") / "tiny-gpt2.bin")


@pytest.fixture(scope="module")
def engine(tiny_path: Path) -> Iterator[CtransformersEngine]:
    opened = open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD))
    yield opened
    opened.close()


def greedy(engine: CtransformersEngine, prompt: list[int], n: int) -> list[int]:
    """A plain greedy loop over the primitives, from an empty KV."""
    engine.truncate(0)
    engine.evaluate(prompt)
    out: list[int] = []
    for _ in range(n):
        token = int(np.argmax(engine.logits()))
        out.append(token)
        engine.evaluate([token])
    return out


# -- loading -------------------------------------------------------------------------------


def test_the_architecture_and_shape_come_from_the_file(engine: CtransformersEngine, tiny_path: Path) -> None:
    vocab = tiny_vocab()
    assert isinstance(engine, Engine)
    assert engine.model_type == "gpt2"
    assert engine.n_ctx == TinyGpt2().n_ctx
    assert engine.n_vocab == len(vocab)
    assert engine.eos_token_ids == (vocab.index(END_OF_TEXT),)
    assert engine.capabilities.snapshots is False
    assert engine.capabilities.constraints == ALL_CONSTRAINTS
    footprint = engine.footprint_bytes
    assert footprint is not None and footprint > tiny_path.stat().st_size


def test_a_smaller_ctx_flag_shrinks_the_window(tiny_path: Path) -> None:
    small = open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD, ctx=64, model_type="gpt2"))
    try:
        assert small.n_ctx == 64
        with pytest.raises(ContextOverflow):
            small.evaluate(small.tokenize("x" * 65))
    finally:
        small.close()


@pytest.mark.parametrize("model_type", ["gptj", "mpt", "gpt_neox", "replit"])
def test_a_model_type_that_does_not_fit_the_file_is_refused(tiny_path: Path, model_type: str) -> None:
    with pytest.raises(PrecheckFailed, match="--model-type"):
        open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD, model_type=model_type))


def test_model_types_are_read_the_way_ctransformers_reads_them(tiny_path: Path) -> None:
    spelled = open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD, model_type="GPT-2"))
    try:
        assert spelled.model_type == "gpt2"
    finally:
        spelled.close()
    with pytest.raises(PrecheckFailed, match="layout of a gpt_neox"):
        open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD, model_type="gpt-neox"))


def test_an_unknown_model_type_is_refused(tiny_path: Path) -> None:
    with pytest.raises(PrecheckFailed, match="unknown model type 'bert'"):
        open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD, model_type="bert"))


def test_files_that_are_not_legacy_ggml_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PrecheckFailed, match="GGUF"):
        open_ctransformers(SMOLLM2, ServingFlags(threads=ONE_THREAD))
    text = tmp_path / "notes.bin"
    text.write_bytes(b"hello, not a model")
    with pytest.raises(PrecheckFailed, match="not a legacy GGML"):
        open_ctransformers(text, ServingFlags(threads=ONE_THREAD))
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(write_tiny_gpt2(tmp_path / "whole.bin").read_bytes()[:5000])
    # ggml's loader would read tensors until the end and load it with weights missing.
    with pytest.raises(PrecheckFailed, match="file is incomplete"):
        open_ctransformers(truncated, ServingFlags(threads=ONE_THREAD, model_type="gpt2"))


# -- tokens and templates ------------------------------------------------------------------


def test_tokenize_parses_control_tokens_and_round_trips(engine: CtransformersEngine) -> None:
    text = 'the theme is <|endoftext|> then {"a": 1}'
    ids = engine.tokenize(text)
    assert ids.count(engine.eos_token_ids[0]) == 1
    assert engine.lltokenizer().decode_bytes(ids).decode() == text
    assert engine.lltokenizer().decode_str(ids) == text
    # merged tokens are used where the vocabulary has them
    assert len(ids) < len(text.encode())
    # no token can hold a NUL across ctransformers' C strings: it is left out
    assert engine.tokenize("a\0b") == engine.tokenize("ab")


def test_tokenize_is_thread_safe(engine: CtransformersEngine) -> None:
    texts = [f'line {i}: the {"é" * (i % 5)} {{"k": {i}}}' for i in range(64)]
    expected = [engine.tokenize(t) for t in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(engine.tokenize, texts)) == expected


def test_the_lltokenizer_spells_every_byte(engine: CtransformersEngine) -> None:
    lltok = engine.lltokenizer()
    assert lltok is engine.lltokenizer()  # built once
    assert lltok.vocab_size == engine.n_vocab
    assert lltok.eos_token == engine.eos_token_ids[0]
    assert lltok.is_special_token(engine.eos_token_ids[0])
    # Byte 0 reads back empty through ctransformers' C strings; 0xFF is llguidance's marker
    # for special tokens. Neither can occur in UTF-8 text, so constraints never need them.
    for byte in range(1, 255):
        assert lltok.decode_bytes([byte]) == bytes([byte])


def test_chatml_is_the_default_template_and_a_flag_chooses_another(tiny_path: Path) -> None:
    default = open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD))
    jinja = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    custom = open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD, chat_template=jinja))
    try:
        assert default.chat_template.source == CHATML_TEMPLATE
        assert default.chat_template.eos_token == END_OF_TEXT.decode()
        assert custom.chat_template.source == jinja
    finally:
        default.close()
        custom.close()
    with pytest.raises(CaldrixError, match="unknown chat template name"):
        open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD, chat_template="vicuna-ish"))


# -- rows -----------------------------------------------------------------------------------


def test_greedy_decoding_is_deterministic(engine: CtransformersEngine) -> None:
    prompt = engine.tokenize("Once upon a time")
    first = greedy(engine, prompt, 24)
    assert greedy(engine, prompt, 24) == first
    assert engine.live_tokens == tuple(prompt + first)


def test_resuming_from_live_rows_equals_a_cold_prefill(engine: CtransformersEngine) -> None:
    shared = engine.tokenize("The shared system prompt, then")
    first = engine.tokenize(" one request")
    second = engine.tokenize(" another request entirely")
    engine.truncate(0)
    engine.evaluate(shared + first)
    engine.truncate(len(shared))  # keep the live rows of the shared prefix
    assert engine.live_tokens == tuple(shared)
    engine.evaluate(second)
    resumed = engine.logits()
    engine.truncate(0)
    engine.evaluate(shared + second)
    cold = engine.logits()
    assert np.allclose(resumed, cold, atol=1e-4)
    assert int(np.argmax(resumed)) == int(np.argmax(cold))


#: How far batching may move a logit on this engine: float rounding, nothing like the ~0.5 of
#: llama.cpp's one-row path (docs/prefix-store.md).
ROUNDING_ONLY = 1e-4


def test_a_one_row_batch_computes_what_a_longer_one_does(engine: CtransformersEngine) -> None:
    # What capabilities.min_fill_rows == 1 declares: the prefix store may resume one row short
    # of the prompt, and keep rows the decode loop computed one at a time.
    assert engine.capabilities.min_fill_rows == 1
    prompt = chat_prompt(engine, "Tell me a story about the sea.")
    engine.truncate(0)
    engine.evaluate(prompt)
    whole = engine.logits()
    engine.truncate(len(prompt) - 1)
    engine.evaluate(prompt[-1:])
    assert np.array_equal(engine.logits(), whole)  # the last row alone, after the rest
    for size in (1, 2, 7):
        engine.truncate(0)
        for start in range(0, len(prompt), size):
            engine.evaluate(prompt[start : start + size])
        assert np.abs(engine.logits() - whole).max() < ROUNDING_ONLY, f"batches of {size}"


def test_logits_are_refused_once_the_rows_they_follow_are_gone(engine: CtransformersEngine) -> None:
    engine.truncate(0)
    engine.evaluate(engine.tokenize("abc"))
    assert engine.logits().shape == (engine.n_vocab,)
    engine.truncate(1)
    with pytest.raises(InternalError, match="no logits"):
        engine.logits()


def test_evaluating_past_the_window_is_refused(engine: CtransformersEngine) -> None:
    engine.truncate(0)
    with pytest.raises(ContextOverflow):
        engine.evaluate([65] * (engine.n_ctx + 1))
    assert engine.live_tokens == ()


def test_snapshots_are_not_offered(engine: CtransformersEngine) -> None:
    with pytest.raises(InternalError, match="no KV snapshots"):
        engine.save_rows()
    with pytest.raises(InternalError, match="no KV snapshots"):
        engine.load_rows(b"", [])


def test_a_closed_engine_refuses_work(tiny_path: Path) -> None:
    closing = open_ctransformers(tiny_path, ServingFlags(threads=ONE_THREAD))
    closing.close()
    closing.close()  # closing twice is harmless
    with pytest.raises(InternalError, match="closed"):
        closing.evaluate([65])


@pytest.mark.model
def test_it_runs_beside_llama_cpp_in_one_process(engine: CtransformersEngine) -> None:
    from caldrix.engines.llamacpp import open_llamacpp

    gguf = open_llamacpp(SMOLLM2, ServingFlags(ctx=256))
    try:
        prompt = gguf.tokenize("Hello there")
        gguf.evaluate(prompt)
        before = gguf.logits()
        tiny_prompt = engine.tokenize("Once upon a time")
        tiny_first = greedy(engine, tiny_prompt, 8)
        gguf.truncate(0)
        gguf.evaluate(prompt)
        assert np.allclose(gguf.logits(), before, atol=1e-4)
        assert greedy(engine, tiny_prompt, 8) == tiny_first
    finally:
        gguf.close()


# -- the shared generation loop -------------------------------------------------------------


JSON_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "count": {"type": "integer", "minimum": 0, "maximum": 99},
        "done": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["red", "blue"]}, "maxItems": 3},
    },
    "required": ["name", "count", "done", "tags"],
    "additionalProperties": False,
    # Compact output keeps every generation bounded: a random model never has to stop itself.
    "x-guidance": {"whitespace_flexible": False},
}
CHOICES = ["answer", "edit", "investigate", "plan"]
REGEX = r"[a-z]{2,6}-[0-9]{1,3}"
LARK = 'start: "move " DIR " " STEPS\nDIR: "north" | "south" | "east" | "west"\nSTEPS: /[1-9][0-9]?/'
#: The Lark grammar's language, written independently as a Python regex.
LARK_LANGUAGE = r"move (north|south|east|west) [1-9][0-9]?"


def check_json(text: str) -> None:
    jsonschema.validate(json.loads(text), JSON_SCHEMA)


CONSTRAINT_CASES: list[tuple[dict[str, object], Callable[[str], object]]] = [
    ({"json": JSON_SCHEMA}, check_json),
    ({"one_of": CHOICES}, lambda text: CHOICES.index(text)),
    ({"regex": REGEX}, lambda text: re.fullmatch(REGEX, text) or pytest.fail(f"{text!r} !~ {REGEX}")),
    (
        {"lark": LARK},
        lambda text: re.fullmatch(LARK_LANGUAGE, text) or pytest.fail(f"{text!r} not in language"),
    ),
]
#: Generous for every constraint above: each grammar ends within far fewer tokens.
MAX_NEW_TOKENS = 160


def chat_prompt(engine: CtransformersEngine, request: str) -> list[int]:
    segments = [
        {"id": "s1", "role": "system", "text": "You answer in the requested form."},
        {"id": "u1", "role": "user", "text": request},
    ]
    return render_context(engine, segments).prompt_tokens


@pytest.mark.parametrize(
    ("constraint", "check"), CONSTRAINT_CASES, ids=[next(iter(c[0])) for c in CONSTRAINT_CASES]
)
def test_every_constraint_kind_holds(
    engine: CtransformersEngine, constraint: dict[str, object], check: Callable[[str], object]
) -> None:
    for seed, temperature in [(None, 0.0), (7, 1.0), (8, 1.5)]:
        params = GenerationParams(MAX_NEW_TOKENS, constraint=constraint, temperature=temperature, seed=seed)
        sink = CollectingSink()
        result = run_generation(engine, chat_prompt(engine, "Reply."), params, sink)
        assert result.finish == "stop", result
        assert "".join(sink.pieces) == result.text
        check(result.text)


def test_generation_is_greedy_deterministic_and_resumes_from_live_rows(engine: CtransformersEngine) -> None:
    first_prompt = chat_prompt(engine, "Tell me a story about the sea.")
    second_prompt = chat_prompt(engine, "Tell me a story about the mountains.")
    params = GenerationParams(24)
    engine.truncate(0)
    cold = run_generation(engine, second_prompt, params, CollectingSink())
    assert cold.recomputed_from == 0
    run_generation(engine, first_prompt, params, CollectingSink())
    sink = CollectingSink()
    warm = run_generation(engine, second_prompt, params, sink)
    shared = common_prefix_length(first_prompt, second_prompt)
    assert shared > 0
    assert warm.recomputed_from == shared
    assert sink.progress_reports[0] == (warm.recomputed_from, len(second_prompt))
    assert warm.output_token_ids == cold.output_token_ids
    assert warm.text == cold.text

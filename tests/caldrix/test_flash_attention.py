"""Flash attention on the real model: faster prefills, and a resume still answers as a cold one.

llama.cpp's CPU flash attention computes other rows for batches under
``FLASH_ATTENTION_EXACT_ROWS``; a member with ``flash_attention`` keeps every batch, resumed
tail and kept answer at least that long. Each test compares log-probabilities, not only the
greedy tokens: a resume that computed a short tail differs there (by about half a logit) even
where the chosen tokens happen to agree. Until a fill after a resume has been timed, a resume
must keep more than seven eighths of its prompt (``ASSUMED_FILL_SLOWDOWN``): the prompts here
are long enough for that with a tail of ``FLASH_ATTENTION_EXACT_ROWS``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import pytest

from caldrix.engine_seam import GenerationParams, GenerationResult, ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.generation.decoding import common_prefix_length
from caldrix.generation.templates import render_context
from caldrix.limits import FLASH_ATTENTION_EXACT_ROWS
from caldrix.protocol import connect
from caldrix.store.prefix_store import PrefixStore
from tests.caldrix.pool_harness import (
    CLIENT_BOUNDS,
    DEFAULT_MODEL,
    EXIT_TIMEOUT_SECS,
    pool_command,
    start_pool,
)
from tests.caldrix.sinks import CollectingSink
from tests.default_model import default_model_path

pytestmark = pytest.mark.model

WITH_LOGPROBS = GenerationParams(max_new_tokens=12, logprobs=3)
BUDGET = 256 * 1024 * 1024

RULES = "\n".join(
    f"- Rule {i}: modules in package area {i} keep functions short, name things plainly, "
    f"and run `make check-{i}` before committing."
    for i in range(20)
)  # long enough that a resume's tail of FLASH_ATTENTION_EXACT_ROWS is under an eighth of it


def segment(sid: str, role: str, text: str) -> dict[str, object]:
    return {"id": sid, "role": role, "text": text, "pinned": False}


def asked(question: str) -> list[dict[str, object]]:
    return [segment("rules", "system", RULES), segment("u1", "user", question)]


class BatchLog:
    """The engine's batches, as it evaluates them."""

    def __init__(self, engine: LlamaCppEngine) -> None:
        self.sizes: list[int] = []
        self._evaluate = engine.evaluate

    def __call__(self, tokens: Sequence[int]) -> None:
        self.sizes.append(len(tokens))
        self._evaluate(tokens)


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    loaded = open_llamacpp(default_model_path(), ServingFlags(ctx=2048, threads=1, flash_attention=True))
    yield loaded
    loaded.close()


@pytest.fixture
def batches(engine: LlamaCppEngine, monkeypatch: pytest.MonkeyPatch) -> BatchLog:
    log = BatchLog(engine)
    monkeypatch.setattr(engine, "evaluate", log)
    return log


def prompt_of(engine: LlamaCppEngine, segments: Sequence[dict[str, object]]) -> list[int]:
    return render_context(engine, segments).prompt_tokens


def generate(store: PrefixStore, engine: LlamaCppEngine, prompt: Sequence[int]) -> GenerationResult:
    return store.generate(engine, prompt, WITH_LOGPROBS, CollectingSink(), appended=True)


def cold(engine: LlamaCppEngine, prompt: Sequence[int]) -> GenerationResult:
    engine.truncate(0)
    result = generate(PrefixStore(0), engine, prompt)
    assert result.recomputed_from == 0
    return result


def test_the_engine_declares_the_exact_batch_floor(engine: LlamaCppEngine) -> None:
    assert engine.capabilities.min_fill_rows == FLASH_ATTENTION_EXACT_ROWS
    plain = open_llamacpp(default_model_path(), ServingFlags(ctx=256, threads=1))
    try:
        assert plain.capabilities.min_fill_rows < FLASH_ATTENTION_EXACT_ROWS
    finally:
        plain.close()


def test_a_fork_after_a_short_answer_answers_as_a_cold_prefill(
    engine: LlamaCppEngine, batches: BatchLog
) -> None:
    store = PrefixStore(BUDGET)
    first = asked("Which rule mentions area 5?")
    engine.truncate(0)
    answer = generate(store, engine, prompt_of(engine, first))
    assert answer.completion_tokens < FLASH_ATTENTION_EXACT_ROWS  # too short to keep as a batch
    forked = [*first, segment("a1", "assistant", answer.text), segment("u2", "user", "And area 9?")]
    fork_prompt = prompt_of(engine, forked)
    engine.truncate(0)  # the rows come back from the snapshot, not the live rows
    batches.sizes.clear()
    resumed = generate(store, engine, fork_prompt)
    shared = common_prefix_length(prompt_of(engine, first), fork_prompt)
    assert 0 < resumed.recomputed_from <= len(fork_prompt) - FLASH_ATTENTION_EXACT_ROWS
    assert resumed.recomputed_from >= shared - FLASH_ATTENTION_EXACT_ROWS
    prefill = batches.sizes[: batches.sizes.index(1)] if 1 in batches.sizes else batches.sizes
    assert prefill and min(prefill) >= FLASH_ATTENTION_EXACT_ROWS
    fresh = cold(engine, fork_prompt)
    assert resumed.output_token_ids == fresh.output_token_ids
    assert resumed.logprobs == fresh.logprobs


def test_a_prompt_a_few_rows_past_a_snapshot_resumes_and_answers_as_a_cold_prefill(
    engine: LlamaCppEngine,
) -> None:
    store = PrefixStore(BUDGET)
    first = prompt_of(engine, asked("Explain rule 3."))
    second = prompt_of(engine, asked("Explain rule 3. Then rule 4."))
    assert len(second) - common_prefix_length(first, second) < FLASH_ATTENTION_EXACT_ROWS
    engine.truncate(0)
    store.generate(engine, first, WITH_LOGPROBS, CollectingSink(), appended=False)
    engine.truncate(0)
    resumed = generate(store, engine, second)
    assert resumed.recomputed_from == len(second) - FLASH_ATTENTION_EXACT_ROWS
    fresh = cold(engine, second)
    assert resumed.output_token_ids == fresh.output_token_ids
    assert resumed.logprobs == fresh.logprobs


def test_every_prefill_batch_holds_the_exact_rows(engine: LlamaCppEngine, batches: BatchLog) -> None:
    prompt = prompt_of(engine, asked("Summarize every rule in one line each."))
    assert len(prompt) > 3 * FLASH_ATTENTION_EXACT_ROWS
    cold(engine, prompt)
    prefill = batches.sizes[: batches.sizes.index(1)]
    assert sum(prefill) == len(prompt)
    assert min(prefill) >= FLASH_ATTENTION_EXACT_ROWS


@pytest.mark.e2e
def test_the_pool_serves_flash_attention_and_says_so(tmp_path: Path) -> None:
    pool = start_pool(
        tmp_path,
        "--load",
        DEFAULT_MODEL,
        "--ctx",
        "512",
        "--threads",
        "1",
        "--flash-attention",
        "--idle-timeout",
        "0",
    )
    try:
        status = subprocess.run(
            pool_command("status", "--socket", str(pool.socket_path)),
            capture_output=True,
            text=True,
            timeout=EXIT_TIMEOUT_SECS,
        )
        assert "main: ready, smollm2-135m, n_ctx 512" in status.stdout
        assert ", cpu, 1 thread, flash attention, queue 0" in status.stdout  # --threads 1 kept

        async def scenario() -> tuple[bool | None, bool | None, list[dict[str, object]]]:
            async with await connect(pool.socket_path, bounds=CLIENT_BOUNDS) as client:
                plain = await client.member_load("plain", DEFAULT_MODEL, {"ctx": 256})
                flash = await client.member_load(
                    "flash", DEFAULT_MODEL, {"ctx": 256, "flash_attention": True}
                )
                listed = (await client.member_list()).model_dump()["members"]
                return plain.member.flash_attention, flash.member.flash_attention, listed

        plain, flash, listed = anyio.run(scenario)
        assert (plain, flash) == (None, True)
        sent = {member["name"]: member for member in listed}
        assert "flash_attention" not in sent["plain"] and sent["flash"]["flash_attention"] is True
        assert sent["main"]["flash_attention"] is True
    finally:
        pool.stop()

"""The shared generation loop, on the real model: determinism, resume, stop strings, logprobs,
progress, cancellation and UTF-8 streaming."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import cast

import pytest

from caldrix.engine_seam import Engine, GenerationCancelled, GenerationParams, GenerationResult, ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.errors import BadRequest, ContextOverflow
from caldrix.generation import decoding
from caldrix.generation._text_stream import TextStream
from caldrix.generation.decoding import (
    FIRST_PREFILL_BATCH,
    MIN_PREFILL_BATCH,
    PREFILL_BATCH_TARGET_S,
    LiveRowsPolicy,
    batch_end,
    next_prefill_batch,
    run_generation,
)
from caldrix.generation.templates import render_context
from tests.default_model import default_model_path

pytestmark = pytest.mark.model


MODEL = default_model_path()
BATCH = 128


class Sink:
    """Records everything; cancels once ``cancel_after_tokens`` tokens were seen, or once a
    progress frame said ``cancel_after_rows`` rows were computed and ``cancelled`` had been asked
    ``checks_before_cancel`` more times (the engine asks while it computes a batch)."""

    def __init__(
        self,
        cancel_after_tokens: int | None = None,
        cancel_after_rows: int | None = None,
        checks_before_cancel: int = 0,
    ) -> None:
        self.pieces: list[str] = []
        self.progress_frames: list[tuple[int, int]] = []
        self.events: list[str] = []
        self._cancel_tokens = cancel_after_tokens
        self._cancel_rows = cancel_after_rows
        self._checks_left = checks_before_cancel

    def progress(self, done: int, total: int) -> None:
        self.progress_frames.append((done, total))
        self.events.append("progress")

    def token(self, text: str) -> None:
        self.pieces.append(text)
        self.events.append("token")

    def cancelled(self) -> bool:
        if self._cancel_tokens is not None and len(self.pieces) >= self._cancel_tokens:
            return True
        if self._cancel_rows is None or not any(
            done >= self._cancel_rows for done, _ in self.progress_frames
        ):
            return False
        self._checks_left -= 1
        return self._checks_left < 0


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    opened = open_llamacpp(MODEL, ServingFlags(threads=1, ctx=4096, batch=BATCH))
    yield opened
    opened.close()


def _prompt(engine: LlamaCppEngine, *texts: str) -> list[int]:
    segments = [{"id": f"s{i}", "role": "user", "text": t, "pinned": False} for i, t in enumerate(texts)]
    return render_context(engine, segments).prompt_tokens


def _run(
    engine: LlamaCppEngine, prompt: list[int], params: GenerationParams, sink: Sink | None = None
) -> GenerationResult:
    sink = sink or Sink()
    result = run_generation(engine, prompt, params, sink)
    assert "".join(sink.pieces) == result.text
    return result


def test_greedy_is_deterministic_and_counts_what_it_did(engine: LlamaCppEngine) -> None:
    prompt = _prompt(engine, "Name three colours.")
    params = GenerationParams(max_new_tokens=24)
    engine.truncate(0)
    first = _run(engine, prompt, params)
    engine.truncate(0)
    second = _run(engine, prompt, params)
    assert first.text == second.text and first.output_token_ids == second.output_token_ids
    assert first.prompt_tokens == len(prompt)
    assert first.completion_tokens == len(first.output_token_ids) <= 24
    assert first.recomputed_from == 0
    assert first.finish in ("stop", "length")
    assert first.prefill_ms > 0 and first.decode_ms > 0


def test_resuming_from_live_rows_gives_the_cold_output(engine: LlamaCppEngine) -> None:
    params = GenerationParams(max_new_tokens=20)
    base = _prompt(engine, "Tell me about rivers.")
    longer = _prompt(engine, "Tell me about rivers.", "Now tell me about mountains, briefly.")
    engine.truncate(0)
    _run(engine, base, params)  # leaves the base prompt's rows live
    warm = _run(engine, longer, params)
    shared = len(_prompt(engine, "Tell me about rivers.")) - 4  # minus the generation prompt
    assert warm.recomputed_from >= shared
    engine.truncate(0)
    cold = _run(engine, longer, params)
    assert cold.recomputed_from == 0
    assert warm.text == cold.text
    again = _run(engine, longer, params)  # the same prompt: only the engine's minimum fill is recomputed
    assert again.recomputed_from == len(longer) - engine.capabilities.min_fill_rows
    assert again.text == cold.text


def test_live_rows_policy_always_leaves_the_minimum_fill_to_evaluate(engine: LlamaCppEngine) -> None:
    prompt = _prompt(engine, "Hi")
    engine.truncate(0)
    engine.evaluate(prompt)
    fill = engine.capabilities.min_fill_rows
    assert fill >= 2  # llama.cpp's one-row batch computes different logits
    assert LiveRowsPolicy().prepare(engine, prompt) == len(prompt) - fill
    assert list(engine.live_tokens) == prompt[:-fill]


def test_stop_strings_end_the_output_and_are_not_included(engine: LlamaCppEngine) -> None:
    prompt = _prompt(engine, "Count from one to ten.")
    free = _run(engine, prompt, GenerationParams(max_new_tokens=30))
    middle = len(free.text) // 2
    stop = free.text[middle : middle + 3]  # something the model is known to write
    sink = Sink()
    params = GenerationParams(max_new_tokens=30, stop=["never written 🙂", stop])
    stopped = _run(engine, prompt, params, sink)
    assert stopped.finish == "stop" and stopped.stop_string == stop
    assert stopped.text == free.text[: free.text.index(stop)]
    assert stop not in "".join(sink.pieces)
    assert free.stop_string is None


def test_max_new_tokens_finishes_with_length(engine: LlamaCppEngine) -> None:
    result = _run(
        engine, _prompt(engine, "Write a long story about a dragon."), GenerationParams(max_new_tokens=5)
    )
    assert result.finish == "length"
    assert result.completion_tokens == 5


def test_logprobs_have_the_protocol_shape(engine: LlamaCppEngine) -> None:
    result = _run(engine, _prompt(engine, "Say hello."), GenerationParams(max_new_tokens=6, logprobs=3))
    assert result.logprobs is not None and len(result.logprobs) == result.completion_tokens
    for entry in result.logprobs:
        assert set(entry) == {"token", "logprob", "top"}
        assert isinstance(entry["token"], str)
        assert type(entry["logprob"]) is float and entry["logprob"] <= 0.0
        top = entry["top"]
        assert isinstance(top, list) and 1 <= len(top) <= 3
        scores = [alt["logprob"] for alt in top]
        assert all(type(s) is float for s in scores) and scores == sorted(scores, reverse=True)
        assert top[0]["logprob"] == entry["logprob"]  # greedy picks the most likely
    json.dumps(result.logprobs)  # plain Python values travel as they are
    assert _run(engine, _prompt(engine, "Say hello."), GenerationParams(max_new_tokens=2)).logprobs is None


def test_an_answer_ended_by_end_of_turn_has_one_logprob_per_completion_token(engine: LlamaCppEngine) -> None:
    result = _run(engine, _prompt(engine, "Say hello."), GenerationParams(max_new_tokens=80, logprobs=2))
    assert result.finish == "stop" and result.logprobs is not None
    assert len(result.logprobs) == result.completion_tokens == len(result.output_token_ids)
    assert "".join(str(entry["token"]) for entry in result.logprobs) == result.text


def test_sampling_is_reproducible_with_a_seed(engine: LlamaCppEngine) -> None:
    prompt = _prompt(engine, "Invent a name for a cat.")
    params = GenerationParams(max_new_tokens=12, temperature=1.0, seed=7)
    assert _run(engine, prompt, params).text == _run(engine, prompt, params).text


def test_a_long_prefill_reports_progress_before_the_first_token(engine: LlamaCppEngine) -> None:
    text = " ".join(f"Item {i} is a plain sentence about nothing in particular." for i in range(120))
    prompt = _prompt(engine, text + " Summarise.")
    assert 1300 <= len(prompt) <= 2000
    engine.truncate(0)
    sink = Sink()
    result = _run(engine, prompt, GenerationParams(max_new_tokens=3), sink)
    before_first_token = sink.events[: sink.events.index("token")] if "token" in sink.events else sink.events
    assert len(before_first_token) >= len(prompt) // BATCH
    dones = [done for done, _ in sink.progress_frames]
    assert dones == sorted(dones) and dones[0] == 0 and dones[-1] == len(prompt)
    assert all(total == len(prompt) for _, total in sink.progress_frames)
    assert result.recomputed_from == 0
    # The first batch is small, because the rate is not known yet; no batch is over --batch.
    # (A figure repeated while a batch ran is no step.)
    steps = [after - before for before, after in itertools.pairwise(dones) if after != before]
    assert steps[0] <= FIRST_PREFILL_BATCH
    assert all(0 < step <= BATCH for step in steps)


def test_prefill_batches_are_sized_from_the_measured_rate() -> None:
    # 64 rows in 4 s is 16 rows/s: the batch holds what takes PREFILL_BATCH_TARGET_S.
    assert next_prefill_batch(64, 4.0, most=256) == int(16 * PREFILL_BATCH_TARGET_S)
    # A whole batch that took over a second stays whole: progress frames do not shorten it.
    assert next_prefill_batch(256, 1.5, most=256) == 256
    # A fast machine gets the engine's whole batch, never more.
    assert next_prefill_batch(32, 0.01, most=256) == 256
    # A very slow one still evaluates a few rows per call, unless the engine's batch is smaller.
    assert next_prefill_batch(16, 10.0, most=256) == MIN_PREFILL_BATCH
    assert next_prefill_batch(4, 10.0, most=8) == 8


def test_cancelling_during_prefill_stops_before_the_next_batch(engine: LlamaCppEngine) -> None:
    text = " ".join(f"Line {i} of a long and dull document." for i in range(100))
    prompt = _prompt(engine, text)
    engine.truncate(0)
    sink = Sink(cancel_after_rows=FIRST_PREFILL_BATCH)
    with pytest.raises(GenerationCancelled) as info:
        run_generation(engine, prompt, GenerationParams(max_new_tokens=50), sink)
    assert sink.pieces == []
    assert len(engine.live_tokens) == FIRST_PREFILL_BATCH  # one batch computed, then it stopped
    assert info.value.partial.completion_tokens == 0
    assert list(engine.live_tokens) == prompt[:FIRST_PREFILL_BATCH]  # the rows stay valid for a resume


def test_cancelling_while_a_batch_computes_stops_it_and_keeps_none_of_its_rows(
    engine: LlamaCppEngine,
) -> None:
    text = " ".join(f"Line {i} of a long and dull document." for i in range(100))
    prompt = _prompt(engine, text)
    assert len(prompt) > FIRST_PREFILL_BATCH + 2 * BATCH
    engine.truncate(0)
    # The check before the second batch says go on; llama.cpp's next checks, inside it, say stop.
    sink = Sink(cancel_after_rows=FIRST_PREFILL_BATCH, checks_before_cancel=3)
    with pytest.raises(GenerationCancelled):
        run_generation(engine, prompt, GenerationParams(max_new_tokens=8), sink)
    assert list(engine.live_tokens) == prompt[:FIRST_PREFILL_BATCH]  # not the stopped batch's rows
    assert sink.progress_frames[-1][0] == FIRST_PREFILL_BATCH
    # What is left is consistent: resuming from it answers as a cold prefill does.
    resumed = _run(engine, prompt, GenerationParams(max_new_tokens=8, logprobs=2))
    assert resumed.recomputed_from == FIRST_PREFILL_BATCH
    engine.truncate(0)
    assert _run(engine, prompt, GenerationParams(max_new_tokens=8, logprobs=2)).logprobs == resumed.logprobs


class _Delegating:
    """The module's engine, with ``evaluate`` replaced by the test."""

    def __init__(self, engine: LlamaCppEngine) -> None:
        self._engine = engine
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._engine, name)

    def evaluate(self, tokens: Sequence[int]) -> None:
        self.batches.append(len(tokens))
        self._engine.evaluate(tokens)


class _NoAbort(_Delegating):
    """The module's engine without ``abort_when``: a cancel is seen only between batches."""

    def __getattr__(self, name: str) -> object:
        if name == "abort_when":
            raise AttributeError(name)
        return super().__getattr__(name)


def test_progress_keeps_coming_while_one_batch_runs(engine: LlamaCppEngine) -> None:
    repeated = threading.Event()

    class WatchingSink(Sink):
        def progress(self, done: int, total: int) -> None:
            if self.progress_frames and self.progress_frames[-1][0] == done:
                repeated.set()
            super().progress(done, total)

    class WaitingEngine(_Delegating):
        def evaluate(self, tokens: Sequence[int]) -> None:
            # The first batch lasts until the heartbeat has sent its figure again.
            if len(self.batches) == 0:
                assert repeated.wait(timeout=60), "no progress frame while a batch ran"
            super().evaluate(tokens)

    prompt = _prompt(engine, "Tell me about the sea.")
    engine.truncate(0)
    sink = WatchingSink()
    run_generation(cast(Engine, WaitingEngine(engine)), prompt, GenerationParams(max_new_tokens=1), sink)
    dones = [done for done, _ in sink.progress_frames]
    assert dones[:2] == [0, 0]  # the figure repeated: only rows really computed are reported
    assert dones == sorted(dones) and dones[-1] == len(prompt)


def test_prefill_batches_stay_whole_when_they_take_over_a_progress_interval(
    engine: LlamaCppEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine where a whole batch takes 1.5 s (by a clock the engine moves): over the
    # progress interval, under PREFILL_BATCH_TARGET_S, so every batch after the first is whole.
    clock = [0.0]
    monkeypatch.setattr(
        decoding, "time", SimpleNamespace(perf_counter=lambda: clock[0], monotonic=time.monotonic)
    )
    seconds_per_row = 1.5 / BATCH

    class TimedEngine(_Delegating):
        def evaluate(self, tokens: Sequence[int]) -> None:
            clock[0] += len(tokens) * seconds_per_row
            super().evaluate(tokens)

    text = " ".join(f"Line {i} of a long and dull document." for i in range(60))
    prompt = _prompt(engine, text)
    engine.truncate(0)
    timed = TimedEngine(engine)
    run_generation(cast(Engine, timed), prompt, GenerationParams(max_new_tokens=1), Sink())
    assert timed.batches[0] == FIRST_PREFILL_BATCH
    assert len(timed.batches) > 4 and all(rows == BATCH for rows in timed.batches[1:-2])
    assert sum(timed.batches) == len(prompt)


@pytest.mark.parametrize("aborts", [True, False])
def test_batches_shorten_for_a_cancel_only_where_the_engine_cannot_stop_inside_one(
    engine: LlamaCppEngine, monkeypatch: pytest.MonkeyPatch, aborts: bool
) -> None:
    # A machine where a whole batch takes 8 s, four times PREFILL_BATCH_TARGET_S.
    clock = [0.0]
    monkeypatch.setattr(
        decoding, "time", SimpleNamespace(perf_counter=lambda: clock[0], monotonic=time.monotonic)
    )
    seconds_per_row = 8.0 / BATCH
    base = _Delegating if aborts else _NoAbort

    class TimedEngine(base):  # type: ignore[valid-type, misc]
        def evaluate(self, tokens: Sequence[int]) -> None:
            clock[0] += len(tokens) * seconds_per_row
            super().evaluate(tokens)

    prompt = _prompt(engine, " ".join(f"Line {i} of a long and dull document." for i in range(60)))
    engine.truncate(0)
    timed = TimedEngine(engine)
    run_generation(cast(Engine, timed), prompt, GenerationParams(max_new_tokens=1), Sink())
    assert timed.batches[0] == FIRST_PREFILL_BATCH
    if aborts:
        assert all(rows == BATCH for rows in timed.batches[1:-2])
    else:
        assert all(rows == int(BATCH / 8.0 * PREFILL_BATCH_TARGET_S) for rows in timed.batches[1:-2])
    assert sum(timed.batches) == len(prompt)


def test_cancelling_during_decode_stops_at_the_next_token(engine: LlamaCppEngine) -> None:
    sink = Sink(cancel_after_tokens=3)
    with pytest.raises(GenerationCancelled) as info:
        run_generation(
            engine, _prompt(engine, "Write a poem about rain."), GenerationParams(max_new_tokens=60), sink
        )
    assert 3 <= info.value.partial.completion_tokens <= 5
    assert info.value.partial.text.startswith("".join(sink.pieces))


def test_multibyte_output_streams_whole_characters(engine: LlamaCppEngine) -> None:
    options = ["日本語です", "café crème", "🙂🙃"]
    sink = Sink()
    params = GenerationParams(max_new_tokens=12, constraint={"one_of": options})
    result = _run(engine, _prompt(engine, "Say something in Japanese."), params, sink)
    assert result.text in options
    assert all("\ufffd" not in piece for piece in sink.pieces)
    # The same holds token by token for text whose tokens split characters.
    text = "日本語 and 🙂 and é"
    tokens = engine.tokenize(text)
    stream = TextStream([])
    pieces = [stream.feed(engine.lltokenizer().decode_bytes([t])) for t in tokens] + [stream.finish()]
    assert "".join(pieces) == text and all("\ufffd" not in p for p in pieces)
    assert len(tokens) > len([p for p in pieces if p])  # some tokens did end mid-character


def test_text_that_may_start_a_stop_string_is_held_back() -> None:
    stream = TextStream(["</answer>"])
    assert stream.feed(b"Paris </") == "Paris "
    assert stream.feed(b"ans") == ""
    assert stream.feed(b"wer> trailing") == ""
    assert stream.stopped and stream.text == "Paris " and stream.stopped_by == "</answer>"
    other = TextStream(["</answer>"])
    assert other.feed(b"a </") == "a "
    assert other.feed(b"b>") == "</b>"  # not a stop string after all
    assert other.feed(b" </an") == " "
    assert other.finish() == "</an"  # the end came first: what was held is flushed
    assert other.stopped_by is None


def test_bad_requests_fail_before_any_work(engine: LlamaCppEngine) -> None:
    with pytest.raises(BadRequest, match="prompt is empty"):
        run_generation(engine, [], GenerationParams(max_new_tokens=1), Sink())
    with pytest.raises(ContextOverflow, match="exceeds the window of 4096"):
        run_generation(engine, [1] * 4000, GenerationParams(max_new_tokens=200), Sink())


@pytest.mark.parametrize(
    ("done", "batch", "total", "end"),
    [
        (0, 256, 257, 255),  # 256 would leave one row: stop at 255 and leave two
        (0, 256, 258, 256),
        (0, 256, 256, 256),
        (255, 256, 257, 257),
        (0, 1, 2, 2),  # too short to split without a one-row batch: take both
        (0, 64, 10, 10),
    ],
)
def test_a_prefill_never_ends_on_a_one_row_batch(done: int, batch: int, total: int, end: int) -> None:
    assert batch_end(done, batch, total, min_rows=2) == end


@pytest.mark.parametrize("batch", [64, 100, 128, 256])
@pytest.mark.parametrize("total", [1, 63, 64, 65, 127, 128, 129, 200, 320, 321, 700])
def test_no_batch_is_shorter_than_the_engine_computes_exactly(batch: int, total: int) -> None:
    # With flash attention every batch needs 64 rows (FLASH_ATTENTION_EXACT_ROWS); the engine's
    # batch is at least twice that (ServingFlags), and a batch may grow past ``batch`` only to
    # take a short rest along.
    sizes, done = [], 0
    while done < total:
        end = batch_end(done, batch, total, min_rows=64)
        sizes.append(end - done)
        done = end
    assert sum(sizes) == total
    assert min(sizes) >= min(64, total)
    assert max(sizes) < max(batch, 64) + 64

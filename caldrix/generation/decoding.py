"""The one generation loop, shared by every engine.

:func:`run_generation` takes a prompt (token ids), resumes from rows already in the engine
where it can, prefills the rest in batches while reporting progress, then decodes token by
token: constraint masks from llguidance, greedy or seeded temperature sampling, stop strings,
end-of-turn tokens, ``max_new_tokens``, the degeneration guard when asked for
(:mod:`caldrix.generation.degeneration`), optional log-probabilities, and text streamed to the
sink only once it is complete UTF-8 and cannot be the start of a stop string.

Tokens the constraint forces (llguidance's fast-forward tokens) are evaluated together in one
batch: a batched evaluation costs a fraction of one decode step per token.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from caldrix.engine_seam import (
    AbortsInBatch,
    Engine,
    EvaluationAborted,
    Finish,
    GenerationCancelled,
    GenerationParams,
    GenerationResult,
    GenerationSink,
    ResumePolicy,
)
from caldrix.errors import BadRequest, ContextOverflow
from caldrix.generation._sampling import Sampler, TokenMask, apply_mask, log_softmax, top_logprobs
from caldrix.generation._text_stream import TextStream
from caldrix.generation.constraints import compile_constraint
from caldrix.generation.degeneration import DegenerationGuard

if TYPE_CHECKING:
    from llguidance import LLMatcher, LLTokenizer

#: Progress frames are due at least this often while a prefill lasts (protocol: once a second).
PROGRESS_INTERVAL_S = 1.0
#: While a batch runs, the last progress figure is sent again once this long has passed since
#: the last frame: half of :data:`PROGRESS_INTERVAL_S`, leaving the other half for a busy
#: machine to schedule the heartbeat's thread. Only rows really computed are ever reported.
PROGRESS_HEARTBEAT_S = PROGRESS_INTERVAL_S / 2
#: Smallest prefill batch when batches are shortened on a slow machine (``PREFILL_BATCH_TARGET_S``).
MIN_PREFILL_BATCH = 16
#: Rows of a prefill's first batch, evaluated before the machine's rate is known: small enough
#: to take well under :data:`PREFILL_BATCH_TARGET_S` on a slow, busy CPU (a full 256-row batch
#: took 2.7 s here).
FIRST_PREFILL_BATCH = 32
#: On an engine that cannot stop inside a batch (one that is not ``AbortsInBatch``), each later
#: batch is sized to take at most about this long at the rate measured so far, and is otherwise
#: the engine's whole batch: a cancel is seen between its batches, so this bounds how long a
#: cancelled prefill goes on. Progress does not depend on it (the heartbeat repeats the last
#: figure while a batch runs). llama.cpp stops inside a batch, so its batches are always whole:
#: with flash attention, short ones late in a long prompt cost more a row (docs/benchmarks.md).
PREFILL_BATCH_TARGET_S = 2.0


class LiveRowsPolicy:
    """The default resume policy: keep the longest common prefix of the live rows and the
    prompt, but always recompute the engine's ``min_fill_rows`` last prompt rows (at least the
    last token, whose logits are needed)."""

    def prepare(self, engine: Engine, prompt_tokens: Sequence[int]) -> int:
        # Leave the engine's minimum fill: on llama.cpp a one-row batch takes another matmul
        # path whose logits differ slightly from a prefill's, which could change a greedy answer.
        fill = min(engine.capabilities.min_fill_rows, len(prompt_tokens))
        keep = min(common_prefix_length(engine.live_tokens, prompt_tokens), len(prompt_tokens) - fill)
        engine.truncate(keep)
        return keep

    def remember(self, engine: Engine, prompt_len: int, *, prefill_ms: float | None = None) -> None:
        """Nothing to do: the rows simply stay live."""


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@dataclass
class _Run:
    """The state of one generation while it runs."""

    engine: Engine
    params: GenerationParams
    sink: GenerationSink
    tokenizer: LLTokenizer
    stream: TextStream
    matcher: LLMatcher | None = None
    mask: TokenMask | None = None
    output: list[int] = field(default_factory=list)
    logprobs: list[dict[str, object]] | None = None
    token_text: dict[int, str] = field(default_factory=dict)
    guard: DegenerationGuard | None = None
    degenerate: str | None = None
    """Why the guard stopped the generation, once it has."""

    def emit(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.output.append(token)
            piece = self.stream.feed(self.tokenizer.decode_bytes([token]))
            if piece:
                self.sink.token(piece)
            if self.stream.stopped:
                return
            if self.guard is not None:
                self.degenerate = self.guard.feed(token, piece)
                if self.degenerate is not None:
                    return

    def text_of(self, token: int) -> str:
        text = self.token_text.get(token)
        if text is None:
            text = self.tokenizer.decode_bytes([token]).decode("utf-8", "replace")
            self.token_text[token] = text
        return text


def run_generation(
    engine: Engine,
    prompt_tokens: Sequence[int],
    params: GenerationParams,
    sink: GenerationSink,
    resume: ResumePolicy | None = None,
) -> GenerationResult:
    """Generate after ``prompt_tokens`` on ``engine``; see the module docstring.

    Raises :class:`ContextOverflow` when the prompt plus ``max_new_tokens`` exceeds the window,
    :class:`caldrix.errors.ConstraintInvalid` for a constraint that does not compile (before
    any row is computed), and :class:`GenerationCancelled` when the sink cancels."""
    prompt = [int(t) for t in prompt_tokens]
    _check_request(engine, prompt, params)
    run = _start_run(engine, params, sink)
    policy = resume or LiveRowsPolicy()
    started = time.perf_counter()
    recomputed_from = policy.prepare(engine, prompt)
    fill_started = time.perf_counter()
    _prefill(engine, prompt, recomputed_from, run, started)
    prefilled = time.perf_counter()
    finish = _decode(run)
    tail = run.stream.finish()
    if tail:
        sink.token(tail)
    result = GenerationResult(
        text=run.stream.text,
        finish=finish,
        prompt_tokens=len(prompt),
        completion_tokens=len(run.output),
        recomputed_from=recomputed_from,
        output_token_ids=list(run.output),
        prefill_ms=(prefilled - started) * 1000.0,
        decode_ms=(time.perf_counter() - prefilled) * 1000.0,
        logprobs=run.logprobs,
        stop_string=run.stream.stopped_by,
        reason=run.degenerate,
    )
    policy.remember(engine, len(prompt), prefill_ms=(prefilled - fill_started) * 1000.0)
    return result


def _check_request(engine: Engine, prompt: list[int], params: GenerationParams) -> None:
    if not prompt:
        raise BadRequest("the prompt is empty: a generation needs at least one token to follow")
    if params.max_new_tokens < 0:
        raise BadRequest("max_new_tokens must be 0 or more")
    if len(prompt) + params.max_new_tokens > engine.n_ctx:
        raise ContextOverflow(
            f"the prompt ({len(prompt)} tokens) plus max_new_tokens ({params.max_new_tokens}) "
            f"exceeds the window of {engine.n_ctx} tokens; shorten the context or ask for fewer tokens"
        )


def _start_run(engine: Engine, params: GenerationParams, sink: GenerationSink) -> _Run:
    tokenizer = engine.lltokenizer()
    run = _Run(engine=engine, params=params, sink=sink, tokenizer=tokenizer, stream=TextStream(params.stop))
    if params.constraint is not None:
        run.matcher = compile_constraint(params.constraint, tokenizer).matcher()
        run.mask = TokenMask(tokenizer.vocab_size, engine.n_vocab)
    if params.logprobs > 0:
        run.logprobs = []
    if params.guard is not None:
        run.guard = DegenerationGuard(params.guard)
    return run


def _prefill(engine: Engine, prompt: list[int], start: int, run: _Run, started: float) -> None:
    """Evaluate ``prompt[start:]`` in batches, with progress before the first batch, after each
    one and, while one runs, every :data:`PROGRESS_HEARTBEAT_S` (:class:`_ProgressHeartbeat`).
    The first batch is small; each later one is the engine's whole batch, or, on an engine that
    cannot stop inside a batch, shorter when the rate measured on the one before says that would
    take over :data:`PREFILL_BATCH_TARGET_S`; none is shorter than the engine's
    ``min_fill_rows`` where the prompt has that many left."""
    least = engine.capabilities.min_fill_rows
    most = max(1, least, engine.prefill_batch)
    batch = min(most, max(least, FIRST_PREFILL_BATCH))
    aborts = engine if isinstance(engine, AbortsInBatch) else None
    done = start
    with _ProgressHeartbeat(run.sink, done, len(prompt)) as heartbeat, _aborting(aborts, run.sink):
        while done < len(prompt):
            _check_cancelled(run, started, len(prompt))
            rows = prompt[done : batch_end(done, batch, len(prompt), least)]
            began = time.perf_counter()
            try:
                engine.evaluate(rows)
            except EvaluationAborted:
                _check_cancelled(run, started, len(prompt))
                raise  # only a cancel stops a batch: anything else is the engine's failure
            elapsed = time.perf_counter() - began
            done += len(rows)
            heartbeat.report(done)
            # A cancel stops an engine that aborts in a batch at once, so its batches stay whole
            # (with flash attention, short ones late in a long prompt cost more a row).
            batch = most if aborts is not None else max(least, next_prefill_batch(len(rows), elapsed, most))


@contextmanager
def _aborting(engine: AbortsInBatch | None, sink: GenerationSink) -> Iterator[None]:
    """While a prefill runs, ``engine`` stops a batch as soon as the sink is cancelled."""
    if engine is None:
        yield
        return
    engine.abort_when(sink.cancelled)
    try:
        yield
    finally:
        engine.abort_when(None)


class _ProgressHeartbeat:
    """Sends ``progress`` frames for a prefill: each figure :meth:`report` is given at once,
    and the last one again from a thread of its own while the engine computes a batch, so
    frames keep their interval whatever a batch's size. The sink is called under a lock, so
    frames stay in order and the figure never goes back; every sink of the pool is safe to call
    from another thread (the pool's hands each frame to its event loop thread-safely)."""

    def __init__(self, sink: GenerationSink, done: int, total: int) -> None:
        self._sink = sink
        self._done = done
        self._total = total
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._last_sent = 0.0
        self._thread = threading.Thread(target=self._beat, name="caldrix-prefill-progress", daemon=True)

    def __enter__(self) -> _ProgressHeartbeat:
        self.report(self._done)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        self._thread.join()

    def report(self, done: int) -> None:
        with self._lock:
            self._done = done
            self._send()

    def _send(self) -> None:
        self._sink.progress(self._done, self._total)
        self._last_sent = time.monotonic()

    def _beat(self) -> None:
        while True:
            with self._lock:
                wait = self._last_sent + PROGRESS_HEARTBEAT_S - time.monotonic()
            if self._stopped.wait(max(0.0, wait)):
                return
            with self._lock:
                due = time.monotonic() >= self._last_sent + PROGRESS_HEARTBEAT_S
                if due and not self._stopped.is_set():
                    self._send()


def batch_end(done: int, batch: int, total: int, min_rows: int) -> int:
    """Where a batch of the rows ``done:total`` ends: ``batch`` rows on, but never leaving a last
    batch shorter than ``min_rows``: this one shrinks instead, or takes the rest when shrinking
    would make it the short one. So no batch is shorter than ``min_rows`` where the rows allow:
    llama.cpp computes a one-row batch (with flash attention, any under
    ``FLASH_ATTENTION_EXACT_ROWS``) otherwise than a prefill's, with slightly different logits."""
    end = min(done + batch, total)
    if 0 < total - end < min_rows:
        end = total - min_rows if total - min_rows - done >= min_rows else total
    return end


def next_prefill_batch(rows: int, seconds: float, most: int) -> int:
    """The rows of the next prefill batch, after ``rows`` took ``seconds``: as many as take
    about :data:`PREFILL_BATCH_TARGET_S` at that rate, at least :data:`MIN_PREFILL_BATCH`
    (tiny batches waste llama.cpp's per-call work) and at most ``most`` (the engine's batch)."""
    if seconds <= 0:
        return most
    fitting = int(rows / seconds * PREFILL_BATCH_TARGET_S)
    return max(min(MIN_PREFILL_BATCH, most), min(most, fitting))


def _decode(run: _Run) -> Finish:
    """Generate until a finish; returns it."""
    engine, params, matcher = run.engine, run.params, run.matcher
    eos = set(engine.eos_token_ids)
    sampler = Sampler(params.temperature, params.seed, top_k=params.top_k, top_p=params.top_p)
    while len(run.output) < params.max_new_tokens:
        if run.sink.cancelled():
            raise GenerationCancelled(_partial(run))
        if matcher is not None:
            if matcher.is_error():
                return "constraint"
            if matcher.is_stopped():
                return "stop"
            forced = matcher.compute_ff_tokens()[: params.max_new_tokens - len(run.output)]
            if forced:
                if not matcher.consume_tokens(forced):
                    return "constraint"
                _record_forced(run, forced)
                run.emit(forced)
                if run.degenerate is not None:
                    return "degenerate"
                if run.stream.stopped or matcher.is_stopped():
                    return "stop"
                engine.evaluate(forced)
                continue
        logits = engine.logits()
        if matcher is not None and run.mask is not None:
            allowed = run.mask.allowed(matcher)
            if not allowed.any():
                return "constraint"
            logits = apply_mask(logits, allowed)
        token = sampler.choose(logits)
        if token in eos:
            # Not output: it is neither in the text nor counted, so it has no logprobs entry
            # either (one entry per completion token, as a client zips them).
            return "stop"
        if run.logprobs is not None:
            _record_logprobs(run, logits, token)
        if matcher is not None and not matcher.consume_token(token):
            return "constraint"
        run.emit([token])
        if run.degenerate is not None:
            return "degenerate"
        if run.stream.stopped or (matcher is not None and matcher.is_stopped()):
            return "stop"
        if len(run.output) >= params.max_new_tokens:
            break  # its row is not needed: nothing follows it
        engine.evaluate([token])
    return "length"


def _record_logprobs(run: _Run, logits: np.ndarray, token: int) -> None:
    """Log-probabilities under the distribution actually sampled from (after the mask)."""
    assert run.logprobs is not None
    values = log_softmax(logits)
    top = top_logprobs(values, run.params.logprobs)
    run.logprobs.append(
        {
            "token": run.text_of(token),
            "logprob": float(values[token]),
            "top": [{"token": run.text_of(t), "logprob": lp} for t, lp in top],
        }
    )


def _record_forced(run: _Run, forced: Sequence[int]) -> None:
    """A forced token had no alternative under the constraint: log-probability 0."""
    if run.logprobs is None:
        return
    for token in forced:
        text = run.text_of(token)
        run.logprobs.append({"token": text, "logprob": 0.0, "top": [{"token": text, "logprob": 0.0}]})


def _check_cancelled(run: _Run, started: float, total: int) -> None:
    if run.sink.cancelled():
        partial = _partial(run)
        partial.prompt_tokens = total
        partial.prefill_ms = (time.perf_counter() - started) * 1000.0
        raise GenerationCancelled(partial)


def _partial(run: _Run) -> GenerationResult:
    return GenerationResult(
        text=run.stream.text,
        finish="stop",
        prompt_tokens=0,
        completion_tokens=len(run.output),
        recomputed_from=0,
        output_token_ids=list(run.output),
        logprobs=run.logprobs,
    )

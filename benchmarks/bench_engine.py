"""Engine and decoding benchmark: caldrix's loop against plain llama-cpp-python, side by side.

Prints three ratios (higher is better for caldrix):

(a) decode tokens/s through :func:`caldrix.generation.decoding.run_generation` / a plain llama-cpp-python
    greedy loop (``eval`` + argmax over ``get_logits_ith``), same model, same tokens;
(b) a constrained turn (aerix's own turn schema, :func:`aerix.domain.turns.turn_schema`) / the same number of
    tokens generated unconstrained, both through caldrix (forced tokens make (b) go above 1);
(c) decode through a real ``caldrix pool`` (Unix socket, CBOR frames, the client's clock from
    first token frame to done frame) / the plain loop;
(e) decode through a real pool, free (the story) and JSON-constrained (the turn schema), each
    against a raw loop doing the same work straight on llama-cpp-python (and llguidance for the
    JSON one: forced tokens in one batch, the mask applied in place, argmax), same tokens. Both
    sides are timed from the end of the prefill to the last token: the pool's by the client,
    from the last progress frame to the done frame;
(d) the degeneration guard's cost: decode tokens/s with the guard (a ``generate``'s ``guard``,
    the pool's defaults) / without it, interleaved; and the guard alone, timed per token over
    the tokens of a real generation and of this project's own source (code: many repeated
    tokens, the guard's costlier case), as a share of one decode step (target < 1 %).

Runs are interleaved (A, B, A, B, ...) and the median of each side is compared, because this
machine is shared and its speed drifts minute to minute.

    .venv/bin/python benchmarks/bench_engine.py [--model PATH] [--threads 1] [--rounds 5] [--tokens 64]
                                                [--skip-pool] [--only a,b,c,d,e]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout: tests/ helpers

import anyio
import llguidance.numpy as llnp
import numpy as np
from _side_by_side import paired
from llama_cpp import Llama
from llguidance import LLMatcher, LLTokenizer

from aerix.adapters.pool.client import client_bounds
from aerix.domain.settings import PoolSettings
from aerix.domain.tools import BASH, READ
from aerix.domain.turns import turn_schema
from caldrix import limits
from caldrix.engine_seam import GenerationParams, GuardLimits, ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, disable_extra_buffer_types, open_llamacpp
from caldrix.generation.constraints import compile_constraint
from caldrix.generation.decoding import run_generation
from caldrix.generation.degeneration import DegenerationGuard
from caldrix.generation.templates import render_context
from caldrix.models.references import resolve_model
from caldrix.protocol.client import connect
from caldrix.protocol.messages import DoneFrame, ProgressFrame, TokenFrame
from tests.caldrix.sinks import DiscardingSink

STORY = "Write a long, detailed story about a lighthouse keeper and a storm. Use many paragraphs."
TURN_SYSTEM = (
    'Every reply is one JSON object. To use tools: {"thought": "why", "calls": [{"tool": "read", '
    '"input": {"path": "a.txt"}}]}. To answer: {"thought": "why", "final": "the answer"}. '
    "Tools: read (path), bash (command)."
)
TURN_REQUEST = "Read the file README.md and the file setup.py, then run the tests with bash."
#: Aerix's own turn schema for an agent that may call read and bash: what every agent turn is
#: constrained to (docs/benchmarks.md says when this replaced a hand-written copy).
TURN_SCHEMA: dict[str, Any] = turn_schema([READ, BASH])
#: The guard every aerix and front generation asks for: the pool's defaults.
DEFAULT_GUARD = GuardLimits(
    span_max_tokens=limits.DEGENERATE_SPAN_MAX_TOKENS,
    repeats=limits.DEGENERATE_REPEATS,
    run_min_tokens=limits.DEGENERATE_RUN_MIN_TOKENS,
    open_string_chars=limits.OPEN_STRING_LINE_MAX_CHARS,
)
#: Source the guard alone is timed on (code: indentation and keywords recur within a span).
GUARD_SOURCE = Path(__file__).resolve().parent.parent / "caldrix" / "pool.py"


def embedded_model() -> Path:
    return resolve_model("smollm2-135m").path


def story_prompt(engine: LlamaCppEngine) -> list[int]:
    return render_context(engine, [{"id": "u", "role": "user", "text": STORY}]).prompt_tokens


def turn_prompt(engine: LlamaCppEngine) -> list[int]:
    segments = [
        {"id": "s", "role": "system", "text": TURN_SYSTEM},
        {"id": "u", "role": "user", "text": TURN_REQUEST},
    ]
    return render_context(engine, segments).prompt_tokens


def caldrix_decode(engine: LlamaCppEngine, prompt: list[int], params: GenerationParams) -> tuple[int, float]:
    """(tokens, decode seconds) of one caldrix generation from a cold prefill."""
    engine.truncate(0)
    result = run_generation(engine, prompt, params, DiscardingSink())
    return result.completion_tokens, result.decode_ms / 1000.0


def plain_decode(llm: Any, prompt: list[int], n_tokens: int) -> tuple[int, float]:
    """The same greedy decode written directly against llama-cpp-python: pick ``n_tokens``
    tokens, evaluating each but the last (as the caldrix loop does)."""
    llm.reset()
    llm.eval(prompt)
    n_vocab = llm.n_vocab()
    began = time.perf_counter()
    for i in range(n_tokens):
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(n_vocab,))
        token = int(np.argmax(logits))
        if i + 1 < n_tokens:
            llm.eval([token])
    return n_tokens, time.perf_counter() - began


def raw_constrained_decode(
    llm: Any, tokenizer: LLTokenizer, grammar: str, prompt: list[int], n_tokens: int
) -> tuple[int, float]:
    """The JSON-constrained decode written directly against llama-cpp-python and llguidance,
    after a cold prefill of ``prompt``; the decode alone is timed (:func:`raw_constrained_steps`)."""
    llm.reset()
    llm.eval(prompt)
    began = time.perf_counter()
    produced = raw_constrained_steps(llm, tokenizer, grammar, n_tokens)
    return produced, time.perf_counter() - began


def raw_constrained_steps(
    llm: Any,
    tokenizer: LLTokenizer,
    grammar: str,
    n_tokens: int,
    first: Callable[[], None] = lambda: None,
) -> int:
    """Up to ``n_tokens`` tokens after the rows ``llm`` holds, constrained by ``grammar``:
    forced tokens evaluated in one batch, else the mask filled and applied in place to
    llama.cpp's own logits row, then argmax; the last token not evaluated. ``first`` is called
    once the first token is known. Returns the tokens produced."""
    matcher = LLMatcher(tokenizer, grammar, log_level=0)
    bitmask = llnp.allocate_token_bitmask(1, tokenizer.vocab_size)
    n_vocab = llm.n_vocab()
    produced = 0
    while produced < n_tokens and not matcher.is_stopped():
        forced = matcher.compute_ff_tokens()[: n_tokens - produced]
        if forced:
            matcher.consume_tokens(forced)
            batch = forced
        else:
            llnp.fill_next_token_bitmask(matcher, bitmask)
            logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(1, n_vocab))
            llnp.apply_token_bitmask_inplace(logits, bitmask)
            batch = [int(np.argmax(logits))]
            matcher.consume_token(batch[0])
        if produced == 0:
            first()
        produced += len(batch)
        if produced < n_tokens:
            llm.eval(batch)
    return produced


def rate(sample: tuple[int, float]) -> float:
    tokens, seconds = sample
    return tokens / seconds if seconds > 0 else 0.0


def interleave(
    rounds: int, left: Callable[[], tuple[int, float]], right: Callable[[], tuple[int, float]]
) -> tuple[float, float, float]:
    """Median tokens/s of each side over ``rounds`` paired runs, and the median of the
    per-round ratios."""
    pairs = paired(rounds, lambda: rate(left()), lambda: rate(right()))
    ratios = [one / other if other else float("nan") for one, other in pairs]
    return (
        statistics.median(one for one, _ in pairs),
        statistics.median(other for _, other in pairs),
        statistics.median(ratios),
    )


def report(label: str, left: tuple[str, float], right: tuple[str, float], ratio: float, target: str) -> None:
    print(f"{label}:")
    print(f"    {left[0]} {left[1]:.1f} tok/s, {right[0]} {right[1]:.1f} tok/s")
    print(f"    ratio {ratio:.3f} (target {target})")


def bench_decode(engine: LlamaCppEngine, llm: Any, rounds: int, tokens: int) -> int:
    """(a); returns the number of tokens the story prompt produced (for (c))."""
    prompt = story_prompt(engine)
    params = GenerationParams(max_new_tokens=tokens)
    produced, _ = caldrix_decode(engine, prompt, params)  # warm-up, and the token count to match
    plain_decode(llm, prompt, produced)
    caldrix_rate, plain_rate, ratio = interleave(
        rounds, lambda: caldrix_decode(engine, prompt, params), lambda: plain_decode(llm, prompt, produced)
    )
    left, right = ("caldrix loop", caldrix_rate), ("plain llama-cpp-python", plain_rate)
    report(f"(a) decode, {produced} tokens", left, right, ratio, ">= 0.95")
    return produced


def bench_constrained(engine: LlamaCppEngine, rounds: int, tokens: int) -> None:
    prompt = turn_prompt(engine)
    constrained = GenerationParams(max_new_tokens=max(tokens, 160), constraint={"json": TURN_SCHEMA})
    engine.truncate(0)
    turn = run_generation(engine, prompt, constrained, DiscardingSink())
    free = GenerationParams(max_new_tokens=turn.completion_tokens)
    turn_rate, free_rate, ratio = interleave(
        rounds,
        lambda: caldrix_decode(engine, prompt, constrained),
        lambda: caldrix_decode(engine, prompt, free),
    )
    print(f"    the turn ({turn.finish}, {turn.completion_tokens} tokens): {turn.text}")
    left, right = ("turn schema", turn_rate), ("unconstrained", free_rate)
    report(
        f"(b) constrained turn, {turn.completion_tokens} tokens",
        left,
        right,
        ratio,
        ">= 0.95, above 1.0 hoped",
    )


def guard_seconds_per_token(engine: LlamaCppEngine, tokens: list[int], rounds: int) -> float:
    """The guard alone: the median over ``rounds`` of the seconds it takes per token to be fed
    ``tokens`` (each with its text, as the decoding loop feeds it)."""
    texts = [engine.lltokenizer().decode_bytes([t]).decode("utf-8", "replace") for t in tokens]
    timings = []
    for _ in range(rounds):
        guard = DegenerationGuard(DEFAULT_GUARD)
        began = time.perf_counter()
        for token, text in zip(tokens, texts, strict=True):
            guard.feed(token, text)
        timings.append((time.perf_counter() - began) / len(tokens))
    return statistics.median(timings)


def bench_guard(engine: LlamaCppEngine, rounds: int, tokens: int) -> None:
    """(d): decode with the guard against without, then the guard alone per token."""
    prompt = story_prompt(engine)
    guarded = GenerationParams(max_new_tokens=tokens, guard=DEFAULT_GUARD)
    engine.truncate(0)
    story = run_generation(engine, prompt, guarded, DiscardingSink())
    plain = GenerationParams(max_new_tokens=story.completion_tokens)
    guarded = GenerationParams(max_new_tokens=story.completion_tokens, guard=DEFAULT_GUARD)
    guard_rate, free_rate, ratio = interleave(
        rounds, lambda: caldrix_decode(engine, prompt, guarded), lambda: caldrix_decode(engine, prompt, plain)
    )
    left, right = ("guard on", guard_rate), ("guard off", free_rate)
    report(
        f"(d) decode with the guard ({story.finish}), {story.completion_tokens} tokens",
        left,
        right,
        ratio,
        ">= 0.99",
    )
    step = 1.0 / free_rate if free_rate else float("nan")
    source = engine.tokenize(GUARD_SOURCE.read_text(encoding="utf-8"), special=False)
    for label, ids in (("its output", story.output_token_ids), (GUARD_SOURCE.name, source)):
        seconds = guard_seconds_per_token(engine, list(ids), rounds)
        print(
            f"    the guard alone on {label} ({len(ids)} tokens): {seconds * 1e6:.1f} µs a token, "
            f"{seconds / step:.2%} of a decode step ({step * 1000:.1f} ms) (target < 1 %)"
        )


async def _pool_generation(socket: Path, tokens: int) -> tuple[int, float]:
    async with await connect(socket, bounds=client_bounds(PoolSettings())) as client:
        created = await client.context_create(
            "main",
            [{"id": "u", "role": "user", "text": STORY, "pinned": False}],
        )
        first: float | None = None
        generation = client.generate(created.context, tokens)
        async for frame in generation:
            if isinstance(frame, TokenFrame) and first is None:
                first = time.perf_counter()
        done = generation.done
        ended = time.perf_counter()
        await client.context_drop(created.context)
    assert done is not None and first is not None
    # Token frames carry text pieces, not tokens: use the done frame's count, and time the
    # client's view from the first piece to the done frame.
    return done.completion_tokens - 1, ended - first


async def _pool_decode(
    socket: Path, segments: list[dict[str, Any]], tokens: int, constraint: Mapping[str, Any] | None
) -> tuple[int, float]:
    """(tokens, seconds) of one pool generation as its client sees the decode: from the last
    progress frame (the prefill done) to the done frame.

    A one-token generation on another context goes first, so the member's live rows share only
    the chat template's opening with ``segments`` and the prompt is prefilled nearly whole, in
    batches of 16 rows and more, as the raw loops' are.
    Resumed from the rows the previous round left (all but the last 2), the 1.5B model's greedy
    turn came out different (a longer thought, fewer forced tokens), so the two sides would not
    decode the same tokens (docs/benchmarks.md)."""
    async with await connect(socket, bounds=client_bounds(PoolSettings())) as client:
        other = await client.context_create(
            "main", [{"id": "x", "role": "user", "text": "Hi.", "pinned": False}]
        )
        await client.generate(other.context, 1).result()
        await client.context_drop(other.context)
        created = await client.context_create("main", segments)
        prefilled: float | None = None
        generation = client.generate(created.context, tokens, constraint=constraint)
        async for frame in generation:
            if isinstance(frame, ProgressFrame) and frame.done == frame.total:
                prefilled = time.perf_counter()
        ended = time.perf_counter()
        done: DoneFrame | None = generation.done
        await client.context_drop(created.context)
    assert done is not None and prefilled is not None
    # Only the chat template's opening may be resumed (the other context shares it), never a tail.
    assert done.prompt_tokens - done.recomputed_from >= 16, (done.prompt_tokens, done.recomputed_from)
    return done.completion_tokens, ended - prefilled


def bench_pool_against_raw(engine: LlamaCppEngine, llm: Any, socket: Path, rounds: int, tokens: int) -> None:
    """(e): free and JSON-constrained decode through the pool against raw loops."""
    story = [{"id": "u", "role": "user", "text": STORY, "pinned": False}]
    free = GenerationParams(max_new_tokens=tokens)
    engine.truncate(0)
    produced = run_generation(engine, story_prompt(engine), free, DiscardingSink()).completion_tokens
    prompt = story_prompt(engine)
    anyio.run(_pool_decode, socket, story, produced, None)  # warm-up
    pool_rate, raw_rate, ratio = interleave(
        rounds,
        lambda: anyio.run(_pool_decode, socket, story, produced, None),
        lambda: plain_decode(llm, prompt, produced),
    )
    report(
        f"(e) free decode, pool / raw loop, {produced} tokens",
        ("pool", pool_rate),
        ("raw", raw_rate),
        ratio,
        ">= 0.97",
    )

    turn = [
        {"id": "s", "role": "system", "text": TURN_SYSTEM, "pinned": True},
        {"id": "u", "role": "user", "text": TURN_REQUEST, "pinned": False},
    ]
    constraint: dict[str, object] = {"json": TURN_SCHEMA}
    prompt = turn_prompt(engine)
    engine.truncate(0)
    expected = run_generation(
        engine,
        prompt,
        GenerationParams(max_new_tokens=max(tokens, 160), constraint=constraint),
        DiscardingSink(),
    )
    n = expected.completion_tokens
    grammar = compile_constraint(constraint, engine.lltokenizer()).grammar
    raw_tokens, _ = raw_constrained_decode(llm, engine.lltokenizer(), grammar, prompt, n)
    pool_tokens, _ = anyio.run(_pool_decode, socket, turn, n, constraint)
    print(f"    the turn: {n} tokens ({expected.finish}); raw loop {raw_tokens}, pool {pool_tokens}")
    pool_rate, raw_rate, ratio = interleave(
        rounds,
        lambda: anyio.run(_pool_decode, socket, turn, n, constraint),
        lambda: raw_constrained_decode(llm, engine.lltokenizer(), grammar, prompt, n),
    )
    report(
        f"(e) JSON-constrained decode, pool / raw loop, {n} tokens",
        ("pool", pool_rate),
        ("raw", raw_rate),
        ratio,
        ">= 0.97",
    )


def bench_pool(
    engine: LlamaCppEngine, llm: Any, args: argparse.Namespace, model: Path, produced: int
) -> None:
    """(c) and (e): generations through a real pool, interleaved with the plain loops."""
    with tempfile.TemporaryDirectory(prefix="caldrix-bench-") as tmp:
        env = dict(os.environ, XDG_RUNTIME_DIR=tmp, XDG_STATE_HOME=tmp, XDG_DATA_HOME=tmp, XDG_CACHE_HOME=tmp)
        socket = Path(tmp) / "pool.sock"
        command = [
            *[sys.executable, "-m", "caldrix", "pool", "--socket", str(socket), "--load", str(model)],
            *[
                "--threads",
                str(args.threads),
                "--ctx",
                "2048",
                "--context-budget",
                "0",
                "--idle-timeout",
                "0",
            ],
        ]
        pool = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while not socket.exists():
                if pool.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"the pool did not start: {pool.stderr.read().decode() if pool.stderr else ''}"
                    )
                time.sleep(0.2)
            if "c" in args.only:
                prompt = story_prompt(engine)
                anyio.run(_pool_generation, socket, produced)  # warm-up
                pool_rate, plain_rate, ratio = interleave(
                    args.rounds,
                    lambda: anyio.run(_pool_generation, socket, produced),
                    lambda: plain_decode(llm, prompt, produced),
                )
                left, right = (
                    ("pool (socket + CBOR frames)", pool_rate),
                    ("plain llama-cpp-python", plain_rate),
                )
                report(f"(c) decode through the pool, {produced} tokens", left, right, ratio, ">= 0.95")
            if "e" in args.only:
                bench_pool_against_raw(engine, llm, socket, args.rounds, args.tokens)
        finally:
            pool.terminate()
            pool.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", type=Path, default=None, help="a GGUF file (default: the embedded SmolLM2)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="engine threads (default 1: the machine is shared)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved runs per side (default 5)")
    parser.add_argument("--tokens", type=int, default=64, help="tokens per decode run (default 64)")
    parser.add_argument("--skip-pool", action="store_true", help="do not measure through a real pool")
    parser.add_argument(
        "--only", default="a,b,c,d", help="which comparisons, comma-separated (default a,b,c,d)"
    )
    args = parser.parse_args()
    args.only = set(args.only.split(","))
    model = args.model or embedded_model()
    engine = open_llamacpp(model, ServingFlags(threads=args.threads, ctx=2048))
    disable_extra_buffer_types()  # the plain baseline needs caldrix's AMX guard too
    llm = Llama(
        model_path=str(model),
        n_ctx=2048,
        n_batch=256,
        n_ubatch=256,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        logits_all=False,
        verbose=False,
    )
    print(f"model {model.name}, threads {args.threads}, {args.rounds} interleaved rounds, medians")
    produced = args.tokens
    if "a" in args.only:
        produced = bench_decode(engine, llm, args.rounds, args.tokens)
    if "b" in args.only:
        bench_constrained(engine, args.rounds, args.tokens)
    if "d" in args.only:
        bench_guard(engine, args.rounds, args.tokens)
    if args.skip_pool or not {"c", "e"} & args.only:
        print("(c) skipped (--skip-pool)")
    else:
        bench_pool(engine, llm, args, model, produced)
    engine.close()
    llm.close()


if __name__ == "__main__":
    main()

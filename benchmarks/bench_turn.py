"""One aerix-shaped turn through a real pool, beside llama.cpp alone doing the same work.

The turn: a stored prefix (the system segment aerix starts every context with: ``system.md``,
the tools' descriptions and the ``# Turns`` section, lengthened with this project's source to
about ``--prefix`` rows), then a user request of about ``--suffix`` rows, and one turn of up to
``--tokens`` tokens constrained to aerix's turn schema. Each round asks a new request (so only
the prefix can be resumed) and measures:

- **the pool** (a ``caldrix pool`` subprocess with its prefix store, driven by the protocol
  client): time to first token (from ``context_create`` to the first token frame), decode
  tokens/s (first token frame to done frame) and the whole turn;
- **llama.cpp alone** (llama-cpp-python in this process, the same threads and window, the same
  rows): load the prefix's saved KV state, evaluate the suffix, decode the same number of tokens
  with llguidance's mask (forced tokens in one batch, as the pool does). Its time to first token
  is the load plus the suffix plus the first token's choice.

Rounds alternate which side goes first; it prints each side's medians and the medians of the
per-round ratios (llama.cpp alone / the pool: 1.0 means the pool adds nothing).

    .venv/bin/python benchmarks/bench_turn.py --model PATH [--threads 2] [--rounds 3]
                                              [--prefix 2000] [--suffix 100] [--tokens 50]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import anyio
import llama_cpp.llama_cpp as llama_c
from _side_by_side import project_source, short_head
from bench_engine import raw_constrained_steps

from aerix.adapters.pool.client import client_bounds
from aerix.domain.settings import PoolSettings
from aerix.domain.tools import TOOLS, render_tool_descriptions
from aerix.domain.turns import render_turns_section, turn_schema
from caldrix.engine_seam import ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.generation.constraints import compile_constraint
from caldrix.generation.decoding import common_prefix_length
from caldrix.generation.templates import render_context
from caldrix.protocol.client import connect
from caldrix.protocol.messages import DoneFrame, TokenFrame

PROMPTS = Path(__file__).resolve().parents[1] / "aerix" / "prompts"
REQUESTS = [
    "The function parse_flags in cli.py drops the last argument. Find why and fix it.",
    "Add a --verbose flag to the command line that prints each step as it runs.",
    "The tests in test_store.py fail on an empty file. Read them and make them pass.",
    "Rename the helper load_rows to read_rows everywhere and keep the tests passing.",
    "Explain what the retry loop in client.py does and whether it can spin forever.",
]
SEQ = 0


def system_text(engine: LlamaCppEngine, rows: int) -> str:
    """aerix's system segment (system.md, the tools, the turn section), then this project's
    source up to about ``rows`` tokens."""
    head = "\n\n".join(
        [(PROMPTS / "system.md").read_text().strip(), render_tool_descriptions(TOOLS), render_turns_section()]
    )
    have = len(engine.tokenize(head, special=False))
    source = engine.tokenize(project_source(copies=1), special=False)[: max(0, rows - have)]
    text = engine.lltokenizer().decode_str(source) if source else ""
    return f"{head}\n\n# Project notes\n\n{text}"


def request_text(engine: LlamaCppEngine, number: int, rows: int) -> str:
    """A request of about ``rows`` tokens: one of the questions above with a file excerpt."""
    question = REQUESTS[number % len(REQUESTS)]
    excerpt = engine.tokenize(project_source(copies=1)[20_000 * (number + 1) :], special=False)[:rows]
    return f"{question}\n\nThe file as it is now:\n{engine.lltokenizer().decode_str(excerpt)}"


def segments(system: str, request: str | None) -> list[dict[str, Any]]:
    parts = [{"id": "a1.system", "role": "system", "text": system, "pinned": True}]
    if request is not None:
        parts.append({"id": "a1.p1", "role": "user", "text": request, "pinned": False})
    return parts


async def pool_turn(
    socket: Path, parts: list[dict[str, Any]], tokens: int, schema: dict[str, Any]
) -> dict[str, float]:
    async with await connect(socket, bounds=client_bounds(PoolSettings())) as client:
        began = time.perf_counter()
        created = await client.context_create("main", parts)
        first: float | None = None
        generation = client.generate(created.context, tokens, constraint={"json": schema})
        async for frame in generation:
            if isinstance(frame, TokenFrame) and first is None:
                first = time.perf_counter()
        ended = time.perf_counter()
        done: DoneFrame | None = generation.done
        await client.context_drop(created.context)
    assert done is not None and first is not None
    return {
        "ttft": first - began,
        "decode_rate": (done.completion_tokens - 1) / (ended - first) if ended > first else 0.0,
        "turn": ended - began,
        "tokens": done.completion_tokens,
        "resumed": done.recomputed_from,
    }


class Alone:
    """llama.cpp alone on the same model: the prefix's KV state saved once, then each turn."""

    def __init__(self, engine: LlamaCppEngine, prefix: list[int], schema: dict[str, Any]) -> None:
        self.llm = engine._llm
        self.tokenizer = engine.lltokenizer()
        self.grammar = compile_constraint({"json": schema}, self.tokenizer).grammar
        self.llm.reset()
        self.llm.eval(prefix)
        ctx = self.llm._ctx.ctx
        size = llama_c.llama_state_seq_get_size(ctx, SEQ)
        self.state = (ctypes.c_uint8 * size)()
        llama_c.llama_state_seq_get_data(ctx, self.state, size, SEQ)
        self.prefix_rows = len(prefix)

    def turn(self, suffix: list[int], tokens: int) -> dict[str, float]:
        began = time.perf_counter()
        ctx = self.llm._ctx.ctx
        llama_c.llama_memory_seq_rm(llama_c.llama_get_memory(ctx), SEQ, -1, -1)
        llama_c.llama_state_seq_set_data(ctx, self.state, len(self.state), SEQ)
        self.llm.n_tokens = self.prefix_rows
        self.llm.eval(suffix)
        first: list[float] = []
        produced = raw_constrained_steps(
            self.llm, self.tokenizer, self.grammar, tokens, lambda: first.append(time.perf_counter())
        )
        ended = time.perf_counter()
        return {
            "ttft": first[0] - began,
            "decode_rate": (produced - 1) / (ended - first[0]) if ended > first[0] else 0.0,
            "turn": ended - began,
            "tokens": produced,
        }


def start_pool(tmp: str, model: Path, threads: int, ctx: int) -> tuple[subprocess.Popen[bytes], Path]:
    env = dict(os.environ, XDG_RUNTIME_DIR=tmp, XDG_STATE_HOME=tmp, XDG_DATA_HOME=tmp, XDG_CACHE_HOME=tmp)
    socket = Path(tmp) / "pool.sock"
    command = [sys.executable, "-m", "caldrix", "pool", "--socket", str(socket), "--load", str(model)]
    command += ["--threads", str(threads), "--ctx", str(ctx), "--idle-timeout", "0"]
    pool = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not socket.exists():
        if pool.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the pool did not start: {pool.stderr.read().decode() if pool.stderr else ''}")
        time.sleep(0.2)
    return pool, socket


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prefix", type=int, default=2000, help="rows of the stored prefix")
    parser.add_argument("--suffix", type=int, default=100, help="rows of each request")
    parser.add_argument("--tokens", type=int, default=50, help="most tokens of the turn")
    args = parser.parse_args()
    ctx = 4096
    schema = turn_schema(list(TOOLS))
    engine = open_llamacpp(args.model, ServingFlags(threads=args.threads, ctx=ctx))
    system = system_text(engine, args.prefix)
    prefix = render_context(engine, segments(system, None)).prompt_tokens
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        pool, socket = start_pool(tmp, args.model, args.threads, ctx)
        try:
            print(f"model {args.model.name}, {args.threads} threads, tree {short_head()}; load {load()}")
            # The first request stores the prefix in the pool, as a session's first turn does.
            warm = anyio.run(
                pool_turn, socket, segments(system, request_text(engine, 99, args.suffix)), 1, schema
            )
            print(f"  warm-up request: {warm['turn']:.1f} s (the prefix computed and stored); load {load()}")
            first_prompt = render_context(
                engine, segments(system, request_text(engine, 0, args.suffix))
            ).prompt_tokens
            shared = common_prefix_length(prefix, first_prompt)
            alone = Alone(engine, first_prompt[:shared], schema)
            print(f"  prefix {shared} rows; llama.cpp alone's saved state {len(alone.state) / 2**20:.0f} MiB")
            runs: dict[str, list[dict[str, float]]] = {"pool": [], "alone": []}
            for number in range(args.rounds):
                parts = segments(system, request_text(engine, number, args.suffix))
                prompt = render_context(engine, parts).prompt_tokens

                def on_pool(parts: list[dict[str, Any]] = parts) -> None:
                    runs["pool"].append(anyio.run(pool_turn, socket, parts, args.tokens, schema))

                def on_alone(prompt: list[int] = prompt) -> None:
                    # The same number of tokens as the pool's turn of this round (known once it ran).
                    n = (
                        int(runs["pool"][-1]["tokens"])
                        if len(runs["pool"]) > len(runs["alone"])
                        else args.tokens
                    )
                    runs["alone"].append(alone.turn(prompt[alone.prefix_rows :], n))

                for side in (on_pool, on_alone) if number % 2 == 0 else (on_alone, on_pool):
                    side()
                p, a = runs["pool"][-1], runs["alone"][-1]
                print(
                    f"  round {number + 1}: suffix {len(prompt) - alone.prefix_rows} rows; "
                    f"pool ttft {p['ttft']:.2f} s, {p['decode_rate']:.1f} tok/s, turn {p['turn']:.2f} s "
                    f"({p['tokens']:.0f} tokens, resumed from row {p['resumed']:.0f}); "
                    f"alone ttft {a['ttft']:.2f} s, {a['decode_rate']:.1f} tok/s, turn {a['turn']:.2f} s "
                    f"({a['tokens']:.0f} tokens); load {load()}"
                )
        finally:
            pool.terminate()
            pool.wait(timeout=30)
            engine.close()
    print(f"\nmedians of {args.rounds} rounds; ratio: the pool's speed / llama.cpp alone's, per round")
    for key, unit in (("ttft", "s"), ("decode_rate", "tok/s"), ("turn", "s")):
        pool_value = statistics.median(r[key] for r in runs["pool"])
        alone_value = statistics.median(r[key] for r in runs["alone"])
        pairs = zip(runs["pool"], runs["alone"], strict=True)
        if key == "decode_rate":
            ratio = statistics.median(p[key] / a[key] for p, a in pairs)
        else:
            ratio = statistics.median(a[key] / p[key] for p, a in pairs)
        print(f"  {key:11}: pool {pool_value:.2f} {unit}, alone {alone_value:.2f} {unit}, ratio {ratio:.3f}")
    print(f"load {load()}")


if __name__ == "__main__":
    main()

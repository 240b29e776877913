"""Prefix-store benchmark: time to first token, warm against cold, with Aerix-shaped prompts.

A ~2,000-token shared prefix shaped like Aerix's (a system segment with the tool list, then an
instructions segment), then a request of ~50 tokens. Each case measures the time to first
token (TTFT) of a prompt resumed through the prefix store (warm) against a whole prefill of the
same prompt (cold), interleaved round by round, and prints the median warm/cold ratio:

1. next request: a new context whose prompt differs only in its last ~50 tokens from the
   previous request's; a routing probe ran in between, so the rows come from a snapshot;
2. next request, live rows: the same, directly after the previous request (no copy);
3. fork: a context forked after the first request's answer, with a new last message;
4. second context: two contexts alive on one member, taking turns; each turn restores its
   own context's previous turn and fills only the new message.

Then restore cost per MB (``load_rows`` of snapshots of several sizes), and how the store
behaves with a budget of none, one entry, or many, over three contexts taking turns.

    .venv/bin/python benchmarks/bench_prefix.py [--model PATH] [--threads 1] [--rounds 3]
                                                [--part all|ttft|restore|budgets]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from caldrix.engine_seam import GenerationParams, ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.generation.templates import render_context
from caldrix.models.references import resolve_model
from caldrix.store.prefix_store import PrefixStore

PREFIX_TOKENS = 2000
FIRST_TOKEN = GenerationParams(max_new_tokens=1)
ANSWER = GenerationParams(max_new_tokens=32)
BIG_BUDGET = 1 << 30
PROMPTS = Path(__file__).resolve().parents[1] / "aerix" / "prompts"

TOOLS = {
    "read": "Read a file. Input: path (string), offset and limit (lines, optional).",
    "write": "Write a whole file. Input: path, content. Creates folders as needed.",
    "edit": "Replace one exact text in a file. Input: path, old, new, all (bool, optional).",
    "bash": "Run a shell command in the repository. Input: command, timeout_secs (at most 600).",
    "grep": "Search file contents with a regular expression. Input: pattern, path, glob.",
    "glob": "List files matching a glob pattern. Input: pattern, path.",
    "repo_map": "A map of the repository: folders, files and their top-level names.",
    "agent": "Delegate a task to a sub-agent with a brief. Input: brief, tools, member.",
    "plan": "Write or update the plan: steps with a status each. Input: steps.",
    "context": "Manage this context: status, drop, summarize, pin, unpin, note.",
}


def embedded_model() -> Path:
    return resolve_model("smollm2-135m").path


def system_text() -> str:
    tools = "\n".join(f"- {name}: {text}" for name, text in TOOLS.items())
    return f"{(PROMPTS / 'system.md').read_text()}\n# Tools\n{tools}\n"


def instructions_text(engine: LlamaCppEngine, target_tokens: int) -> str:
    """Project instructions (an AERIX.md) grown line by line until system + instructions hold
    about ``target_tokens`` tokens."""
    budget = target_tokens - len(engine.tokenize(system_text()))
    areas = ["parser", "cli", "storage", "network", "render", "config", "tests", "docs", "build"]
    lines = ["# Project instructions", ""]
    i = 0
    while len(engine.tokenize("\n".join(lines))) < budget:
        area = areas[i % len(areas)]
        lines.append(
            f"- {area}/{i:03d}: functions in the {area} package stay under fifty lines; run "
            f"`make test-{area}` and `ruff check {area}/` before committing; never edit generated files."
        )
        i += 1
    return "\n".join(lines)


def request(n: int) -> str:
    """A user request of about 45 tokens; ``n`` makes each one different from the start."""
    return (
        f"Request {n}: in module area {n}, the function that parses option {n * 7} "
        f"rejects empty values; make it accept them, add a test for it, and run the checks."
    )


class FirstToken:
    """A sink that notes when the first token arrives."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first: float | None = None

    def progress(self, done: int, total: int) -> None:
        pass

    def token(self, text: str) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def cancelled(self) -> bool:
        return False


class Bench:
    def __init__(self, engine: LlamaCppEngine, prefix_tokens: int) -> None:
        self.engine = engine
        self.head = [
            {"id": "system", "role": "system", "text": system_text()},
            {"id": "instructions", "role": "system", "text": instructions_text(engine, prefix_tokens)},
        ]
        self.routing = [{"id": "routing", "role": "system", "text": (PROMPTS / "routing.md").read_text()}]

    def prompt(self, *extra: dict[str, object]) -> list[int]:
        return render_context(self.engine, [*self.head, *extra]).prompt_tokens

    def ttft(self, store: PrefixStore, prompt: Sequence[int], appended: bool = True) -> tuple[float, int]:
        """Seconds to the first token, and the row the generation resumed from."""
        sink = FirstToken()
        result = store.generate(self.engine, prompt, FIRST_TOKEN, sink, appended=appended)
        end = sink.first if sink.first is not None else time.perf_counter()
        return end - sink.started, result.recomputed_from

    def cold(self, prompt: Sequence[int]) -> float:
        self.engine.truncate(0)
        return self.ttft(PrefixStore(0), prompt)[0]

    def answer(self, store: PrefixStore, prompt: Sequence[int]) -> str:
        return store.generate(self.engine, prompt, ANSWER, FirstToken(), appended=True).text

    def probe_routing(self, store: PrefixStore, text: str) -> None:
        routing = render_context(self.engine, [*self.routing, user("r", text)]).prompt_tokens
        store.generate(self.engine, routing, GenerationParams(max_new_tokens=2), FirstToken(), appended=False)


def user(sid: str, text: str) -> dict[str, object]:
    return {"id": sid, "role": "user", "text": text, "pinned": False}


def assistant(sid: str, text: str) -> dict[str, object]:
    return {"id": sid, "role": "assistant", "text": text, "pinned": False}


Warm = Callable[[], tuple[float, int]]
Setup = tuple[list[int], Warm]
"""A case's prompt, and the warm measurement to run once its rows are set up."""
Case = Callable[[Bench, PrefixStore, int], Setup]


def next_request(bench: Bench, store: PrefixStore, n: int) -> Setup:
    bench.ttft(store, bench.prompt(user("u", request(100 + n))))
    bench.probe_routing(store, request(200 + n))  # the live rows now hold routing's prompt
    prompt = bench.prompt(user("u", request(300 + n)))
    return prompt, lambda: bench.ttft(store, prompt)


def next_request_live(bench: Bench, store: PrefixStore, n: int) -> Setup:
    previous = bench.prompt(user("u", request(400 + n)))
    prompt = bench.prompt(user("u", request(500 + n)))

    def warm() -> tuple[float, int]:
        bench.ttft(store, previous)
        return bench.ttft(store, prompt)

    return prompt, warm


def fork(bench: Bench, store: PrefixStore, n: int) -> Setup:
    asked = [user("u1", request(600 + n))]
    answer = bench.answer(store, bench.prompt(*asked))
    bench.probe_routing(store, request(700 + n))
    prompt = bench.prompt(*asked, assistant("a1", answer), user("v", f"Check the change for request {n}."))
    return prompt, lambda: bench.ttft(store, prompt)


def second_context(bench: Bench, store: PrefixStore, n: int) -> Setup:
    x = [user("x1", request(800 + n))]
    y = [user("y1", request(900 + n))]
    x.append(assistant("xa", bench.answer(store, bench.prompt(*x))))
    y.append(assistant("ya", bench.answer(store, bench.prompt(*y))))  # y ran last: x is stored
    prompt = bench.prompt(*x, user("x2", f"Now do the same for option {n}."))
    return prompt, lambda: bench.ttft(store, prompt)


def ttft_ratios(bench: Bench, rounds: int) -> None:
    cases: list[tuple[str, Case]] = [
        ("next request (restored)", next_request),
        ("next request (live rows)", next_request_live),
        ("fork", fork),
        ("second context", second_context),
    ]
    print("| case | prompt | resumed from | warm TTFT | cold TTFT | warm/cold |")
    print("|---|---|---|---|---|---|")
    store = PrefixStore(BIG_BUDGET, member="bench")
    for name, case in cases:
        warm_s, cold_s, ratios, starts = [], [], [], []
        for n in range(rounds):
            prompt, warm = case(bench, store, n)  # the setup leaves the rows the case needs
            if n % 2 == 1:  # alternate the order: this machine's speed drifts
                c = bench.cold(prompt)
                prompt, warm = case(bench, store, n)  # set the rows up again (cheap: all stored)
            w, start = warm()
            if n % 2 == 0:
                c = bench.cold(prompt)
            warm_s.append(w)
            cold_s.append(c)
            ratios.append(w / c)
            starts.append(start)
        print(
            f"| {name} | {len(prompt)} | {statistics.median(starts):.0f} | "
            f"{statistics.median(warm_s) * 1000:.0f} ms | {statistics.median(cold_s) * 1000:.0f} ms | "
            f"**{statistics.median(ratios):.3f}** |"
        )
    rates = store.rates.current()
    print(f"\nrates measured by the store: {rates.describe()}")


def restore_cost(bench: Bench) -> None:
    engine = bench.engine
    prompt = bench.prompt(user("u", request(1)))
    engine.truncate(0)
    engine.evaluate(prompt[:2048] if len(prompt) > 2048 else prompt)
    print("\n| rows | snapshot | save | restore | restore per MB |")
    print("|---|---|---|---|---|")
    for rows in (256, 512, 1024, 2048):
        if rows > len(engine.live_tokens):
            break
        tokens = tuple(engine.live_tokens)
        engine.truncate(rows)
        began = time.perf_counter()
        data = engine.save_rows()
        save = time.perf_counter() - began
        loads = []
        for _ in range(5):
            began = time.perf_counter()
            engine.load_rows(data, tokens[:rows])
            loads.append(time.perf_counter() - began)
        load = statistics.median(loads)
        mb = len(data) / 1e6
        print(
            f"| {rows} | {mb:.1f} MB | {save * 1000:.1f} ms | {load * 1000:.1f} ms | "
            f"{load * 1000 / mb:.2f} ms/MB ({mb / load / 1000:.1f} GB/s) |"
        )
        engine.evaluate(tokens[rows:])


def budgets(bench: Bench, rounds: int) -> None:
    contexts = {name: [user(f"{name}0", request(1000 + i) * 6)] for i, name in enumerate("xyz")}
    engine = bench.engine
    engine.truncate(0)
    one_entry_probe = PrefixStore(BIG_BUDGET)
    first = next(iter(contexts.values()))
    bench.answer(one_entry_probe, bench.prompt(*first))
    one_entry = one_entry_probe.stats()["bytes"] * 3 // 2
    print(
        "\n| budget | entries | MB kept | hits | misses | rows computed per later turn | "
        "mean TTFT of later turns |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, budget in (("none (0)", 0), ("one entry", one_entry), ("many (1 GiB)", BIG_BUDGET)):
        store = PrefixStore(budget, member="bench")
        engine.truncate(0)
        later: list[float] = []
        computed: list[int] = []
        turns = {name: list(segments) for name, segments in contexts.items()}
        for turn in range(rounds + 1):
            for name, segments in turns.items():
                segments.append(user(f"{name}{turn}u", f"Turn {turn}: carry on with part {turn}."))
                sink = FirstToken()
                result = store.generate(engine, bench.prompt(*segments), ANSWER, sink, appended=True)
                if turn > 0:
                    later.append((sink.first or time.perf_counter()) - sink.started)
                    computed.append(result.prompt_tokens - result.recomputed_from)
                segments.append(assistant(f"{name}{turn}a", result.text))
        stats = store.stats()
        print(
            f"| {label} | {stats['entries']} | {stats['bytes'] / 1e6:.0f} | {stats['hits']} | "
            f"{stats['misses']} | {statistics.mean(computed):.0f} | "
            f"{statistics.mean(later) * 1000:.0f} ms |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the embedded model)")
    parser.add_argument("--threads", type=int, default=1, help="engine threads (default 1)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved warm/cold pairs per case")
    parser.add_argument("--prefix-tokens", type=int, default=PREFIX_TOKENS, help="system + instructions size")
    parser.add_argument(
        "--part",
        choices=["all", "ttft", "restore", "budgets"],
        default="all",
        help="run only one part (default all)",
    )
    args = parser.parse_args()
    engine = open_llamacpp(args.model or embedded_model(), ServingFlags(ctx=4096, threads=args.threads))
    try:
        bench = Bench(engine, args.prefix_tokens)
        head = sum(len(t) for t in render_context(engine, bench.head).segment_tokens)
        print(f"shared prefix: {head} tokens (system + instructions); threads {args.threads}\n")
        if args.part in ("all", "ttft"):
            ttft_ratios(bench, args.rounds)
        if args.part in ("all", "restore"):
            restore_cost(bench)
        if args.part in ("all", "budgets"):
            budgets(bench, args.rounds)
    finally:
        engine.close()


if __name__ == "__main__":
    main()

"""Side by side: the generations of a real aerix request, replayed against caldrix and against
what users run today, on the same model and the same prompts.

``record`` runs real ``aerix -p`` requests on the embedded model (the later ones continue the
session) through a pool, with a recording proxy on the socket between them: for every
``generate`` it asks the pool for that context's segments and keeps them, with the request's
fields (constraint, max_new_tokens, append …). The recording is ``benchmarks/recordings/aerix_request.json``.

``replay`` (the default) sends those generations, in order, to five setups in one run, each
setup once a round, the order reversed every other round:

- (a) caldrix with its prefix store (the default ``--context-budget``);
- (b) llama-cpp-python's OpenAI server, which keeps the last prompt's rows and reuses their
  longest common prefix, the way llama-server's ``cache_prompt`` does: the setup of a user who
  points Claude Code or OpenCode at a local server. Messages go to ``/v1/chat/completions``;
- (c) the same server with its RAM prompt cache on (``--cache true``);
- (d) caldrix with ``--context-budget 0`` (no prefix store; only the live rows are reused);
- (e) (a) on a pool with ``--flash-attention``: faster rows, and at least 64 of them computed
  after each resume.

For each: the rows prefilled over the rows prompted, the sum of the times to first token, and
the whole replay's wall time, and the ratio of (a) to each. Rows prefilled come from caldrix's
``recomputed_from`` and, for the server (which reports no cached tokens), from the
``prompt eval … / N tokens`` line llama.cpp prints after each completion. The physical floor
is each distinct prompt token computed once (the nodes of a trie over every prompt's tokens).
A recording of the model's own answers is replayed as recorded: every setup decodes the same
greedy answer, and an earlier generation's appended output, whose rows its decode computed,
counts as computed. A scripted recording's answers cannot be decoded again token for token by
the server (see :func:`replayed_generations`), so each of its generations decodes one token and
appends nothing, and the answers are prompt rows of the next turn, for every setup and for the
floor alike.

    .venv/bin/python benchmarks/bench_vs_servers.py record [--prompt TEXT ...] [--max-turns 6]
    .venv/bin/python benchmarks/bench_vs_servers.py [replay] [--threads 1] [--rounds 2]
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' real-server and real-pool launchers
sys.path.insert(0, str(ROOT / "benchmarks"))

from _aerix_recording import (  # noqa: E402
    RECORDING,
    WINDOW,
    floor_rows,
    prompt_tokens,
    record,
    write_recording,
)
from _two_pieces import PIECES, PROMPT, missing_pieces, script, summarize  # noqa: E402

from tests.caldrix.pool_harness import RawConnection, start_pool  # noqa: E402
from tests.default_model import DEFAULT_MODEL_NAME  # noqa: E402
from tests.openai_server import SERVED_MODEL, OpenAIServer, start_server  # noqa: E402

#: llama.cpp's per-completion line: rows computed as a batch for the prompt.
PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


@dataclass
class Figures:
    """One setup's replay."""

    name: str
    prompted: int = 0
    prefilled: int = 0
    ttft_s: float = 0.0
    wall_s: float = 0.0


#: The setups, in the order of the first round (later rounds alternate it).
SETUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("(a) caldrix, prefix store", "caldrix", ()),
    ("(b) llama-cpp-python server", "server", ()),
    ("(c) same server, --cache (RAM)", "server", ("--cache", "true")),
    ("(d) caldrix, --context-budget 0", "caldrix", ("--context-budget", "0")),
    ("(e) caldrix, prefix store, --flash-attention", "caldrix", ("--flash-attention",)),
)


def replay(threads: int, rounds: int) -> None:
    """Every setup once a round, the order reversed every other round; the times reported
    are each setup's median, and each ratio is the median of the per-round ratios."""
    recording = json.loads(RECORDING.read_text())
    generations = replayed_generations(recording)
    prompts, decoded = prompt_tokens(generations)
    floor = floor_rows(prompts, decoded)
    work = Path(tempfile.mkdtemp(prefix="bench-vs-servers-"))
    runs: dict[str, list[Figures]] = {name: [] for name, _, _ in SETUPS}
    for number in range(rounds):
        order = SETUPS if number % 2 == 0 else tuple(reversed(SETUPS))
        for name, kind, flags in order:
            folder = work / f"r{number}-{len(runs[name])}-{kind}-{len(flags)}"
            folder.mkdir()
            run = _replay_caldrix if kind == "caldrix" else _replay_server
            runs[name].append(run(folder, generations, threads, name, list(flags)))
    shutil.rmtree(work, ignore_errors=True)
    _report(recording, runs, floor, sum(len(p) for p in prompts))


def replayed_generations(recording: dict[str, Any]) -> list[dict[str, Any]]:
    """The generations as every setup replays them. A recording of the model's own answers is
    replayed as recorded: each setup decodes the same greedy answer, and the next prompt resumes
    after it. A scripted recording's answers are the script's, which no setup's decode writes
    again token for token (a grammar of the text makes the 135M model pick up to twice as many,
    shorter tokens, which the next prompt then re-tokenizes differently), so each of its
    generations decodes one token and appends nothing: every answer reaches every setup as
    prompt rows of the next turn, and the floor counts them once, as prefill."""
    generations: list[dict[str, Any]] = recording["generations"]
    if recording.get("script") is None:
        return generations
    return [
        {**{k: v for k, v in generation.items() if k != "append"}, "max_new_tokens": 1}
        for generation in generations
    ]


def _replay_caldrix(
    folder: Path, generations: list[dict[str, Any]], threads: int, name: str, flags: list[str]
) -> Figures:
    pool = start_pool(
        folder, "--load", DEFAULT_MODEL_NAME, "--ctx", str(WINDOW), "--threads", str(threads), *flags
    )
    figures = Figures(name)
    rids = iter(range(1, 1 << 30))
    try:
        raw = RawConnection(pool.socket_path, pool.frames)
        raw.hello()
        started = time.perf_counter()
        for generation in generations:
            raw.send(
                {"op": "context.create", "rid": next(rids), "member": "main", "segments": _plain(generation)}
            )
            context = raw.receive()["context"]
            rid = next(rids)
            sent = time.perf_counter()
            raw.send({"op": "generate", "rid": rid, "context": context, **_generate_fields(generation)})
            first: float | None = None
            while (frame := raw.receive())["op"] not in ("done", "error"):
                if frame["op"] == "token" and first is None:
                    first = time.perf_counter()
            if frame["op"] == "error":
                raise RuntimeError(f"{name}: {frame['message']}")
            figures.ttft_s += (first or time.perf_counter()) - sent
            figures.prompted += frame["prompt_tokens"]
            figures.prefilled += frame["prompt_tokens"] - frame["recomputed_from"]
            raw.send({"op": "context.drop", "rid": next(rids), "context": context})
            raw.receive()
        figures.wall_s = time.perf_counter() - started
        raw.close()
    finally:
        pool.stop()
    return figures


def _replay_server(
    folder: Path, generations: list[dict[str, Any]], threads: int, name: str, flags: list[str]
) -> Figures:
    # logits_all off, as caldrix computes logits for the last row only: the same work a row.
    server = start_server(folder, "--logits_all", "false", *flags, n_ctx=WINDOW, threads=threads)
    figures = Figures(name)
    try:
        started = time.perf_counter()
        for generation in generations:
            seen = len(server.log())
            ttft = _stream_chat(server, generation)
            figures.ttft_s += ttft
            rows = last_prompt_eval(server, seen)
            figures.prefilled += rows
        figures.wall_s = time.perf_counter() - started
    finally:
        server.stop()
    return figures


def _stream_chat(server: OpenAIServer, generation: dict[str, Any]) -> float:
    """One streamed chat completion; returns the time to its first text."""
    body: dict[str, Any] = {
        "model": SERVED_MODEL,
        "messages": [{"role": s["role"], "content": s["text"]} for s in generation["segments"]],
        "max_tokens": generation.get("max_new_tokens", 512),
        "temperature": float(generation.get("temperature", 0.0)),
        "stream": True,
        "top_p": 1.0,
        "top_k": 0,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
    }
    constraint = generation.get("constraint") or {}
    if "json" in constraint:
        body["response_format"] = {"type": "json_object", "schema": constraint["json"]}
    elif "one_of" in constraint:
        from caldrix.engines._remote_servers import choice_grammar

        body["grammar"] = choice_grammar(constraint["one_of"])
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    sent = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    first: float | None = None
    for line in _lines(response):
        if first is None and line.startswith("data: {") and '"content"' in line:
            delta = json.loads(line[6:])["choices"][0].get("delta", {})
            if delta.get("content"):
                first = time.perf_counter()
    connection.close()
    return (first or time.perf_counter()) - sent


def _lines(response: http.client.HTTPResponse) -> Iterator[str]:
    while line := response.readline():
        yield line.decode("utf-8", "replace").strip()


class LoggingServer(Protocol):
    def log(self) -> str: ...


def last_prompt_eval(server: LoggingServer, seen: int) -> int:
    """Rows the server computed for the last prompt (llama.cpp's perf line, printed once the
    completion is done: wait for it); llama-cpp-python's server and llama-server print it alike."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = PROMPT_EVAL.findall(server.log()[seen:])
        if found:
            return int(found[-1])
        time.sleep(0.05)
    raise RuntimeError("the server printed no prompt eval line")


def _plain(generation: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: s[k] for k in ("id", "role", "text", "pinned")} for s in generation["segments"]]


def _generate_fields(generation: dict[str, Any]) -> dict[str, Any]:
    keep = ("max_new_tokens", "constraint", "logprobs", "temperature", "seed", "stop", "append")
    return {k: generation[k] for k in keep if k in generation and generation[k] is not None}


def _report(recording: dict[str, Any], runs: dict[str, list[Figures]], floor: int, prompted: int) -> None:
    generations = len(recording["generations"])
    requests = len(recording["prompts"])
    model = recording["model"]
    rounds = len(next(iter(runs.values())))
    print(f"{requests} aerix request(s) on {model}: {generations} generations, {prompted} rows prompted")
    for prompt, outcome in zip(recording["prompts"], recording["outcomes"], strict=True):
        print(f"request: {prompt!r} ({outcome})")
    answers = recording.get("answers", "the model's own")  # recordings made before scripts
    if recording.get("script") is not None:
        answers += "; replayed as prompt rows (each generation decodes one token)"
    print(f"answers: {answers}")
    print(
        "agents: "
        + ", ".join(
            f"{a.agent} {a.kind}{' ' + a.piece if a.piece else ''} ×{a.generations}"
            for a in summarize(recording["generations"])
        )
    )
    decoded = "" if recording.get("script") is not None else "; appended outputs were decoded"
    print(f"floor: {floor} rows (each distinct prompt token computed once{decoded})")
    print(
        f"{rounds} round(s); times are medians, per round: "
        + "; ".join(
            f"{name[:3]} " + " ".join(f"{f.ttft_s:.1f}/{f.wall_s:.1f}" for f in figures)
            for name, figures in runs.items()
        )
    )
    print(f"{'setup':34} {'prefilled/prompted':>20} {'sum TTFT s':>11} {'wall s':>8}")
    for name, figures in runs.items():
        distinct = sorted({f.prefilled for f in figures})
        share = f"{'/'.join(str(r) for r in distinct)}/{figures[0].prompted or prompted}"
        ttft = statistics.median(f.ttft_s for f in figures)
        wall = statistics.median(f.wall_s for f in figures)
        print(f"{name:34} {share:>20} {ttft:>11.2f} {wall:>8.2f}")
    best_name = SETUPS[0][0]
    best = runs[best_name]
    print("ratio of (a) to each (rows prefilled, sum of TTFT, wall time; medians of the rounds' ratios):")
    for name, figures in list(runs.items())[1:]:
        pairs = list(zip(best, figures, strict=True))
        rows = statistics.median(a.prefilled / b.prefilled for a, b in pairs if b.prefilled)
        ttft = statistics.median(a.ttft_s / b.ttft_s for a, b in pairs)
        wall = statistics.median(a.wall_s / b.wall_s for a, b in pairs)
        print(f"  {name:32} {rows:6.2f} {ttft:6.2f} {wall:6.2f}")
    prefilled = best[0].prefilled
    print(f"(a) against the floor: {prefilled} rows prefilled for {floor} ({prefilled / floor:.2f}×)")


def _read_script(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"bench_vs_servers: cannot read the script {path}: {exc}") from None


def record_request(prompts: list[str] | None, script_file: str | None, max_turns: int) -> None:
    """The request with two delegated pieces (the default), or ``prompts`` on the model's own
    answers, or ``prompts`` answered from ``script_file``; the recording is written only once
    it holds what it should."""
    if prompts is None and script_file is not None:
        raise SystemExit("bench_vs_servers: --script needs the request it answers: give --prompt TEXT")
    two_pieces = prompts is None
    answers = script() if two_pieces else _read_script(script_file) if script_file else None
    recording = record([PROMPT] if two_pieces else list(prompts or ()), max_turns, answers)
    summary = summarize(recording["generations"])
    for agent in summary:
        piece = f", piece {agent.piece}" if agent.piece else ""
        print(f"  {agent.agent:12} {agent.kind}{piece}: {agent.generations} generation(s)")
    print(f"  files changed: {', '.join(recording['changed_files']) or 'none'}")
    if two_pieces:
        missing = missing_pieces(summary, list(PIECES))
        if missing or recording["outcomes"] != ["done"]:
            raise SystemExit(
                f"bench_vs_servers: the two-piece request ended {recording['outcomes']} and its recording "
                f"lacks {', '.join(missing) or 'nothing'}: {RECORDING} was left as it was"
            )
    write_recording(recording)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", nargs="?", choices=["record", "replay"], default="replay")
    parser.add_argument(
        "--prompt",
        action="append",
        help="record this request on the model's own answers instead of the two-piece request "
        "(repeatable; later ones --continue)",
    )
    parser.add_argument("--script", help="with --prompt: answer from this scripted-engine script (prefilled)")
    parser.add_argument("--max-turns", type=int, default=6, help="the recorded request's turn budget")
    parser.add_argument("--threads", type=int, default=1, help="threads for every setup (default 1)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the five setups (default 2)")
    args = parser.parse_args()
    action: Callable[[], None] = (
        (lambda: record_request(args.prompt, args.script, args.max_turns))
        if args.action == "record"
        else (lambda: replay(args.threads, args.rounds))
    )
    action()


if __name__ == "__main__":
    main()

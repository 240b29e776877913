"""Side by side on Claude Code's own traffic: caldrix's HTTP front against llama.cpp's
``llama-server``, on the same GGUF file, threads and window.

``record`` runs the real ``claude -p`` (the one the Claude Agent SDK bundles) against
``caldrix serve --log-requests DIR`` on a scripted member: the script reads a file, hands a
subagent a task (which runs a tool of its own), then writes a file and answers, so main-agent
and subagent requests alternate. Claude Code's ``POST /v1/messages`` bodies are kept, in
order, gzipped, in ``benchmarks/recordings/claude_front.json.gz``.

``replay`` (the default) sends those exact requests, each asking for one token
(``max_tokens: 1``, everything else as Claude Code sent it, billing header included), to:

- (a) caldrix's front on a pool with its prefix store (the default ``--context-budget``);
  (ab) with ``--tool-text brief``; (af) and (abf) the same two on a pool with
  ``--flash-attention``;
- (b) ``llama-server``'s ``/v1/messages`` with its defaults (one slot; its RAM prompt cache is
  on by default, ``--cache-ram 8192``);
- (b0) the same with ``--cache-ram 0``: only the slot's own rows are reused;
- (bt) the same as (b) with a chat template that keeps the tools, written as caldrix's front
  writes them (``benchmarks/templates/chatml_tools.jinja``), and the model's window raised to
  the replay's (llama-server caps a slot at the training context, 8,192 rows for SmolLM2):
  both servers then prefill prompts of the same content and length;
- (c) caldrix's front on a pool with ``--context-budget 0`` (only the live rows are reused).

For each: the rows prefilled (caldrix's ``input_tokens``, the rows it computed; llama-server's
``prompt eval … / N tokens`` log line), the summed time to first token (to the first
``content_block_delta``, else ``message_delta``) and the whole replay's wall time. The floor
is each distinct token of caldrix's prompts computed once (a trie over them). llama-server
renders its own prompts (its SmolLM2 template drops the tool definitions, (bt)'s keeps them), so
its rows prompted are its own and are reported beside it. Each request goes on a connection of
its own (see ``replay_on``).

``ramble`` asks Claude Code ``say hi`` on a model that does not stop (Gemma 3 270M base, no
output cap from Claude Code: it asks ``max_tokens`` 32,000) through (a), (ab) (the front with
``--tool-text brief``, as ``caldrix launch claude`` starts it) and (b), and reports
how long until Claude Code printed an answer, each cut at ``--cap`` seconds.

    .venv/bin/python benchmarks/bench_claude_front.py record
    .venv/bin/python benchmarks/bench_claude_front.py [replay] [--threads 1] [--setups a,b,b0,bt,c]
                                                         [--answer-tokens 1]
    .venv/bin/python benchmarks/bench_claude_front.py ramble [--cap 600] [--setups a,ab,b]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx2 as httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' pool, front and Claude Code launchers
sys.path.insert(0, str(ROOT / "benchmarks"))

from _aerix_recording import floor_rows  # noqa: E402
from _claude_ramble import RAMBLE_SETUPS, ramble  # noqa: E402
from _claude_recording import agent_of, load_recording, record, replayed_bodies  # noqa: E402
from _claude_servers import WINDOW, caldrix_front, llama_server  # noqa: E402
from _llama_server import LlamaServer  # noqa: E402
from bench_vs_servers import last_prompt_eval  # noqa: E402

from tests.caldrix.front_harness import (  # noqa: E402
    scripted_front,
)
from tests.default_model import default_model_path  # noqa: E402

#: SmolLM2's ChatML with the tools written as caldrix's front writes them: llama-server's own
#: SmolLM2 template drops them, and its prompts are then a third of caldrix's.
TOOLS_TEMPLATE: Final = ROOT / "benchmarks" / "templates" / "chatml_tools.jinja"
#: llama-server caps a slot at the model's training context (8,192 rows for SmolLM2) whatever
#: ``--ctx-size`` says; Claude Code's prompt with its tools needs more, and a replay that only
#: prefills does not care what the model was trained on.
SMOLLM2_WINDOW_OVERRIDE: Final = ("--override-kv", f"llama.context_length=int:{WINDOW}")
HTTP_SECS: Final = 1800.0


# -- replay ---------------------------------------------------------------------------------


@dataclass
class Reply:
    """One request's figures on one setup."""

    prompted: int
    prefilled: int
    ttft_s: float
    pings_before_first: int = 0
    longest_silence_s: float = 0.0


@dataclass
class Run:
    name: str
    replies: list[Reply] = field(default_factory=list)
    wall_s: float = 0.0
    floor: int = 0
    """The floor of this setup's own prompts (each distinct token once)."""
    cut: str = ""
    """Why the run stopped before its last request (a server that went away), else empty."""

    @property
    def prefilled(self) -> int:
        return sum(r.prefilled for r in self.replies)

    @property
    def prompted(self) -> int:
        return sum(r.prompted for r in self.replies)

    @property
    def ttft_s(self) -> float:
        return sum(r.ttft_s for r in self.replies)


#: The setups, by the key ``--setups`` names them with, in the order they run.
SETUPS: Final = {
    "a": "(a) caldrix front, prefix store",
    "ab": "(ab) caldrix front, prefix store, --tool-text brief",
    "af": "(af) caldrix front, prefix store, --flash-attention",
    "abf": "(abf) caldrix front, prefix store, --tool-text brief, --flash-attention",
    "b": "(b) llama-server, defaults (RAM cache)",
    "b0": "(b0) llama-server, --cache-ram 0",
    "bt": "(bt) llama-server, a template that keeps the tools",
    "c": "(c) caldrix front, --context-budget 0",
    "cs": "(c) rows only: scripted member, --context-budget 0",
}


def replay(threads: int, keys: Sequence[str], answer_tokens: int = 1) -> None:
    """Each setup in turn; its table row is printed (to stderr) as soon as it is done, so a
    run cut short on a busy machine still says what it measured. With ``answer_tokens`` over
    one, each answer is decoded that far too (the wall column then holds its decoding)."""
    recording = load_recording()
    bodies = replayed_bodies(recording, answer_tokens)
    headers = [_replayed_headers(r) for r in recording["requests"]]
    agents = [agent_of(r) for r in recording["requests"]]
    floor = floor_rows(caldrix_prompts(bodies), [None] * len(bodies))
    brief = {"ab", "abf"}
    brief_floor = 0
    if brief & set(keys):
        brief_floor = floor_rows(caldrix_prompts(bodies, brief=True), [None] * len(bodies))
    work = Path(tempfile.mkdtemp(prefix="bench-claude-replay-"))
    runs = []
    for key in keys:
        folder = work / key
        folder.mkdir()
        with _setup(key, folder, threads) as (url, server):
            runs.append(replay_on(SETUPS[key], url, server, bodies, headers))
        runs[-1].floor = brief_floor if key in brief else floor
        print(
            f"load {os.getloadavg()[0]:.1f}: " + report(recording, agents, runs[-1:], threads, answer_tokens),
            file=sys.stderr,
        )
    print(f"servers' logs: {work}", file=sys.stderr)  # kept: they say why a setup was cut
    print(report(recording, agents, runs, threads, answer_tokens))


def _setup(
    key: str, folder: Path, threads: int
) -> contextlib.AbstractContextManager[tuple[str, LlamaServer | None]]:
    if key == "a":
        return caldrix_front(folder, threads)
    if key == "ab":
        return caldrix_front(folder, threads, front_flags=("--tool-text", "brief"))
    if key == "af":
        return caldrix_front(folder, threads, "--flash-attention")
    if key == "abf":
        return caldrix_front(folder, threads, "--flash-attention", front_flags=("--tool-text", "brief"))
    if key == "b":
        return llama_server(folder, threads)
    if key == "b0":
        return llama_server(folder, threads, "--cache-ram", "0")
    if key == "bt":
        return llama_server(
            folder, threads, "--chat-template-file", str(TOOLS_TEMPLATE), *SMOLLM2_WINDOW_OVERRIDE
        )
    if key == "c":
        return caldrix_front(folder, threads, "--context-budget", "0")
    return _scripted_front(folder)


@contextlib.contextmanager
def _scripted_front(folder: Path) -> Iterator[tuple[str, LlamaServer | None]]:
    """(c)'s rows in a minute rather than an hour: the scripted member computes no rows but
    renders, counts and resumes from its live rows as (c) does; its times mean nothing."""
    with scripted_front(folder, [], pool_args=("--context-budget", "0")) as (_, front):
        yield front.url, None


def replay_on(
    name: str,
    url: str,
    server: LlamaServer | None,
    bodies: Sequence[dict[str, Any]],
    headers: Sequence[dict[str, str]],
) -> Run:
    run = Run(name)
    started = time.perf_counter()
    for body, sent_headers in zip(bodies, headers, strict=True):
        seen = len(server.log()) if server is not None else 0
        # A connection per request: llama-server closes a kept-alive connection after a long
        # streamed answer, and a request sent on it before the close arrives gets no answer at
        # all ("Server disconnected without sending a response"). Claude Code's client retries
        # such a request; the replay must not count a retry, so it never reuses a connection.
        try:
            with httpx.Client(base_url=url, timeout=HTTP_SECS) as client:
                reply = send(client, body, sent_headers)
        except (httpx.TransportError, RuntimeError) as error:  # the server has gone, or refused
            run.cut = f"cut after {len(run.replies)} request(s): {error}"
            break
        if server is not None:  # llama-server's usage counts differ by version: its log says
            reply.prefilled = last_prompt_eval(server, seen)
        run.replies.append(reply)
    run.wall_s = time.perf_counter() - started
    return run


def send(client: httpx.Client, body: dict[str, Any], headers: dict[str, str]) -> Reply:
    """One streamed ``/v1/messages``; its usage, time to first token and the pings before it."""
    sent = time.perf_counter()
    last_event = sent
    first: float | None = None
    pings = 0
    silence = 0.0
    usage: dict[str, int] = {}
    with client.stream("POST", "/v1/messages?beta=true", json=body, headers=headers) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{response.status_code}: {response.read().decode(errors='replace')[:500]}")
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            now = time.perf_counter()
            if first is None:
                silence = max(silence, now - last_event)
            last_event = now
            event = json.loads(line[5:])
            kind = event.get("type")
            if kind == "ping" and first is None:
                pings += 1
            if kind == "message_start":
                usage.update(event["message"].get("usage") or {})
            if kind == "message_delta":
                usage.update(event.get("usage") or {})
            if first is None and kind in ("content_block_delta", "message_delta"):
                first = now
    prompted = usage.get("input_tokens", 0) + usage.get("cache_read_input_tokens", 0)
    return Reply(
        prompted=prompted,
        prefilled=usage.get("input_tokens", 0),
        ttft_s=(first or time.perf_counter()) - sent,
        pings_before_first=pings,
        longest_silence_s=silence,
    )


def _replayed_headers(request: dict[str, Any]) -> dict[str, str]:
    kept = {k: v for k, v in request["headers"].items() if k.lower() != "content-type"}
    return {**kept, "x-api-key": "x"}


def caldrix_prompts(bodies: Sequence[dict[str, Any]], *, brief: bool = False) -> list[list[int]]:
    """Each body's prompt as caldrix's front renders it (``brief``: with ``--tool-text brief``):
    the request read as the front reads it, its segments, the model's template and tokens."""
    from caldrix.engine_seam import ServingFlags
    from caldrix.engines.llamacpp import open_llamacpp
    from caldrix.front.anthropic_in import messages_request
    from caldrix.front.prompt import prompt_segments
    from caldrix.generation.templates import render_context

    engine = open_llamacpp(default_model_path(), ServingFlags(ctx=WINDOW, threads=1))
    try:
        prompts = []
        for body in bodies:
            segments = [s.model_dump() for s in prompt_segments(messages_request(body), brief_tools=brief)]
            prompts.append(render_context(engine, segments).prompt_tokens)
        return prompts
    finally:
        engine.close()


def ratio(part: float, whole: float) -> str:
    return f"{part / whole:.2f}×" if whole else "—"


def _request_cell(reply: Reply) -> str:
    return f"{reply.prefilled:,}/{reply.prompted:,}, {reply.ttft_s:.1f} s"


def report(
    recording: dict[str, Any], agents: list[str], runs: list[Run], threads: int, answer_tokens: int = 1
) -> str:
    """The per-request table and the summary table, in Markdown."""
    lines = [
        f"{len(agents)} requests of Claude Code {recording['claude_code']} ({' → '.join(agents)}), "
        f"each replayed with max_tokens {answer_tokens}; SmolLM2-135M Q4_1, window {WINDOW}, "
        f"{threads} thread(s), "
        f"load {os.getloadavg()[0]:.1f}",
        "",
        "| # | agent | " + " | ".join(f"{_key(r.name)} prefilled/prompted, TTFT" for r in runs) + " |",
        "|---|---|" + "---|" * len(runs),
    ]
    for number, agent in enumerate(agents):
        cells = [_request_cell(r.replies[number]) if number < len(r.replies) else "—" for r in runs]
        lines.append(f"| {number + 1} | {agent} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Floor (each distinct token of caldrix's prompts once): "
        + ", ".join(
            dict.fromkeys(f"{run.floor:,} rows" + (" (brief)" if "brief" in run.name else "") for run in runs)
        )
        + ".",
        "",
        "| setup | rows prompted | rows prefilled | × floor | sum of TTFT s | wall s "
        "| pings before first token | longest silence s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        pings = sum(r.pings_before_first for r in run.replies)
        silence = max((r.longest_silence_s for r in run.replies), default=0.0)
        name = f"{run.name} ({run.cut})" if run.cut else run.name
        lines.append(
            f"| {name} | {run.prompted:,} | {run.prefilled:,} | {ratio(run.prefilled, run.floor)} | "
            f"{run.ttft_s:.1f} | {run.wall_s:.1f} | {pings} | {silence:.1f} |"
        )
    best = runs[0]
    lines += ["", f"{_key(best.name)} against each: rows prefilled, sum of TTFT, wall", ""]
    for run in runs[1:]:
        lines.append(
            f"- {run.name}: {ratio(best.prefilled, run.prefilled)} rows, "
            f"{ratio(best.ttft_s, run.ttft_s)} TTFT, {ratio(best.wall_s, run.wall_s)} wall"
        )
    return "\n".join(lines)


def _key(name: str) -> str:
    """A setup's key as its name starts: ``(abf)``."""
    return name.split(" ", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", nargs="?", choices=["record", "replay", "ramble"], default="replay")
    parser.add_argument("--threads", type=int, default=1, help="threads for every setup (default 1)")
    parser.add_argument(
        "--setups",
        help="which setups, in this order: replay's of a,ab,af,abf,b,b0,bt,c,cs (default a,b,b0,bt,c), "
        "ramble's of a,ab,abf,b (default a,ab,b)",
    )
    parser.add_argument("--cap", type=float, default=600.0, help="ramble: seconds before a run is cut (600)")
    parser.add_argument(
        "--answer-tokens",
        type=int,
        default=1,
        help="replay: max_tokens of every request (default 1: the prefill alone; more decodes answers too)",
    )
    args = parser.parse_args()
    if args.action == "record":
        record()
    elif args.action == "replay":
        replay(args.threads, _setups(args.setups or "a,b,b0,bt,c", SETUPS), args.answer_tokens)
    else:
        ramble(args.cap, args.threads, _setups(args.setups or "a,ab,b", RAMBLE_SETUPS))


def _setups(text: str, known: dict[str, str]) -> list[str]:
    keys = [k for k in text.split(",") if k]
    if not keys or any(k not in known for k in keys):
        raise SystemExit(f"bench_claude_front: --setups takes some of {','.join(known)}, not {text!r}")
    return keys


if __name__ == "__main__":
    main()

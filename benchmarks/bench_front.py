"""The HTTP front's cost: a request through ``caldrix serve`` against the same work done by a
protocol client, side by side in one run.

The pool's member is the scripted engine on the embedded model's vocabulary (rendering,
counting, constraints and decoding are real; no rows are computed), so what is measured is
everything around a generation: for each request the protocol client does what the front does
for it (connect, ``member.list``, ``context.create``, ``generate``, ``context.drop``), and the
HTTP client sends the Anthropic request that makes the front do exactly that. Rounds alternate
the two; the medians and their ratio are printed, for a short prompt and for one of Claude
Code's size, for a reply and for ``count_tokens``.

    .venv/bin/python benchmarks/bench_front.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2

from caldrix.protocol import ClientBounds, TokenFrame, connect

BOUNDS = ClientBounds(30.0, 600.0, 900.0)
ANSWER = "Hello there, friend."
REPLY_TOKENS = 16


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(folder: Path, rounds: int) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes], Path, str]:
    script = folder / "script.json"
    script.write_text(json.dumps([ANSWER] * (rounds * 8)))
    sock = folder / "pool.sock"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "stdin": subprocess.DEVNULL}
    pool = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "caldrix",
            "pool",
            "--socket",
            str(sock),
            "--load",
            "smollm2-135m",
            "--engine",
            "scripted",
            "--script",
            str(script),
            "--ctx",
            "32768",
            "--idle-timeout",
            "0",
        ],
        **quiet,  # type: ignore[arg-type]
    )
    while not sock.exists():
        time.sleep(0.1)
    port = free_port()
    front = subprocess.Popen(
        [sys.executable, "-m", "caldrix", "serve", "--socket", str(sock), "--port", str(port)],
        **quiet,  # type: ignore[arg-type]
    )
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            httpx2.head(url + "/", timeout=2)
            return pool, front, sock, url
        except httpx2.TransportError:
            time.sleep(0.1)


async def direct_reply(sock: Path, text: str) -> None:
    client = await connect(sock, bounds=BOUNDS)
    try:
        await client.member_list()
        created = await client.context_create("main", [{"id": "t0", "role": "user", "text": text}])
        async with client.generate(created.context, REPLY_TOKENS) as frames:
            async for frame in frames:
                if isinstance(frame, TokenFrame):
                    pass
        await client.context_drop(created.context)
    finally:
        await client.aclose()


async def direct_count(sock: Path, text: str) -> None:
    client = await connect(sock, bounds=BOUNDS)
    try:
        await client.member_list()
        created = await client.context_create("main", [{"id": "t0", "role": "user", "text": text}])
        await client.context_drop(created.context)
    finally:
        await client.aclose()


def timed(work: Callable[[], object]) -> float:
    began = time.perf_counter()
    work()
    return (time.perf_counter() - began) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-front-") as temp:
        pool, front, sock, url = start(Path(temp), args.rounds)
        try:
            run(sock, url, args.rounds)
        finally:
            for process in (front, pool):
                process.terminate()
                process.wait(timeout=60)


def run(sock: Path, url: str, rounds: int) -> None:
    prompts = {
        "short prompt": "Say hello.",
        "Claude Code-sized prompt": "Read the file and fix the test. " * 1700,
    }
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {rounds} rounds; medians in ms")
    print(f"{'case':44} {'protocol':>9} {'HTTP front':>11} {'ratio':>6}")
    with httpx2.Client(base_url=url, timeout=600) as http:
        for name, text in prompts.items():
            messages = [{"role": "user", "content": text}]
            cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
                f"reply ({REPLY_TOKENS} tokens), {name}": (
                    lambda text=text: anyio.run(direct_reply, sock, text),
                    lambda messages=messages: http.post(
                        "/v1/messages", json={"model": "m", "max_tokens": REPLY_TOKENS, "messages": messages}
                    ).raise_for_status(),
                ),
                f"count_tokens, {name}": (
                    lambda text=text: anyio.run(direct_count, sock, text),
                    lambda messages=messages: http.post(
                        "/v1/messages/count_tokens", json={"model": "m", "messages": messages}
                    ).raise_for_status(),
                ),
            }
            for case, (direct, through) in cases.items():
                direct()
                through()  # one of each first: rendering caches, imports, connections
                pairs = [(timed(direct), timed(through)) for _ in range(rounds)]
                a = statistics.median(p[0] for p in pairs)
                b = statistics.median(p[1] for p in pairs)
                print(f"{case:44} {a:9.1f} {b:11.1f} {b / a:5.2f}×")


if __name__ == "__main__":
    main()

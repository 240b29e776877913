"""Prefill of two llama.cpp builds, side by side: this venv's against another one's.

A process can load one libllama, so each build runs in a worker process of its own: this
venv's Python with the other build's folder first on ``sys.path`` (a ``pip install --target``
of llama-cpp-python, built with other CMake options), and this checkout's caldrix. Each worker
opens the model once through caldrix's llama.cpp engine, then each round asks both, one after
the other (the order alternating each round), for a cold prefill of each prompt length:
``run_generation`` from row 0 with one token asked for, the pool's own batches (32 rows, then
``--batch``). A prompt is the first N tokens of this project's source. It prints rows/s of
each build, wall and the worker's CPU seconds, and the medians of the per-round ratios
(this build / the other: above 1, this one is faster).

    .venv/bin/python benchmarks/bench_kernels.py --against /tmp/avx2-lcp --model PATH \\
        [--rows 600,2000] [--rounds 3] [--threads 2]

To make the other build (the one setup made before it chose kernels per CPU flag)::

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF" \\
        .venv/bin/python -m pip install --no-cache-dir --no-deps --target /tmp/avx2-lcp \\
        llama-cpp-python==0.3.36
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _side_by_side import ROOT, project_source, short_head

#: The worker: opens the model with the build found first on sys.path, says which build it is,
#: then answers each line ``{"rows": N}`` with one cold prefill's figures, as JSON lines.
WORKER = """
import json, sys, time
from pathlib import Path
build, root, model, text_file, threads, ctx = sys.argv[1:7]
if build:
    sys.path.insert(0, build)
sys.path.insert(1 if build else 0, root)
import llama_cpp, llama_cpp.llama_cpp as llama_c
from caldrix.engine_seam import GenerationParams, ServingFlags
from caldrix.engines.cpu_kernels import built_features
from caldrix.engines.llamacpp import open_llamacpp
from caldrix.generation.decoding import run_generation

class Quiet:
    def progress(self, done, total): pass
    def token(self, text): pass
    def cancelled(self): return False

engine = open_llamacpp(Path(model), ServingFlags(ctx=int(ctx), threads=int(threads)))
prompt = engine.tokenize(Path(text_file).read_text())
info = llama_c.llama_print_system_info().decode()  # safe once the engine accepted the build
kernels = sorted(built_features(info) - {"LLAMAFILE", "OPENMP", "REPACK"})
print(json.dumps({"library": llama_cpp.__file__, "kernels": kernels}), flush=True)
for line in sys.stdin:
    rows = json.loads(line)["rows"]
    assert len(prompt) >= rows, len(prompt)
    engine.truncate(0)
    cpu = time.process_time()
    result = run_generation(engine, prompt[:rows], GenerationParams(max_new_tokens=1), Quiet())
    cpu = time.process_time() - cpu
    print(json.dumps({"wall": result.prefill_ms / 1000.0, "cpu": cpu}), flush=True)
"""


class Worker:
    """One build's worker process."""

    def __init__(self, name: str, build: str, model: Path, text_file: Path, threads: int, ctx: int) -> None:
        self.name = name
        args = [str(a) for a in (build, ROOT, model, text_file, threads, ctx)]
        self._process = subprocess.Popen(
            [sys.executable, "-c", WORKER, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.identity = self._read()

    def prefill(self, rows: int) -> dict[str, float]:
        stdin: IO[str] | None = self._process.stdin
        assert stdin is not None
        stdin.write(json.dumps({"rows": rows}) + "\n")
        stdin.flush()
        figures: dict[str, float] = self._read()
        return figures

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)

    def _read(self) -> Any:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.name} worker ended (exit {self._process.wait()})")
        return json.loads(line)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--against", required=True, help="a folder holding the other llama_cpp (pip --target)"
    )
    parser.add_argument("--model", type=Path, required=True, help="a GGUF file")
    parser.add_argument("--rows", default="600,2000", help="prompt lengths, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    lengths = [int(n) for n in args.rows.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-kernels-") as work:
        text_file = Path(work) / "prompt.txt"
        text_file.write_text(project_source(copies=1))
        ctx = max(lengths) + 64
        workers = [
            Worker("this", "", args.model, text_file, args.threads, ctx),
            Worker("other", args.against, args.model, text_file, args.threads, ctx),
        ]
        try:
            print(f"model {args.model.name}, {args.threads} threads, tree {short_head()}; load {load()}")
            for worker in workers:
                print(
                    f"  {worker.name}: {worker.identity['library']}: {' '.join(worker.identity['kernels'])}"
                )
            runs: dict[tuple[str, int], list[dict[str, float]]] = {}
            for number in range(args.rounds):
                for rows in lengths:
                    for worker in workers if number % 2 == 0 else workers[::-1]:
                        figures = worker.prefill(rows)
                        runs.setdefault((worker.name, rows), []).append(figures)
                        rate = rows / figures["wall"]
                        print(
                            f"  round {number + 1}, {rows} rows, {worker.name}: {rate:.1f} rows/s, "
                            f"{figures['wall']:.2f} s wall, {figures['cpu']:.2f} s CPU; load {load()}"
                        )
        finally:
            for worker in workers:
                worker.close()
    print(f"\nmedians of {args.rounds} rounds (ratio: this build / the other, per round, then the median):")
    for rows in lengths:
        this, other = runs[("this", rows)], runs[("other", rows)]
        this_rate = statistics.median(rows / r["wall"] for r in this)
        other_rate = statistics.median(rows / r["wall"] for r in other)
        wall_ratio = statistics.median(o["wall"] / t["wall"] for t, o in zip(this, other, strict=True))
        cpu_ratio = statistics.median(o["cpu"] / t["cpu"] for t, o in zip(this, other, strict=True))
        print(
            f"  {rows} rows: this {this_rate:.1f} rows/s, other {other_rate:.1f} rows/s; "
            f"speed ratio {wall_ratio:.2f} by wall, {cpu_ratio:.2f} by CPU"
        )
    print(f"load {load()}")


if __name__ == "__main__":
    main()

"""What ``--flash-attention`` changes on the CPU: prefill rows/s and decode tokens/s, side by side.

Each round opens the embedded model (or ``--model``) twice through caldrix's own llama.cpp
engine, once without and once with flash attention (the order alternating each round), and on
each prefills the same ``--rows`` tokens of this project's source from row 0 in the pool's
batches (``evaluate_in_batches``: the served ``--batch`` 256, none under the engine's
``min_fill_rows``), then decodes ``--decode`` greedy tokens one at a time after them, as a
generation does. It prints each side's median rates and the ratios (with / without).

    .venv/bin/python benchmarks/bench_flash_attention.py [--rows 4000] [--decode 64] [--rounds 2]
                                                         [--threads 2] [--batch 256] [--model PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _side_by_side import project_source

from caldrix.engine_seam import ServingFlags
from caldrix.engines.llamacpp import open_llamacpp
from caldrix.limits import DEFAULT_BATCH
from caldrix.store.prefix_store import evaluate_in_batches
from tests.default_model import default_model_path


def one_side(
    model: Path, tokens_text: str, rows: int, decode: int, threads: int, flash: bool, batch: int
) -> tuple[float, float]:
    """Prefill rows/s and decode tokens/s of one fresh engine."""
    flags = ServingFlags(ctx=rows + decode + 16, threads=threads, flash_attention=flash, batch=batch)
    engine = open_llamacpp(model, flags)
    try:
        prompt = engine.tokenize(tokens_text)[:rows]
        if len(prompt) < rows:
            raise SystemExit(f"bench_flash_attention: the source text has only {len(prompt)} rows")
        started = time.perf_counter()
        evaluate_in_batches(engine, prompt)
        prefill = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(decode):
            engine.evaluate([int(np.argmax(engine.logits()))])
        decoding = time.perf_counter() - started
        return rows / prefill, decode / decoding
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--batch", type=int, default=DEFAULT_BATCH, help="rows per batch (default %(default)s)"
    )
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the embedded model)")
    args = parser.parse_args()
    model = args.model or default_model_path()
    text = project_source(copies=1)
    rates: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for number in range(args.rounds):
        for flash in (False, True) if number % 2 == 0 else (True, False):
            side = one_side(model, text, args.rows, args.decode, args.threads, flash, args.batch)
            rates[flash].append(side)
    shape = (
        f"{args.rows} rows in {args.batch}-row batches then {args.decode} tokens, {args.threads} thread(s)"
    )
    print(f"{model.name}, {shape}, medians of {args.rounds}:")
    medians = {}
    for flash, runs in rates.items():
        medians[flash] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        label = "with flash attention" if flash else "without"
        print(
            f"  {label:22} prefill {medians[flash][0]:6.0f} rows/s   decode {medians[flash][1]:5.1f} tokens/s"
        )
    print(
        f"  with / without:        prefill {medians[True][0] / medians[False][0]:.2f}×       "
        f"decode {medians[True][1] / medians[False][1]:.2f}×"
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

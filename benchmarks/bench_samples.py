"""How far sampling reaches: several answers to each Exercism exercise from the model alone, each
judged by the exercise's hidden tests: the first greedy, the rest sampled at a temperature.

No agent and no second try: one request per answer, the exercise's instructions worded as Aider's
benchmark words them, the stub shown, and the whole new file asked for in a fenced block. What it
measures is the model, not an agent: how many exercises its greedy answer solves (an agent's
first write, nearly), and how many any of its answers solves (what an agent that drew several
answers and knew which one is right could reach at best). The pool is caldrix's, one for the
run, so each exercise's prompt is prefilled once for all its answers.

Each answer is one JSON line in the results file (its code included, to read why it failed),
written when its tests have run; a rerun skips the answers the file holds. At the end a table
per exercise and a summary are printed (Markdown, on stdout); progress goes to stderr.

    .venv/bin/python benchmarks/bench_samples.py [--list FILE] [--only NAME,NAME] [--samples 5]
        [--temperature 0.7] [--model qwen2.5-coder-1.5b] [--threads N] [--results FILE]
    .venv/bin/python benchmarks/bench_samples.py --engine scripted --script FILE --model smollm2-135m …
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' pool launcher
sys.path.insert(0, str(ROOT / "benchmarks"))

from _side_by_side import short_head  # noqa: E402
from _tasks_aider import bench_cache  # noqa: E402
from _tasks_exercises import Exercise, exercise_names, run_tests  # noqa: E402
from _tasks_pool import metered_pool  # noqa: E402
from bench_tasks import add_run_arguments, check_exercises, pool_spec, read_results  # noqa: E402

from caldrix.protocol.client import ClientBounds, connect  # noqa: E402

SAMPLES: Final = 5
TEMPERATURE: Final = 0.7
#: Room for a whole file twice the size of the longest example solution of QUICK.txt
#: (go-counting's, 2,482 bytes: about 700 tokens), and a few lines around it.
MAX_NEW_TOKENS: Final = 1500
SYSTEM: Final = (
    "You are an expert Python developer. You are given a task and the files it names. Answer with "
    "the whole new content of each file you change: its file name on a line, then the content in a "
    "```python fenced block. Write complete code, with nothing left out."
)
#: How long one answer's tests may run: the exercises' own solutions pass in a second; a sampled
#: answer that loops would hold the run for bench_tasks' three minutes each.
TEST_TIMEOUT_SECS: Final = 60.0
#: How long the client waits: a handshake, and one answer (its whole decode, on a CPU).
BOUNDS: Final = ClientBounds(30.0, 900.0, 900.0)
_FENCED: Final = re.compile(r"```[\w+-]*\n(.*?)```", re.S)


def say(text: str) -> None:
    print(f"bench_samples: {text}", file=sys.stderr, flush=True)


def prompt(exercise: Exercise) -> str:
    files = "\n\n".join(
        f"{name}\n```python\n{(exercise.folder / name).read_text()}```" for name in exercise.solution
    )
    return f"{exercise.first_prompt()}\n\n{files}"


def answer_code(text: str) -> str | None:
    """The file an answer holds: its longest fenced block (an answer may add a usage example in a
    block of its own), or None when it has none."""
    blocks = _FENCED.findall(text)
    return max(blocks, key=len) if blocks else None


async def answers(
    socket: Path, exercise: Exercise, seeds: Sequence[int], temperature: float
) -> list[dict[str, Any]]:
    """One answer per seed, the one with seed 0 greedy, each a probe of the same context."""
    client = await connect(socket, bounds=BOUNDS)
    async with client:
        segments: list[dict[str, Any]] = [
            {"id": "system", "role": "system", "text": SYSTEM, "pinned": True},
            {"id": "task", "role": "user", "text": prompt(exercise)},
        ]
        created = await client.context_create("main", segments)
        got = []
        for seed in seeds:
            heat = 0.0 if seed == 0 else temperature
            started = time.monotonic()
            done = await client.generate(
                created.context, MAX_NEW_TOKENS, temperature=heat, seed=seed
            ).result()
            got.append(
                {
                    "seed": seed,
                    "temperature": heat,
                    "text": done.text,
                    "finish": done.finish,
                    "tokens": done.completion_tokens,
                    "seconds": round(time.monotonic() - started, 1),
                }
            )
        await client.context_drop(created.context)
    return got


def judged(exercise: Exercise, answer: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """The answer's file written over the stub in a fresh folder, and the hidden tests run on it."""
    project = scratch / f"{exercise.name}-{answer['seed']}"
    project.mkdir(parents=True)
    exercise.copy_stubs(project)
    code = answer_code(answer["text"])
    if code is not None:
        (project / exercise.solution[0]).write_text(code)
    folder = scratch / f"{exercise.name}-{answer['seed']}-tests"
    tests = run_tests(exercise, project, folder, timeout=TEST_TIMEOUT_SECS)
    why = tests.summary if code is not None else f"no fenced block in the answer (finish {answer['finish']})"
    fields = {k: answer[k] for k in ("seed", "temperature", "tokens", "seconds")}
    verdict = {"passed": tests.passed, "why": "" if tests.passed else why}
    return {"exercise": exercise.name, **fields, **verdict, "code": code}


def table(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    lines = ["| exercise | greedy | sampled passing | any of the answers |", "|---|---|---|---|"]
    for name in names:
        mine = [row for row in rows if row["exercise"] == name]
        greedy = [row["passed"] for row in mine if row["seed"] == 0]
        sampled = [row["passed"] for row in mine if row["seed"] != 0]
        greedy_cell = ("**pass**" if greedy[0] else "fail") if greedy else "—"
        any_cell = "**yes**" if any(row["passed"] for row in mine) else ("no" if mine else "—")
        lines.append(f"| {name} | {greedy_cell} | {sum(sampled)} of {len(sampled)} | {any_cell} |")
    return "\n".join(lines)


def summary(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    tried = [name for name in names if any(row["exercise"] == name for row in rows)]
    greedy = sum(1 for row in rows if row["seed"] == 0 and row["passed"])
    solved = sum(1 for name in tried if any(row["passed"] for row in rows if row["exercise"] == name))
    answers_run = len(rows)
    passing = sum(1 for row in rows if row["passed"])
    tokens = sum(int(row["tokens"]) for row in rows)
    return (
        f"{len(tried)} exercises, {answers_run} answers ({tokens:,} tokens decoded): greedy solves {greedy}, "
        f"some answer solves {solved}; {passing} of {answers_run} answers pass"
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    pool = pool_spec(args, "bench_samples")
    exercises = args.exercises.resolve()
    names = args.only.split(",") if args.only else exercise_names(args.list or exercises / "QUICK.txt")
    check_exercises(exercises, names, "bench_samples")
    if args.samples < 1:
        raise SystemExit("bench_samples: --samples takes a count of 1 or more")
    model = pool.model
    results = args.results or bench_cache() / "samples" / f"{Path(model).stem}.jsonl"
    results.parent.mkdir(parents=True, exist_ok=True)
    done = read_results(results, model, "bench_samples")
    extra = {"model": model, "threads": args.threads, "commit": short_head()}
    with tempfile.TemporaryDirectory(prefix="bench-samples-") as scratch_dir:
        scratch = Path(scratch_dir)
        with metered_pool(scratch / "pool", pool) as meter:
            for number, name in enumerate(names, start=1):
                have = {row["seed"] for row in done if row["exercise"] == name}
                seeds = [seed for seed in range(args.samples) if seed not in have]
                if not seeds:
                    continue
                say(f"[{number}/{len(names)}] {name}: {len(seeds)} answers")
                exercise = Exercise.load(exercises / "exercises" / name)
                got = anyio.run(answers, meter.path, exercise, seeds, args.temperature)
                for answer in got:
                    row = {**judged(exercise, answer, scratch), **extra}
                    row["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
                    with results.open("a") as out:
                        out.write(json.dumps(row) + "\n")
                    done.append(row)
                    say(f"  seed {row['seed']}: {'pass' if row['passed'] else row['why']}")
    chosen = [row for row in done if row["exercise"] in names and row["seed"] < args.samples]
    print(
        f"{model}, threads {args.threads or 'default'}, temperature {args.temperature}; "
        f"results in {results}\n"
    )
    print(table(chosen, names))
    print()
    print(summary(chosen, names))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_run_arguments(parser)
    parser.add_argument("--only", help="these exercises instead of a list, comma-separated")
    parser.add_argument(
        "--samples",
        type=int,
        default=SAMPLES,
        help=f"answers per exercise, the first greedy (default {SAMPLES})",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=TEMPERATURE,
        help=f"the others' temperature (default {TEMPERATURE})",
    )
    parser.add_argument("--results", type=Path, help="the results file (default: in the benchmark cache)")
    return parser


if __name__ == "__main__":
    main()

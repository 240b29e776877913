"""Coding tasks: aerix, Aider and Claude Code side by side on Exercism exercises, with Aider's
two-try protocol, on the same model file, threads and machine.

For each exercise of the list and each agent: a fresh git repository holding the exercise's
stub (the tests are not there), a fresh pool on the model (the same flags for every agent, so no
agent finds another's prefixes), and the agent asked to implement the stub from the exercise's
instructions, worded as Aider's benchmark words them. The tests then run on a copy of what it
wrote (``python -m pytest -q``); when they fail, their output goes into one more request in the
same session (aerix ``--resume``, Aider's same chat, Claude Code ``--resume``), and they run
again. A try that runs out of time ends the exercise.

Each exercise × agent is one JSON line in the results file, written as soon as it is done: passed
after try 1 and after try 2, the agent's wall time, the rows the pool prefilled and the tokens it
decoded for that run (the pool's own ``done`` figures, read on the socket: ``_tasks_pool.py``),
and, when it did not pass, why. A rerun skips what the file already holds. At the end a table
per exercise × agent and a summary per agent are printed (Markdown, on stdout); progress goes to
stderr.

    .venv/bin/python benchmarks/bench_tasks.py [--agents aerix,aider,claude] [--list FILE]
        [--model qwen2.5-coder-1.5b] [--threads N] [--timeout 600] [--results FILE]
    .venv/bin/python benchmarks/bench_tasks.py --engine scripted --script FILE --model smollm2-135m …
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' pool and front launchers
sys.path.insert(0, str(ROOT / "benchmarks"))

from _side_by_side import short_head  # noqa: E402
from _tasks_agents import AGENTS, Agent, AgentRun, open_agent  # noqa: E402
from _tasks_aider import aider_python, bench_cache  # noqa: E402
from _tasks_exercises import Exercise, exercise_names, run_tests  # noqa: E402
from _tasks_pool import PoolSpec, metered_pool  # noqa: E402

DEFAULT_EXERCISES: Final = ROOT.parent / "shared" / "tasks" / "exercism"
#: Where a model named without a path is looked for first (``NAME.gguf``).
MODELS_DIR: Final = ROOT.parent / "models"
DEFAULT_MODEL: Final = "qwen2.5-coder-1.5b"
#: Every run's pool flags: what ``caldrix launch claude`` starts a pool with (a window that
#: holds Claude Code's prompt, flash attention), for every agent alike.
DEFAULT_POOL_FLAGS: Final = "--ctx 32768 --flash-attention"
TRY_TIMEOUT_SECS: Final = 600.0
#: How often a running try says it is still running.
HEARTBEAT_SECS: Final = 60.0
#: The one line a Ctrl-C ends the run with (exit status 130).
STOPPED: Final = "bench_tasks: stopped; the rows done are in the results file, and a rerun runs the rest"


def say(text: str) -> None:
    print(f"bench_tasks: {text}", file=sys.stderr, flush=True)


def model_reference(text: str) -> str:
    """A path to a file as it is (absolute), ``NAME`` as ``../models/NAME.gguf`` when that
    exists, anything else as caldrix reads references (``smollm2-135m``, ``hf:…``)."""
    if Path(text).expanduser().is_file():
        return str(Path(text).expanduser().resolve())
    if (MODELS_DIR / f"{text}.gguf").is_file():
        return str(MODELS_DIR / f"{text}.gguf")
    return text


@dataclass(frozen=True)
class Settings:
    exercises: Path
    agents: tuple[str, ...]
    pool: PoolSpec
    timeout: float
    keep: bool
    aerix_settings: Mapping[str, Any] = field(default_factory=dict)
    """More of aerix's settings (``--aerix-settings``), a layer over the run's own."""


def run_exercise(exercise: Exercise, agent: str, settings: Settings, scratch: Path) -> dict[str, Any]:
    """One agent on one exercise, both tries, on a pool of its own: its results row."""
    folder = scratch / f"{exercise.name}-{agent}"
    project = _project(folder / "project", exercise)
    with metered_pool(folder / "pool", settings.pool) as meter:
        run = AgentRun(
            folder,
            project,
            meter.path,
            settings.pool.model,
            exercise.solution,
            settings.timeout,
            settings.aerix_settings,
        )
        with open_agent(agent, run, say) as opened:
            tries = _both_tries(exercise, agent, opened, folder, settings.timeout)
    figures = meter.figures.as_row()
    last = tries[-1]
    passed = [t["passed"] for t in tries]
    return {
        "exercise": exercise.name,
        "agent": agent,
        "pass1": passed[0],
        "pass2": any(passed),
        "wall_s": round(sum(t["seconds"] for t in tries), 3),
        "rows": figures["rows"],
        "tokens": figures["tokens"],
        "why": "" if last["passed"] else f"{last['end']}; tests: {last['tests']}",
        "tries": tries,
        "pool": figures,
        "model": settings.pool.model,
        "threads": settings.pool.threads,
        "pool_flags": list(settings.pool.flags),
        "aerix_settings": dict(settings.aerix_settings) if agent == "aerix" else {},
        "commit": short_head(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _both_tries(
    exercise: Exercise, agent: str, opened: Agent, folder: Path, timeout: float
) -> list[dict[str, Any]]:
    """Try 1, its tests, and when they failed (and it did not time out) try 2 with their
    output, and its tests: each try's figures."""
    tries: list[dict[str, Any]] = []
    prompt = exercise.first_prompt()
    for number in (1, 2):
        label = f"{exercise.name} · {agent} · try {number}"
        say(f"{label}: asking")
        turn = opened.ask(prompt, timeout, _heartbeat(label))
        tests = run_tests(exercise, folder / "project", folder / f"tests-{number}")
        verdict = "passed" if tests.passed else "failed"
        say(f"{label}: {turn.end} in {turn.seconds:.1f} s; tests {verdict} ({tests.summary})")
        tries.append(
            {
                "seconds": round(turn.seconds, 3),
                "end": turn.end,
                "passed": tests.passed,
                "tests": tests.summary,
                "timed_out": turn.timed_out,
                "session": turn.session,
            }
        )
        if tests.passed or turn.timed_out:
            break
        prompt = exercise.retry_prompt(tests.output)
    return tries


def _project(path: Path, exercise: Exercise) -> Path:
    """A fresh git repository holding the exercise's stubs, committed."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    exercise.copy_stubs(path)
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for args in (["init", "-q"], ["add", "."], [*identity, "commit", "-qm", "the exercise's stub"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)
    return path


def _heartbeat(label: str) -> Callable[[], None]:
    started = time.monotonic()
    next_at = [HEARTBEAT_SECS]

    def tick() -> None:
        elapsed = time.monotonic() - started
        if elapsed >= next_at[0]:
            say(f"{label}: {elapsed:.0f} s")
            next_at[0] += HEARTBEAT_SECS

    return tick


def read_results(path: Path, model: str, program: str = "bench_tasks") -> list[dict[str, Any]]:
    """The rows a results file holds (none when it does not exist); refuses a file of another
    model, so one file's figures are always one model's."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    others = sorted({str(row.get("model")) for row in rows} - {model})
    if others:
        raise SystemExit(
            f"{program}: {path} holds runs on {', '.join(others)}, not {model}; give another --results"
        )
    return rows


def _cell(passed: bool | None) -> str:
    return "—" if passed is None else ("pass" if passed else "fail")


def table(rows: Sequence[dict[str, Any]], names: Sequence[str], agents: Sequence[str]) -> str:
    """Per exercise × agent, in the list's order: passed after each try, wall time, the pool's
    figures, and why it did not pass."""
    found = {(row["exercise"], row["agent"]): row for row in rows}
    lines = [
        "| exercise | agent | try 1 | try 2 | wall s | rows prefilled | tokens decoded | why not passed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        for agent in agents:
            row = found.get((name, agent))
            if row is None:
                continue
            second = row["pass2"] if len(row["tries"]) > 1 or row["pass1"] else None
            why = str(row["why"]).replace("|", "/")
            lines.append(
                f"| {name} | {agent} | {_cell(row['pass1'])} | {_cell(second)} | {row['wall_s']:.1f} | "
                f"{row['rows']:,} | {row['tokens']:,} | {why} |"
            )
    return "\n".join(lines)


def summary(rows: Sequence[dict[str, Any]], agents: Sequence[str]) -> str:
    """Per agent: exercises run, passed after try 1 and after try 2, the median wall time per
    exercise, and the pool's figures summed."""
    lines = [
        "| agent | exercises | passed after try 1 | passed after try 2 | median wall s | rows prefilled "
        "| tokens decoded |",
        "|---|---|---|---|---|---|---|",
    ]
    for agent in agents:
        own = [row for row in rows if row["agent"] == agent]
        if not own:
            continue
        first, second = sum(r["pass1"] for r in own), sum(r["pass2"] for r in own)
        median = statistics.median(r["wall_s"] for r in own)
        lines.append(
            f"| {agent} | {len(own)} | {first} ({100 * first / len(own):.1f} %) | "
            f"{second} ({100 * second / len(own):.1f} %) | {median:.1f} | "
            f"{sum(r['rows'] for r in own):,} | {sum(r['tokens'] for r in own):,} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    settings, names, results = _settings(args)
    done = read_results(results, settings.pool.model)
    have = {(row["exercise"], row["agent"]) for row in done}
    todo = [(name, agent) for name in names for agent in settings.agents if (name, agent) not in have]
    say(
        f"{len(names)} exercises × {len(settings.agents)} agents on {settings.pool.model}: "
        f"{len(have & {(n, a) for n in names for a in settings.agents})} already in {results}, "
        f"{len(todo)} to run"
    )
    if "aider" in {agent for _, agent in todo}:
        aider_python(say)  # installed once, up front, rather than inside the first exercise's timing
    scratch = Path(tempfile.mkdtemp(prefix="bench-tasks-"))
    results.parent.mkdir(parents=True, exist_ok=True)
    try:
        for number, (name, agent) in enumerate(todo, start=1):
            say(f"[{number}/{len(todo)}] {name} · {agent}")
            row = run_exercise(
                Exercise.load(settings.exercises / "exercises" / name), agent, settings, scratch
            )
            with results.open("a") as out:
                out.write(json.dumps(row) + "\n")
            done.append(row)
            if not settings.keep:
                shutil.rmtree(scratch / f"{name}-{agent}", ignore_errors=True)
    finally:
        if settings.keep:
            say(f"kept the runs' folders in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    chosen = [row for row in done if row["exercise"] in names and row["agent"] in settings.agents]
    print(
        f"{settings.pool.model}, threads {settings.pool.threads or 'default'}, pool flags "
        f"{shlex.join(settings.pool.flags)}; results in {results}\n"
    )
    print(table(chosen, names, settings.agents))
    print()
    print(summary(chosen, settings.agents))


def _settings(args: argparse.Namespace) -> tuple[Settings, list[str], Path]:
    agents = tuple(a for a in args.agents.split(",") if a)
    if not agents or any(a not in AGENTS for a in agents):
        raise SystemExit(f"bench_tasks: --agents takes some of {','.join(AGENTS)}, not {args.agents!r}")
    pool = pool_spec(args, "bench_tasks")
    exercises, list_file, names = listed_exercises(args, "bench_tasks")
    model = pool.model
    stem = Path(model).stem if model.endswith(".gguf") else model.replace("/", "_").replace(":", "_")
    results = args.results or bench_cache() / "tasks" / f"{stem}-{list_file.stem}.jsonl"
    try:
        aerix_settings = json.loads(args.aerix_settings)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"bench_tasks: --aerix-settings is not JSON ({exc})") from None
    if not isinstance(aerix_settings, dict):
        raise SystemExit("bench_tasks: --aerix-settings takes a JSON object of aerix settings")
    return Settings(exercises, agents, pool, args.timeout, args.keep, aerix_settings), names, results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_run_arguments(parser)
    parser.add_argument("--agents", default=",".join(AGENTS), help="some of aerix,aider,claude (default all)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=TRY_TIMEOUT_SECS,
        help=f"seconds one try may take (default {TRY_TIMEOUT_SECS:.0f})",
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="the JSONL results file, read first and appended to "
        "(default ~/.cache/aerix-bench/tasks/MODEL-LIST.jsonl)",
    )
    parser.add_argument(
        "--aerix-settings",
        default="{}",
        help="a JSON object of aerix settings over the run's own, such as "
        '\'{"delegation.planner_routes": ["plan"]}\' (default none)',
    )
    parser.add_argument("--keep", action="store_true", help="keep the runs' folders (logs, projects)")
    return parser


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every benchmark on the exercises takes: where they are, which, and the pool."""
    parser.add_argument(
        "--exercises",
        type=Path,
        default=DEFAULT_EXERCISES,
        help="the tasks folder: exercises/NAME/ and the lists (default ../shared/tasks/exercism)",
    )
    parser.add_argument("--list", type=Path, help="exercise names, one a line (default: QUICK.txt there)")
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"a GGUF path, NAME for ../models/NAME.gguf, or a caldrix reference (default {DEFAULT_MODEL})",
    )
    parser.add_argument("--threads", type=int, help="the pool's engine threads (default: the engine's)")
    parser.add_argument(
        "--pool-flags",
        default=DEFAULT_POOL_FLAGS,
        help=f"more flags of every run's pool, one string (default {DEFAULT_POOL_FLAGS!r})",
    )
    parser.add_argument(
        "--engine",
        choices=["auto", "scripted"],
        default="auto",
        help="scripted: caldrix's scripted member on the model's vocabulary (tests)",
    )
    parser.add_argument("--script", type=Path, help="with --engine scripted: its completions (JSON)")


def pool_spec(args: argparse.Namespace, program: str) -> PoolSpec:
    """The pool ``add_run_arguments``' options describe."""
    if (args.engine == "scripted") != (args.script is not None):
        raise SystemExit(f"{program}: --engine scripted and --script FILE go together")
    script = args.script.resolve() if args.script else None
    return PoolSpec(model_reference(args.model), args.threads, tuple(shlex.split(args.pool_flags)), script)


def listed_exercises(args: argparse.Namespace, program: str) -> tuple[Path, Path, list[str]]:
    """The tasks folder, the list file (``--list``, else its QUICK.txt) and the names it lists,
    each checked to be there (``add_run_arguments``' options)."""
    exercises = args.exercises.resolve()
    list_file = args.list or exercises / "QUICK.txt"
    names = exercise_names(list_file)
    check_exercises(exercises, names, program)
    return exercises, list_file, names


def check_exercises(exercises: Path, names: Sequence[str], program: str) -> None:
    """One line naming the exercises of ``names`` that ``exercises`` does not hold, if any."""
    missing = [n for n in names if not (exercises / "exercises" / n / ".meta" / "config.json").is_file()]
    if missing:
        raise SystemExit(f"{program}: no such exercise in {exercises / 'exercises'}: {', '.join(missing)}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        # The agent in progress and its pool are stopped on the way out; its row is not written.
        print(STOPPED, file=sys.stderr)
        raise SystemExit(130) from None

"""Routing on ``main`` beside routing on a small ``decision`` member: the same requests, one pool.

Every request aerix gets is first routed (``aerix.app.request.routing.route_request``): one
short constrained generation on a throwaway context of ``routing.md`` and the request. Its rows
are the request's, so a long request (an exercise's instructions, a retry prompt carrying test
output) costs a prefill of its own before the root's first turn prefills it again. The spec lets
a ``decision`` member route instead of ``main``; this measures what that buys on one pool with
both loaded (``--load MAIN --decision DECISION``, the same threads and flags):

- the requests: setup's two (the greet.py question, the calc.py fix), then for each exercise of
  ``--list`` its first prompt and its retry prompt as ``bench_tasks.py`` words them, the retry
  carrying the exercise's real test output on its stub;
- for each request and member, ``route_request`` as aerix calls it, timed from the context's
  creation to its drop; the members alternate which goes first;
- per request, on each member: the choice, the seconds and the rows the pool computed (read
  off the meter every benchmark's pool is reached through); then how often the members agree,
  each one's total seconds and rows a second, and the ratio main / decision (above 1.0, the
  decision member routes faster).

    .venv/bin/python benchmarks/bench_routing.py --threads 2     # QUICK.txt of ../shared/tasks/exercism
    .venv/bin/python benchmarks/bench_routing.py --list FILE --model M --decision D
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' pool launcher, setup's main job
sys.path.insert(0, str(ROOT / "benchmarks"))

import anyio  # noqa: E402
from _side_by_side import short_head  # noqa: E402
from _tasks_exercises import Exercise, run_tests  # noqa: E402
from _tasks_pool import PoolMeter, metered_pool  # noqa: E402
from bench_tasks import add_run_arguments, listed_exercises, model_reference, pool_spec  # noqa: E402

from aerix.adapters.clock import utc_now  # noqa: E402
from aerix.adapters.pool.client import CaldrixPool  # noqa: E402
from aerix.adapters.prompts import EmbeddedPrompts  # noqa: E402
from aerix.app.ports.sessions import E  # noqa: E402
from aerix.app.request.routing import route_request  # noqa: E402
from caldrix.protocol.roles import DECISION_MEMBER, MAIN_MEMBER  # noqa: E402
from scripts.main_job import FIX, QUESTION  # noqa: E402

#: The decision member's model unless ``--decision`` names another.
DEFAULT_DECISION = "qwen2.5-coder-0.5b"
MEMBERS = (MAIN_MEMBER, DECISION_MEMBER)


@dataclass(frozen=True)
class Routed:
    """One request routed on one member: the shape, the wall seconds, the rows it computed."""

    choice: str
    seconds: float
    rows: int


class _Unrecorded:
    """Where ``route_request`` records its ``route`` event: validated, then kept nowhere."""

    def record(self, event_cls: type[E], **fields: Any) -> E:
        return event_cls(seq=1, time=utc_now(), **fields)

    def sync(self) -> None:
        return None


def requests(exercises: Path, names: list[str], scratch: Path) -> list[tuple[str, str]]:
    """(label, text) of every request routed: setup's two, then each exercise's two prompts."""
    found = [("greet.py question", QUESTION), ("calc.py fix", FIX)]
    for name in names:
        exercise = Exercise.load(exercises / "exercises" / name)
        project = scratch / name
        project.mkdir(parents=True)
        exercise.copy_stubs(project)
        tests = run_tests(exercise, project, scratch / f"{name}-tests")
        found += [(name, exercise.first_prompt()), (f"{name} retry", exercise.retry_prompt(tests.output))]
    return found


async def route_all(meter: PoolMeter, asked: list[tuple[str, str]]) -> list[dict[str, Routed]]:
    """Each request routed on both members: its choice, seconds and rows computed on each."""
    pool, prompts = CaldrixPool(meter.path), EmbeddedPrompts()
    rows: list[dict[str, Routed]] = []
    for number, (label, text) in enumerate(asked):
        row: dict[str, Routed] = {}
        for member in MEMBERS if number % 2 == 0 else MEMBERS[::-1]:
            computed, start = meter.figures.rows, time.perf_counter()
            choice = await route_request(pool, member, text, prompts, _Unrecorded())
            row[member] = Routed(choice.choice, time.perf_counter() - start, meter.figures.rows - computed)
        main, decision = row[MAIN_MEMBER], row[DECISION_MEMBER]
        print(
            f"{label:<24} main {main.choice:<11} {main.seconds:6.2f} s {main.rows:>5} rows   "
            f"decision {decision.choice:<11} {decision.seconds:6.2f} s {decision.rows:>5} rows",
            flush=True,
        )
        rows.append(row)
    return rows


def report(rows: list[dict[str, Routed]]) -> None:
    agree = sum(row[MAIN_MEMBER].choice == row[DECISION_MEMBER].choice for row in rows)
    seconds = {member: sum(row[member].seconds for row in rows) for member in MEMBERS}
    computed = {member: sum(row[member].rows for row in rows) for member in MEMBERS}
    ratios = [row[MAIN_MEMBER].seconds / row[DECISION_MEMBER].seconds for row in rows]
    print(f"\nchoices agree on {agree} of {len(rows)} requests")
    for member in MEMBERS:
        rate = computed[member] / seconds[member]
        print(f"{member}: {seconds[member]:.1f} s, {computed[member]:,} rows computed ({rate:.0f} rows/s)")
    print(
        f"main / decision: {seconds[MAIN_MEMBER] / seconds[DECISION_MEMBER]:.2f} in total, "
        f"median per request {statistics.median(ratios):.2f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_run_arguments(parser)
    parser.add_argument(
        "--decision",
        default=DEFAULT_DECISION,
        help=f"the decision member's model, as --model takes one (default {DEFAULT_DECISION})",
    )
    args = parser.parse_args(argv)
    pool = pool_spec(args, "bench_routing")
    pool = replace(pool, flags=(*pool.flags, "--decision", model_reference(args.decision)))
    exercises, _, names = listed_exercises(args, "bench_routing")
    threads = args.threads or "default"
    print(f"main {pool.model}, decision {args.decision}, threads {threads}, commit {short_head()}")
    with tempfile.TemporaryDirectory(prefix="bench-routing-") as folder:
        scratch = Path(folder)
        asked = requests(exercises, names, scratch / "projects")
        with metered_pool(scratch / "pool", pool) as meter:
            rows = anyio.run(route_all, meter, asked)
    report(rows)


if __name__ == "__main__":
    main()

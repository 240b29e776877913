"""What the commands cost as whole processes: start-up, a session listing, a warm request.

    .venv/bin/python benchmarks/bench_cli.py [--rounds 9] [--vs COMMIT]

Times, from outside, the wall clock (and the CPU time, user + system) of each of:

- ``aerix --version`` and ``caldrix --version``: the interpreter's start-up and the command
  line's imports;
- a warm ``aerix -p``: one request against a pool whose main member is caldrix's scripted engine,
  answering at once (a route, then a final turn), so what is timed is the client and its work
  around the pool, not a model;
- ``aerix sessions list``: a command that reads the store (the sessions those requests recorded).

Each tree runs as ``python -m aerix`` / ``python -m caldrix`` with the tree first on
``PYTHONPATH`` (the same interpreter and libraries for both sides), in a scratch world of its
own (temporary XDG folders, a small git project, its own scripted pool). Each command runs once
untimed first (bytecode compiled and written, even when this shell sets PYTHONDONTWRITEBYTECODE;
the pool warm), then ``--rounds`` times; the medians are printed.

``--vs COMMIT`` checks that commit out in a temporary ``git worktree`` and runs the same beside
this tree, paired round by round (the order alternating), and prints each side's median and the
median of the per-round ratios (this tree / that commit; below 1 is faster). Both sides run on
this tree's interpreter and libraries: a commit older than the git runner's move to plain
processes needs ``gitpython`` there (``.venv/bin/pip install gitpython``), or its git calls fail
quietly into their fallbacks and it does less work than it did.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from _side_by_side import ROOT, paired, short_head, worktree_of

MODEL = "smollm2-135m"
PROMPT = "What does a.txt hold?"
#: A request's generations on the scripted member: the route, then the root's final turn.
REQUEST_SCRIPT = ["answer", json.dumps({"thought": "It is short.", "final": "a.txt holds one line."})]
#: Requests a pool's script covers: the warm-up, every round, and room to spare.
SCRIPTED_REQUESTS = 200
POOL_START_SECS = 120
COMMAND_TIMEOUT_SECS = 300


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float
    status: int


@dataclass
class Tree:
    """One checkout's commands, in a world of its own."""

    label: str
    source: Path
    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    project: Path = field(init=False)
    socket: Path = field(init=False)

    def __post_init__(self) -> None:
        self.socket = self.folder / "run" / "pool.sock"
        self.env = {**os.environ, "PYTHONPATH": str(self.source), "NO_COLOR": "1"}
        # Bytecode written, as an installed aerix has it: inherited, this variable makes every
        # process compile each module from source (half again a request's CPU).
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        for var, name in (
            ("XDG_DATA_HOME", "data"),
            ("XDG_STATE_HOME", "state"),
            ("XDG_CONFIG_HOME", "config"),
            ("XDG_RUNTIME_DIR", "run"),
        ):
            (self.folder / name).mkdir(parents=True, exist_ok=True)
            self.env[var] = str(self.folder / name)
        self.env["CLAUDE_CONFIG_DIR"] = str(self.folder / "claude")
        (self.folder / "config" / "aerix").mkdir(parents=True, exist_ok=True)
        settings = {"pool": {"socket": str(self.socket), "main": MODEL}}
        (self.folder / "config" / "aerix" / "settings.json").write_text(json.dumps(settings))
        self.project = self.folder / "proj"
        self.project.mkdir()
        (self.project / "a.txt").write_text("one\n")
        for args in (
            ["init", "-q"],
            ["add", "."],
            ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "a"],
        ):
            subprocess.run(["git", *args], cwd=self.project, check=True, capture_output=True)

    def command(self, program: str, *args: str) -> list[str]:
        return [sys.executable, "-m", program, *args]

    def run(self, argv: list[str]) -> Timing:
        """One whole process, timed from outside: wall clock, and its CPU time from wait4."""
        started = time.perf_counter()
        child = subprocess.Popen(
            argv,
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        return Timing(wall, usage.ru_utime + usage.ru_stime, child.returncode)

    @contextmanager
    def scripted_pool(self) -> Iterator[None]:
        """This tree's own caldrix pool, its main member the scripted engine, until the end."""
        script = self.folder / "script.json"
        script.write_text(json.dumps(REQUEST_SCRIPT * SCRIPTED_REQUESTS))
        flags = ["--load", MODEL, "--engine", "scripted", "--script", str(script), "--ctx", "4096"]
        pool = subprocess.Popen(
            self.command("caldrix", "pool", "--socket", str(self.socket), *flags),
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + POOL_START_SECS
            while not self.socket.exists():
                if pool.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{self.label}: the scripted pool did not start (status {pool.poll()})")
                time.sleep(0.2)
            yield
        finally:
            pool.terminate()
            pool.wait(timeout=60)


#: What is timed: a name, and the command line of a tree.
COMMANDS: tuple[tuple[str, Callable[[Tree], list[str]]], ...] = (
    ("aerix --version", lambda tree: tree.command("aerix", "--version")),
    ("caldrix --version", lambda tree: tree.command("caldrix", "--version")),
    ("warm aerix -p (scripted member)", lambda tree: tree.command("aerix", "-p", PROMPT, "--max-turns", "2")),
    # After the requests, so there is something to list.
    ("aerix sessions list", lambda tree: tree.command("aerix", "sessions", "list")),
)


def measured(tree: Tree, argv: list[str], name: str, cpu: list[float]) -> Callable[[], float]:
    def once() -> float:
        timing = tree.run(argv)
        if timing.status != 0:
            raise SystemExit(f"{tree.label}: {name} exited {timing.status}")
        cpu.append(timing.cpu)
        return timing.wall

    return once


def alone(tree: Tree, rounds: int) -> None:
    print(f"{tree.label}, median of {rounds} (wall · CPU):")
    for name, argv_of in COMMANDS:
        argv = argv_of(tree)
        cpu: list[float] = []
        measured(tree, argv, name, [])()  # untimed: bytecode compiled, the pool warm
        walls = [measured(tree, argv, name, cpu)() for _ in range(rounds)]
        print(f"  {name:34} {statistics.median(walls):6.3f} s · {statistics.median(cpu):6.3f} s")


def side_by_side(this: Tree, other: Tree, rounds: int) -> None:
    print(f"median of {rounds} paired rounds, wall (CPU); ratio = {this.label} / {other.label}:")
    print(f"  {'':34} {this.label:>17} {other.label:>17}  ratio")
    for name, argv_of in COMMANDS:
        this_argv, other_argv = argv_of(this), argv_of(other)
        this_cpu: list[float] = []
        other_cpu: list[float] = []
        measured(this, this_argv, name, [])()
        measured(other, other_argv, name, [])()
        pairs = paired(
            rounds, measured(this, this_argv, name, this_cpu), measured(other, other_argv, name, other_cpu)
        )
        ratio = statistics.median(mine / theirs for mine, theirs in pairs)
        mine = f"{statistics.median(p[0] for p in pairs):.3f} ({statistics.median(this_cpu):.3f})"
        theirs = f"{statistics.median(p[1] for p in pairs):.3f} ({statistics.median(other_cpu):.3f})"
        print(f"  {name:34} {mine:>17} {theirs:>17}  {ratio:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--vs", metavar="COMMIT", help="an older commit to run side by side")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{n:.2f}' for n in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch, ExitStack() as stack:
        this = Tree(f"this ({short_head()})", ROOT, Path(scratch) / "this")
        stack.enter_context(this.scripted_pool())
        if args.vs is None:
            alone(this, args.rounds)
        else:
            source = stack.enter_context(worktree_of(args.vs, Path(scratch) / "vs-tree"))
            other = Tree(args.vs, source, Path(scratch) / "vs")
            stack.enter_context(other.scripted_pool())
            side_by_side(this, other, args.rounds)
    print(f"load average after: {' '.join(f'{n:.2f}' for n in os.getloadavg())}")


if __name__ == "__main__":
    main()

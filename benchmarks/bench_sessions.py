"""Session store benchmark: append rate, full rebuild of every projection, resume-load.

    .venv/bin/python benchmarks/bench_sessions.py [--events 50000] [--resume-events 5000]
    .venv/bin/python benchmarks/bench_sessions.py --vs COMMIT [--events 50000] [--rounds 9]

Writes a synthetic session through the real writer (one line on disk per event), then reads
it back and folds every projection from scratch, then times ``load_for_resume`` on a
5,000-event session, and that plus ``reopen_session`` (all ``--resume`` does before it
generates). Prints each figure with its ratio to the target.

``--vs COMMIT`` compares the rebuild alone with that commit's: it checks the commit out in a
temporary ``git worktree``, and each checkout runs its own ``write_session`` and
``rebuild_all`` (every version of this file has them, whatever the modules they import are
called) in a process of its own (``_tree_rebuild.py``), with the same interpreter and
libraries. The two rebuild in turn, ``--rounds`` times, the order alternating; it prints each
side's median events/s (CPU and wall) and the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _side_by_side import ROOT, paired, short_head, worktree_of

from aerix.adapters.gc_pause import gc_paused
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.queries import load_for_resume
from aerix.app.sessions.writer import SessionWriter, reopen_session, start_session
from aerix.domain import events as ev
from aerix.domain.settings import SyncPolicy
from aerix.projections.base import feed_all
from aerix.projections.contexts import Contexts
from aerix.projections.corpus import SessionEvidence
from aerix.projections.index import IndexEntry
from aerix.projections.status import StatusFigures
from aerix.projections.transcript import ClaudeTranscript

REBUILD_TARGET_EVENTS_PER_SEC = 50_000
RESUME_TARGET_SECS = 0.2


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=250)
        return self.now


def write_session(files: SessionFiles, session_id: str, events: int, sync: SyncPolicy = "release") -> float:
    """A realistic mix: segments, turns with usage, tool results, compactions, subagents."""
    writer = start_session(
        files,
        Clock(),
        sync=sync,
        session=session_id,
        cwd="/w",
        project="bench",
        model="smollm2-135m",
        prompt="refactor the parser",
        aerix_version="bench",
        window=8192,
    )
    started = time.perf_counter()
    writer.record(ev.AgentSpawn, agent="a1", kind="root", max_turns=40)
    turn = 0
    while writer.session.version < events - 1:
        turn += 1
        agent = "a1" if turn % 5 else f"a1.c{turn}"
        _one_turn(writer, agent, turn)
    writer.record(ev.SessionEnd, outcome="done", diff=ev.DiffStats(added=10, removed=2, files=3))
    elapsed = time.perf_counter() - started
    writer.close()
    return elapsed


def _one_turn(writer: SessionWriter, agent: str, turn: int) -> None:
    call = f"c{turn}"
    writer.record(
        ev.Message,
        agent=agent,
        role="assistant",
        turn=turn,
        text='{"thought":"read it","calls":[…]}',
        thought="read the file next",
        calls=[ev.ToolCall(id=call, tool="read", input={"path": "src/parser.py"})],
        usage=ev.Usage(
            prompt_tokens=1200 + turn, completion_tokens=40, recomputed_from=1100, decode_ms=530.0
        ),
    )
    writer.record(
        ev.Segment, agent=agent, id=f"s{turn}a", role="assistant", kind="assistant", text="{…}", tokens=40
    )
    result = "def parse(text):\n    return [line.split() for line in text.splitlines()]\n" * 4
    writer.record(ev.Message, agent=agent, role="tool", text=result, call=call, tool="read")
    writer.record(
        ev.Segment,
        agent=agent,
        id=f"s{turn}r",
        role="user",
        kind="tool_result",
        text=result,
        tokens=180,
        call=call,
        tool="read",
    )
    if turn % 25 == 0:
        writer.record(
            ev.Compaction,
            agent=agent,
            tokens_before=6000,
            tokens_after=3000,
            replaced=[
                ev.Replaced(id=f"s{turn - 20}r", marker=f"[compacted tool result of call c{turn - 20}]")
            ],
        )


def rebuild_all(files: SessionFiles, session_id: str) -> int:
    records = files.log.read(files.catalog.find(session_id))
    with gc_paused():  # as `aerix sessions rebuild` does (aerix.wiring)
        feed_all([Contexts(), ClaudeTranscript(), StatusFigures(), SessionEvidence(), IndexEntry()], records)
    return len(records)


def compare_sync_policies(files: SessionFiles, events: int) -> tuple[float, float]:
    """Events/s appending the same session with each sync policy, alternated, best of three each
    (a commit point is about half the mix: every turn and every tool result)."""
    rates: dict[SyncPolicy, float] = {"commit": 0.0, "release": 0.0}
    for run in range(3):
        for policy in ("commit", "release"):
            seconds = write_session(files, f"sync-{policy}-{run}", events, policy)
            rates[policy] = max(rates[policy], events / seconds)
    return rates["commit"], rates["release"]


def resume_and_reopen(folder: Path, session_id: str) -> None:
    """What ``--resume`` does before its first generation: load the root, become the writer."""
    files = SessionFiles(folder)
    load_for_resume(files, session_id)
    writer = reopen_session(files, Clock(), session_id)
    files.log.release(writer.ref)  # not close(): that would rewrite the index


def best_of(runs: int, action: Callable[[], object]) -> tuple[float, float]:
    """The fastest of ``runs``: (wall seconds, CPU seconds of this process). On a shared machine
    the CPU time is the fairer figure: wall time also counts waiting for a core. Even CPU time
    varies by half between runs there (other jobs share the caches), hence the several runs."""
    timings = []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        timings.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(timings)


class TreeRebuilds:
    """One checkout's rebuild server (``_tree_rebuild.py``): its session written, a rebuild timed
    on each request."""

    def __init__(self, label: str, tree: Path, events: int) -> None:
        self.label = label
        self.cpu: list[float] = []
        self.wall: list[float] = []
        self.server = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "_tree_rebuild.py"), str(tree), str(events)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
        ready = self._answer().split()
        if len(ready) != 2 or ready[0] != "ready":
            raise SystemExit(f"{label}: the rebuild server said {' '.join(ready)!r}")
        self.events = int(ready[1])

    def _answer(self) -> str:
        assert self.server.stdout is not None
        line = self.server.stdout.readline()
        if not line:
            raise SystemExit(f"{self.label}: the rebuild server ended (status {self.server.wait()})")
        return line

    def rebuild(self) -> float:
        """One rebuild; its CPU seconds (the wall seconds kept beside)."""
        assert self.server.stdin is not None
        self.server.stdin.write("rebuild\n")
        self.server.stdin.flush()
        wall, cpu = (float(figure) for figure in self._answer().split())
        self.wall.append(wall)
        self.cpu.append(cpu)
        return cpu

    def close(self) -> None:
        if self.server.stdin is not None:
            self.server.stdin.close()
        self.server.wait(timeout=60)


@contextmanager
def rebuild_server(label: str, tree: Path, events: int) -> Iterator[TreeRebuilds]:
    server = TreeRebuilds(label, tree, events)
    try:
        yield server
    finally:
        server.close()


def rebuild_side_by_side(commit: str, events: int, rounds: int) -> None:
    """This tree's rebuild against ``commit``'s, paired round by round."""
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as scratch, ExitStack() as stack:
        other_tree = stack.enter_context(worktree_of(commit, Path(scratch) / "vs-tree"))
        this = stack.enter_context(rebuild_server(f"this ({short_head()})", ROOT, events))
        other = stack.enter_context(rebuild_server(commit, other_tree, events))
        if this.events != other.events:
            raise SystemExit(f"the sessions differ: {this.events} events here, {other.events} at {commit}")
        this.rebuild(), other.rebuild()  # untimed: both warm
        this.cpu.clear(), this.wall.clear(), other.cpu.clear(), other.wall.clear()
        paired(rounds, this.rebuild, other.rebuild)  # each side keeps its own figures
    print(
        f"rebuild of a {this.events:,}-event session, every projection, median of {rounds} paired rounds; "
        f"ratio = {this.label} / {commit} in events/s (above 1 is faster):"
    )
    for figure, mine, theirs in (("cpu", this.cpu, other.cpu), ("wall", this.wall, other.wall)):
        ratio = statistics.median(their / my for my, their in zip(mine, theirs, strict=True))
        print(
            f"  {figure:4}  {this.label}: {this.events / statistics.median(mine):,.0f} events/s   "
            f"{commit}: {this.events / statistics.median(theirs):,.0f} events/s   ratio {ratio:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--resume-events", type=int, default=5_000)
    parser.add_argument(
        "--sync-events", type=int, default=4_000, help="events per run of the sync-policy comparison"
    )
    parser.add_argument("--vs", metavar="COMMIT", help="an older commit whose rebuild to run side by side")
    parser.add_argument("--rounds", type=int, default=9, help="paired rounds of --vs")
    args = parser.parse_args()
    if args.vs is not None:
        print(f"load average before: {' '.join(f'{n:.2f}' for n in os.getloadavg())}")
        rebuild_side_by_side(args.vs, args.events, args.rounds)
        print(f"load average after: {' '.join(f'{n:.2f}' for n in os.getloadavg())}")
        return
    with tempfile.TemporaryDirectory() as folder:
        files = SessionFiles(Path(folder))
        synced, unsynced = compare_sync_policies(files, args.sync_events)
        append_secs = write_session(files, "big", args.events)
        write_session(files, "resume", args.resume_events)
        count = len(files.log.read(files.catalog.find("big")))
        rebuild_wall, rebuild_cpu = best_of(5, lambda: rebuild_all(SessionFiles(Path(folder)), "big"))
        resume_wall, resume_cpu = best_of(9, lambda: load_for_resume(SessionFiles(Path(folder)), "resume"))
        reopen_wall, reopen_cpu = best_of(9, lambda: resume_and_reopen(Path(folder), "resume"))
        size_mb = files.catalog.find("big").log.stat().st_size / 1e6
    print(f"session: {count} events, {size_mb:.1f} MB")
    print(f"append: {count / append_secs:,.0f} events/s ({append_secs:.2f} s; a write per event, no fsync)")
    print(
        f"append, synced at each commit point (session.sync commit, the default): {synced:,.0f} events/s; "
        f"synced only at the end (release): {unsynced:,.0f} events/s; ratio {synced / unsynced:.3f} "
        f"(best of 3 alternated runs of {args.sync_events:,} events)"
    )
    for label, seconds in (("wall", rebuild_wall), ("cpu", rebuild_cpu)):
        rate = count / seconds
        print(
            f"rebuild ({label}): {rate:,.0f} events/s ({seconds:.2f} s, every projection from scratch); "
            f"target {REBUILD_TARGET_EVENTS_PER_SEC:,}/s, ratio {rate / REBUILD_TARGET_EVENTS_PER_SEC:.2f}"
        )
    for label, seconds in (("wall", resume_wall), ("cpu", resume_cpu)):
        print(
            f"resume ({label}): {seconds * 1000:.0f} ms to load a {args.resume_events:,}-event session; "
            f"target {RESUME_TARGET_SECS * 1000:.0f} ms, "
            f"ratio {RESUME_TARGET_SECS / seconds:.2f} (above 1 meets it)"
        )
    for label, seconds in (("wall", reopen_wall), ("cpu", reopen_cpu)):
        print(f"resume + reopen ({label}): {seconds * 1000:.0f} ms (all --resume does before generating)")


if __name__ == "__main__":
    main()

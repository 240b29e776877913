"""A rebuild server for ``bench_sessions.py --vs``: one checkout's own rebuild, timed on request.

    python benchmarks/_tree_rebuild.py TREE EVENTS

Runs with ``TREE`` first on the path, so ``aerix`` is that checkout's, and uses that checkout's
own ``benchmarks/bench_sessions.py`` (``write_session`` and ``rebuild_all``, which every version
of it has), whatever its modules are called. Writes an ``EVENTS``-event session into a scratch
folder, prints ``ready <events>``, then for each ``rebuild`` line on stdin rebuilds it once and
prints ``<wall seconds> <CPU seconds>``; it ends at end of input.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    tree, events = Path(sys.argv[1]), int(sys.argv[2])
    if not (tree / "benchmarks" / "bench_sessions.py").is_file():
        raise SystemExit(f"{tree}: it has no benchmarks/bench_sessions.py")
    # In place of this script's own folder, which Python put first: the tree's benchmark, not ours.
    sys.path[0:1] = [str(tree / "benchmarks"), str(tree)]
    try:
        import bench_sessions  # the tree's: found only now that the path is set
    except ImportError as exc:
        raise SystemExit(f"{tree}: its benchmarks/bench_sessions.py cannot be loaded: {exc}") from None

    if not all(hasattr(bench_sessions, name) for name in ("SessionFiles", "write_session", "rebuild_all")):
        raise SystemExit(f"{tree}: its bench_sessions.py has no write_session and rebuild_all to run")
    with tempfile.TemporaryDirectory(prefix="bench-rebuild-") as folder:
        bench_sessions.write_session(bench_sessions.SessionFiles(Path(folder)), "big", events)
        count = bench_sessions.rebuild_all(bench_sessions.SessionFiles(Path(folder)), "big")
        print(f"ready {count}", flush=True)
        for request in sys.stdin:
            if request.strip() != "rebuild":
                raise SystemExit(f"unknown request: {request.strip()!r}")
            wall, cpu = time.perf_counter(), time.process_time()
            bench_sessions.rebuild_all(bench_sessions.SessionFiles(Path(folder)), "big")
            print(f"{time.perf_counter() - wall} {time.process_time() - cpu}", flush=True)


if __name__ == "__main__":
    main()

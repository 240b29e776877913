"""What syncing the session log at its commit points costs a real request.

    .venv/bin/python benchmarks/bench_durability.py [--runs 5]

Starts a pool on the tests' embedded model (smollm2-135m) in a scratch world (temporary XDG folders, a small
git project), warms it with one request, then runs the same ``aerix -p`` request ``--runs``
times with each ``session.sync`` policy, alternated (commit, release, commit, …), and prints the
median wall time of each, their ratio, and how many commit points (syncs) a request made.
The request and the model are the same in every run; greedy decoding makes the answers equal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout: tests/ helpers

from tests.aerix.request_world import aerix, make_project, make_world, stop_pool

PROMPT = "What does greet.py do? Answer in one sentence."
COMMIT_TYPES = {"message", "agent.end", "session.end"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        settings = {"pool": {"socket": str(root / "run" / "pool.sock")}, "context": {"max_new_tokens": 128}}
        world = make_world(root, settings)
        project = make_project(root / "proj", {"greet.py": 'def greet(n):\n    return f"Hello, {n}!"\n'})
        (project / ".aerix").mkdir()
        policy_file = project / ".aerix" / "settings.json"
        try:
            policy_file.write_text(json.dumps({"session": {"sync": "commit"}}))
            aerix(world, project, "-p", PROMPT, "--max-turns", "2")  # autostarts and warms the pool
            times: dict[str, list[float]] = {"commit": [], "release": []}
            commits: list[int] = []
            for _ in range(args.runs):
                for policy in ("commit", "release"):
                    policy_file.write_text(json.dumps({"session": {"sync": policy}}))
                    started = time.perf_counter()
                    done = aerix(world, project, "-p", PROMPT, "--max-turns", "2", "--output-format", "json")
                    times[policy].append(time.perf_counter() - started)
                    if policy == "commit":
                        log = json.loads(done.stdout)["session_id"]
                        [path] = list(world.sessions.glob(f"*/{log}.jsonl"))
                        events = [json.loads(line) for line in path.read_text().splitlines()]
                        commits.append(sum(1 for event in events if event["type"] in COMMIT_TYPES))
        finally:
            stop_pool(world, world.socket)
    synced, relaxed = statistics.median(times["commit"]), statistics.median(times["release"])
    print(f"warm aerix -p, median of {args.runs} alternated runs each:")
    points = statistics.median(commits)
    print(f"  session.sync commit (default): {synced:.2f} s   ({points:.0f} commit points synced)")
    print(f"  session.sync release:          {relaxed:.2f} s")
    print(f"  ratio commit / release: {synced / relaxed:.3f}")
    print("  every run (s): " + json.dumps({k: [round(t, 2) for t in v] for k, v in times.items()}))


if __name__ == "__main__":
    main()

"""Delegation benchmark: how many prompt rows a request with three pieces computes, with the
prefix store and without it.

One ``aerix -p`` request (the real console script, in a temporary git repository) routed
``edit``: the root delegates three pieces in one turn; each implementer writes a file and each
verifier runs a check. The pool's main member is the embedded model loaded with ``--engine
scripted --script-prefill``: llama.cpp computes every row with the model's own weights and the
prefix store keeps real snapshots, while the answers come from a script (keyed by what each
agent's prompt holds, so the three pieces, running concurrently on one member, each get their
own). The request runs twice, on a fresh pool each time: with the pool's default
``--context-budget``, and with ``--context-budget 0`` (no prefix store; only the live rows).

For every generation of the request (from the pool's log, so routing's probe counts too) the
rows prompted and the rows computed (the prompt minus where it resumed) are summed, and the
ratio computed / prompted printed, with the same figures per kind of agent from the session log.

    .venv/bin/python benchmarks/bench_delegation.py [--threads 2] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
#: The embedded model the request runs on: the tests' small one, pinned as pool.main too.
MODEL = "smollm2-135m"
PIECES = ("A", "B", "C")
PROMPT = "Do three pieces: create a.txt, b.txt and c.txt, each holding its own letter."
DECISION = re.compile(r"main: (\d+)-row prompt: (\w+) from row (\d+)")
INSTRUCTIONS = "\n".join(
    f"- {area}: functions stay under fifty lines; run `make test-{area}` and `ruff check {area}/` "
    "before a commit."
    for area in ("parser", "cli", "storage", "network", "render", "config", "tests", "docs", "build")
)


def _call(tool: str, tool_input: dict[str, Any], thought: str) -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": tool, "input": tool_input}]})


def script() -> list[Any]:
    """Routing's answer, the root's two turns, and each piece's four answers, keyed by the text
    only that agent's prompt holds (brief.md's and verifier.md's wording around the brief)."""
    calls = [
        {
            "tool": "agent",
            "input": {
                "brief": f"Piece {piece}: create {piece.lower()}.txt holding the line {piece}.",
                "check": f"cat {piece.lower()}.txt prints {piece}",
            },
        }
        for piece in PIECES
    ]
    completions: list[Any] = [
        "edit",
        {"when": PROMPT, "text": json.dumps({"thought": "Three independent pieces.", "calls": calls})},
    ]
    for piece in PIECES:
        name = f"{piece.lower()}.txt"
        implementer, verifier = f"# Your task\nPiece {piece}:", f"given this task:\nPiece {piece}:"
        completions += [
            {
                "when": implementer,
                "text": _call("write", {"path": name, "content": f"{piece}\n"}, "Write it."),
            },
            {"when": implementer, "text": json.dumps({"thought": "Written.", "final": f"I wrote {name}."})},
            {"when": verifier, "text": _call("bash", {"command": f"cat {name}"}, "Run the check.")},
            {
                "when": verifier,
                "text": json.dumps(
                    {"thought": "It holds.", "final": {"verdict": "pass", "reason": f"{name} holds {piece}"}}
                ),
            },
        ]
    completions.append(
        {"when": PROMPT, "text": json.dumps({"thought": "All passed.", "final": "Three files."})}
    )
    return completions


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def run_once(root: Path, budget: int | None, threads: int | None) -> dict[str, Any]:
    """One request on a fresh pool; the figures of its generations."""
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        (root / var.lower()).mkdir(parents=True)
        env[var] = str(root / var.lower())
    env["CLAUDE_CONFIG_DIR"] = str(root / "claude")
    socket = root / "xdg_runtime_dir" / "pool.sock"
    settings = {"pool": {"socket": str(socket), "main": MODEL}, "context": {"max_new_tokens": 256}}
    (root / "xdg_config_home" / "aerix").mkdir()
    (root / "xdg_config_home" / "aerix" / "settings.json").write_text(json.dumps(settings))
    project = root / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text(f"# Project rules\n{INSTRUCTIONS}\n")
    (project / "README.md").write_text("# Demo\n")
    _git(project, "init", "-q")
    _git(
        project,
        "-c",
        "user.email=b@example.org",
        "-c",
        "user.name=b",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "start",
    )
    script_file = root / "script.json"
    script_file.write_text(json.dumps(script()))
    args = [str(BIN / "caldrix"), "pool", "--socket", str(socket), "--load", MODEL]
    args += ["--engine", "scripted", "--script-prefill", "--script", str(script_file), "--ctx", "4096"]
    args += ["--idle-timeout", "0"]
    if threads:
        args += ["--threads", str(threads)]
    if budget is not None:
        args += ["--context-budget", str(budget)]
    log = root / "pool.log"
    with log.open("w") as out:
        pool = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while not socket.exists():
            if pool.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the pool did not start:\n{log.read_text()}")
            time.sleep(0.2)
        began = time.monotonic()
        done = subprocess.run(
            [str(BIN / "aerix"), "-p", PROMPT, "--output-format", "json"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        seconds = time.monotonic() - began
    finally:
        pool.terminate()
        pool.wait(timeout=60)
    result = json.loads(done.stdout)
    [session_log] = (root / "xdg_data_home" / "aerix" / "sessions").glob(f"*/{result['session_id']}.jsonl")
    events = [json.loads(line) for line in session_log.read_text().splitlines()]
    return {
        "result": result,
        "events": events,
        "decisions": DECISION.findall(log.read_text()),
        "seconds": seconds,
    }


def figures(run: dict[str, Any]) -> dict[str, Any]:
    kinds = {e["agent"]: e["kind"] for e in run["events"] if e["type"] == "agent.spawn"}
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for event in run["events"]:
        if event["type"] == "message" and event["role"] == "assistant" and event.get("usage"):
            usage = event["usage"]
            row = per_kind[kinds.get(event["agent"], "?")]
            row[0] += usage["prompt_tokens"]
            row[1] += usage["prompt_tokens"] - usage["recomputed_from"]
            row[2] += 1
    prompted = sum(int(rows) for rows, _source, _start in run["decisions"])
    computed = sum(int(rows) - int(start) for rows, _source, start in run["decisions"])
    ends = [e for e in run["events"] if e["type"] == "agent.end"]
    return {
        "prompted": prompted,
        "computed": computed,
        "generations": len(run["decisions"]),
        "per_kind": dict(per_kind),
        "outcome": run["result"]["outcome"],
        "agents": {e["agent"]: (e["outcome"], e.get("verdict")) for e in ends},
        "seconds": run["seconds"],
    }


def report(label: str, numbers: dict[str, Any]) -> None:
    ratio = numbers["computed"] / numbers["prompted"] if numbers["prompted"] else 0.0
    print(f"{label}: {numbers['computed']} rows computed of {numbers['prompted']} prompted = {ratio:.3f}")
    generations, outcome, seconds = numbers["generations"], numbers["outcome"], numbers["seconds"]
    print(f"  {generations} generations, request outcome {outcome}, {seconds:.1f} s")
    for kind, (prompted, computed, count) in sorted(numbers["per_kind"].items()):
        share = computed / prompted if prompted else 0.0
        print(
            f"  {kind:<12} {count:>2} generations: {computed:>6} of {prompted:>6} rows computed ({share:.3f})"
        )
    failed = {agent: state for agent, state in numbers["agents"].items() if state[0] != "done"}
    if failed:
        print(f"  agents that did not end done: {failed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=None, help="engine threads (default: the engine's)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-delegation-"))
    try:
        stored = figures(run_once(folder / "stored", None, args.threads))
        none = figures(run_once(folder / "none", 0, args.threads))
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    report("prefix store (default --context-budget)", stored)
    report("no prefix store (--context-budget 0)", none)


if __name__ == "__main__":
    main()

"""setup's main job: two ``aerix -p`` requests on the default model, and what their ends say.

``scripts/setup`` runs it last, with the virtual environment's Python (``.venv/bin/python
scripts/main_job.py``); the tests run it the same way against a scripted pool. Each request runs
in a scratch git repository of its own, so the agent never touches this checkout, with
``--output-format json`` so its end is read from the result's fields, not from text:

1. the question: "What does greet.py do? Answer in one sentence." about a ``greet.py``;
2. the fix: "add() in calc.py returns the wrong result for add(2, 3). Fix it." about a
   ``calc.py`` whose ``add()`` subtracts, with ``mul()`` beside it; afterwards the job runs
   ``add(2, 3)`` and ``mul(2, 3)`` from the file as the agent left it and says what they give.

A pool it started is stopped afterwards; one that was already running is left alone.

The default model (Qwen2.5-Coder-1.5B-Instruct, on a CPU) is a small coder: setup checks the
machinery, not the answers, so what the model does with its turns cannot fail setup. A request
passes (exit 0) when the machinery ran it to its end:

- ``done`` (aerix's exit 0): the model gave a final answer;
- ``budget`` (2): it used up its turns without one;
- ``failed`` (1) on the model's own turns: the root's last turn came back from the pool and the
  loop refused it (every attempt of it, say one that copies the runtime's words) or ended the
  agent on it (the same call again and again).

Anything else is the machinery failing, and fails setup with aerix's status (the fix is not
asked then): the pool would not start or broke off (``failed`` before the root's last turn came
back), a crash (no JSON result), a command line refused (64), the runtime ending the agent (3),
Ctrl-C (130).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aerix.domain.bounds import EXIT_BUDGET, EXIT_CANCELLED, EXIT_DONE, EXIT_FAILED, TURN_RETRIES

QUESTION = "What does greet.py do? Answer in one sentence."
GREET_PY = 'def greet(name):\n    return f"Hello, {name}!"\n'
FIX = "add() in calc.py returns the wrong result for add(2, 3). Fix it."
CALC_PY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
#: What the fix job runs on calc.py as the agent left it (in a fresh interpreter, bounded).
CALC_CHECK = "import calc; print(calc.add(2, 3), calc.mul(2, 3))"
CALC_CHECK_SECONDS = 30
MAX_TURNS = 4
#: Where the next step is explained: pool.main, the model a pool serves.
REAL_WORK = "for harder work point pool.main at a bigger GGUF model (docs/configuration.md)"

BIN = Path(sys.executable).parent
AERIX, CALDRIX = str(BIN / "aerix"), str(BIN / "caldrix")


@dataclass(frozen=True)
class Verdict:
    """What the job's end means: ``ran`` (the machinery worked), the line that says so, and
    setup's exit status."""

    ran: bool
    line: str
    status: int


@dataclass(frozen=True)
class Job:
    """One request of the main job: its name in setup's lines, the prompt, the repository's
    one file, and what that file holds."""

    name: str
    prompt: str
    file: str
    text: str
    holding: str
    #: What the file gives once the agent is done (``calc_outcome``), for a job that changes it.
    after: Callable[[Path], str] | None = None


def main() -> int:
    pool_was_running = _caldrix("pool", "status").returncode == 0
    try:
        for job in JOBS:
            verdict = _run(job)
            if not verdict.ran:
                return verdict.status
    finally:
        if not pool_was_running:
            _caldrix("pool", "stop")
    return 0


def _run(job: Job) -> Verdict:
    print(
        f'setup: the {job.name}: aerix -p "{job.prompt}" on the default model, in a scratch git '
        f"repository {job.holding}. aerix's own lines follow: its banner, and its outcome line "
        "unless it ends done.",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="aerix-main-job-") as scratch:
        project = Path(scratch)
        _scratch_repository(project, job)
        # stderr (the banner, the pool starting, the outcome line) goes straight to the terminal.
        done = subprocess.run(
            [
                AERIX,
                "-p",
                job.prompt,
                "--cwd",
                str(project),
                "--max-turns",
                str(MAX_TURNS),
                "--output-format",
                "json",
            ],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        result = _result(done.stdout)
        if result is not None and result.get("result"):
            print(f"setup: the model's answer: {result['result']}")
        if job.after is not None:
            print(f"setup: {job.file} now: {job.after(project)}")
    verdict = judge(done.returncode, result, _events(result), job.name)
    print(f"setup: {verdict.line}", file=sys.stdout if verdict.ran else sys.stderr, flush=True)
    return verdict


def calc_outcome(project: Path) -> str:
    """What calc.py in ``project`` gives for add(2, 3) and mul(2, 3), and whether that is fixed."""
    try:
        ran = subprocess.run(
            [sys.executable, "-c", CALC_CHECK],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=CALC_CHECK_SECONDS,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return f"add(2, 3) and mul(2, 3) did not return within {CALC_CHECK_SECONDS} s: not fixed"
    if ran.returncode != 0:
        last = (ran.stderr.strip().splitlines() or ["no error output"])[-1]
        return f"it does not run ({last}): not fixed"
    got = ran.stdout.split()
    if len(got) != 2:
        return f"add(2, 3) and mul(2, 3) printed {ran.stdout.strip()!r}: not fixed"
    add, mul = got
    fixed = add == "5" and mul == "6"
    return f"add(2, 3) = {add}, mul(2, 3) = {mul}: {'fixed' if fixed else 'not fixed'}"


JOBS = (
    Job("main job", QUESTION, "greet.py", GREET_PY, "holding greet.py"),
    Job(
        "fix job",
        FIX,
        "calc.py",
        CALC_PY,
        "holding calc.py (add() subtracts; mul() is beside it)",
        after=calc_outcome,
    ),
)


def judge(
    status: int, result: dict[str, Any] | None, events: list[dict[str, Any]], name: str = "main job"
) -> Verdict:
    """The verdict on aerix's exit ``status``, its JSON ``result`` (None: none was printed) and
    the session's ``events``, for the job called ``name``."""
    if result is None or result.get("exit_code") != status:
        return _machinery(name, f"aerix exited {status} without its JSON result (a crash?)", status)
    outcome, reason = result.get("outcome"), result.get("reason")
    ran = result.get("route") is not None and int(result.get("num_turns") or 0) >= 1
    if status == EXIT_DONE and outcome == "done":
        return _ran(name, "done (exit 0): the model answered")
    if status == EXIT_BUDGET and outcome == "budget" and ran:
        return _ran(name, f"out of turns (exit 2): the model used its {MAX_TURNS} turns without an answer")
    if status == EXIT_FAILED and outcome == "failed" and ran and _failed_on_its_turns(events):
        return _ran(name, f"failed on the model's own turns (exit 1: {reason})")
    return _machinery(name, f"{outcome}: {reason}", status)


def _failed_on_its_turns(events: list[dict[str, Any]]) -> bool:
    """The root ended failed on a turn the pool gave back: the last turn the loop asked has its
    answer in the log, and the loop refused it every time or took it (then ended the agent on
    what it did, as the same call again). Without the answer, the pool broke off mid-turn."""
    ends = [e for e in events if e.get("type") == "agent.end" and e.get("agent") == "a1"]
    answers = [
        e
        for e in events
        if e.get("type") == "message" and e.get("role") == "assistant" and e.get("agent") == "a1"
    ]
    if not ends or not answers or ends[-1].get("outcome") != "failed":
        return False
    last = answers[-1]
    if last.get("turn") != ends[-1].get("turns"):
        return False
    return not last.get("parse_error") or int(last.get("attempt") or 0) == TURN_RETRIES


def _ran(name: str, what: str) -> Verdict:
    line = (
        f"{name} {what}; the pool, the agent loop and the session log all ran. "
        f"The default model is a small coder (1.5B parameters): {REAL_WORK}"
    )
    return Verdict(True, line, 0)


def _machinery(name: str, what: str, status: int) -> Verdict:
    return Verdict(False, f"the {name} failed: {what}; aerix exited {status}", status or EXIT_FAILED)


def _scratch_repository(project: Path, job: Job) -> None:
    (project / job.file).write_text(job.text, encoding="utf-8")
    identity = ["-c", "user.name=aerix-setup", "-c", "user.email=setup@aerix.invalid"]
    for args in (
        ["init", "--quiet"],
        ["add", job.file],
        [*identity, "commit", "--quiet", "-m", "a file to ask about"],
    ):
        subprocess.run(["git", "-C", str(project), *args], check=True)


def _caldrix(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([CALDRIX, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _result(stdout: str) -> dict[str, Any] | None:
    """The JSON result: the last line of stdout that is a ``result`` object."""
    for line in reversed(stdout.splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and value.get("type") == "result":
            return value
    return None


def _events(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The session's events (``aerix sessions show ID --json``); none without a session."""
    session = result.get("session_id") if result is not None else None
    if not session:
        return []
    shown = subprocess.run([AERIX, "sessions", "show", session, "--json"], capture_output=True, text=True)
    events = []
    for line in shown.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("setup: the main job was cancelled", file=sys.stderr)
        sys.exit(EXIT_CANCELLED)

"""setup's main job (scripts/main_job.py): whatever the model does with its turns, setup passes
and says which in one line; only the machinery failing fails it.

The job runs as setup runs it (the virtual environment's Python on the script, the real
``aerix`` and ``caldrix`` console scripts) against a scripted pool on the world's default
socket, and against a pool that cannot start; the world pins ``pool.main`` to the tests' model,
so no test loads the default 1.5B model (setup's own run of the job does). ``judge`` is also
read on the ends the world cannot stage on demand: a crash, a refused command line, a killed
agent, a pool that broke off.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from aerix.domain import bounds
from tests.aerix.request_world import World, make_world, start_scripted_pool, stop_pool

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "main_job.py"
COPIED_NOTE = (
    "Your last answer was stopped after 125 tokens because it was going nowhere … Answer again, shorter"
)
REAL_WORK = "for harder work point pool.main at a bigger GGUF model (docs/configuration.md)"


def _load_main_job() -> ModuleType:
    spec = importlib.util.spec_from_file_location("main_job", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


main_job = _load_main_job()


def _turn(thought: str, **body: Any) -> str:
    return json.dumps({"thought": thought, **body})


def _read(path: str) -> str:
    return _turn("Look.", calls=[{"tool": "read", "input": {"path": path}}])


def _run_main_job(world: World) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT)], env=world.env, capture_output=True, text=True, timeout=480
    )


def _edit(path: str, old: str, new: str) -> str:
    return _turn("Fix it.", calls=[{"tool": "edit", "input": {"path": path, "old": old, "new": new}}])


#: The fix job, as the default model does it: the root delegates on the edit route, the
#: implementer edits add(), its verifier reads calc.py and passes, the root answers.
FIXED = [
    "edit",
    _turn(
        "Delegate the fix.",
        calls=[{"tool": "agent", "input": {"brief": "Fix add() in calc.py.", "check": "add(2, 3) is 5"}}],
    ),
    _edit("calc.py", "a - b", "a + b"),
    _turn("Edited.", final="add() in calc.py now returns a + b."),
    _read("calc.py"),
    json.dumps({"thought": "It adds.", "final": {"verdict": "pass", "reason": "add returns a + b"}}),
    _turn("Done.", final="add() in calc.py returns a + b now."),
]


def _default_socket(world: World) -> Path:
    return world.root / "run" / "caldrix" / "pool.sock"


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("completions", "says"),
    [
        (
            ["answer", *[_turn("Done.", final=COPIED_NOTE)] * 3],
            "main job failed on the model's own turns (exit 1: turn 1 was asked 3 times and never "
            "parsed: the final copies the runtime's own words (the note after a stopped answer); "
            "write your own answer); the pool, the agent loop and the session log all ran.",
        ),
        (
            ["answer", *(_read(f"f{n}.py") for n in range(main_job.MAX_TURNS))],
            "main job out of turns (exit 2): the model used its 4 turns without an answer; the pool,",
        ),
        (
            ["answer", _read("greet.py"), _turn("Read it.", final="greet.py greets a name.")],
            "main job done (exit 0): the model answered; the pool, the agent loop and the session log",
        ),
    ],
    ids=["failed", "budget", "done"],
)
def test_whatever_the_model_does_with_its_turns_setup_passes_and_says_which(
    tmp_path: Path, completions: list[str], says: str
) -> None:
    world = make_world(tmp_path, {})
    socket = _default_socket(world)
    start_scripted_pool(world, socket, [*completions, *FIXED])
    try:
        job = _run_main_job(world)
    finally:
        stop_pool(world, socket)
    assert job.returncode == 0, job.stdout + job.stderr
    lines = job.stdout.splitlines()
    assert lines[0].startswith(
        'setup: the main job: aerix -p "What does greet.py do? Answer in one sentence."'
    )
    [main] = [line for line in lines if line.startswith("setup: main job ")]
    assert main.startswith(f"setup: {says}"), main
    assert main.endswith(f"The default model is a small coder (1.5B parameters): {REAL_WORK}")
    assert "Traceback" not in job.stderr
    if "done" in says:
        assert "setup: the model's answer: greet.py greets a name." in lines
    # Then the fix, whatever the question's end, in its own repository, and what calc.py gives.
    fix = lines.index(
        'setup: the fix job: aerix -p "add() in calc.py returns the wrong result for add(2, 3). Fix it." '
        "on the default model, in a scratch git repository holding calc.py (add() subtracts; mul() is "
        "beside it). aerix's own lines follow: its banner, and its outcome line unless it ends done."
    )
    assert lines[fix + 1 :] == [
        "setup: the model's answer: add() in calc.py returns a + b now.",
        "setup: calc.py now: add(2, 3) = 5, mul(2, 3) = 6: fixed",
        "setup: fix job done (exit 0): the model answered; the pool, the agent loop and the session log "
        f"all ran. The default model is a small coder (1.5B parameters): {REAL_WORK}",
    ]


@pytest.mark.e2e
def test_a_pool_that_cannot_start_fails_setup(tmp_path: Path) -> None:
    world = make_world(tmp_path, {"pool": {"main": str(tmp_path / "no-such-model.gguf")}})
    job = _run_main_job(world)
    assert job.returncode == bounds.EXIT_FAILED
    [line] = [line for line in job.stderr.splitlines() if line.startswith("setup:")]
    assert line.startswith("setup: the main job failed: failed: ") and line.endswith("; aerix exited 1")
    assert "Traceback" not in job.stderr
    assert not _default_socket(world).exists()


@pytest.mark.parametrize(
    ("calc", "says"),
    [
        (main_job.CALC_PY, "add(2, 3) = -1, mul(2, 3) = 6: not fixed"),
        (main_job.CALC_PY.replace("a - b", "a + b"), "add(2, 3) = 5, mul(2, 3) = 6: fixed"),
        (
            "def add(a, b):\n    return a + b\n",
            "it does not run (AttributeError: module 'calc' has no attribute 'mul'): not fixed",
        ),
        ("def add(a, b):\n    return a +\n", "it does not run (SyntaxError: invalid syntax): not fixed"),
    ],
    ids=["unfixed", "fixed", "mul-lost", "broken"],
)
def test_the_fix_job_says_what_calc_py_gives_afterwards(tmp_path: Path, calc: str, says: str) -> None:
    (tmp_path / "calc.py").write_text(calc)
    assert main_job.calc_outcome(tmp_path) == says


# ---- judge, on ends the world does not stage ---------------------------------------------------


def _result(outcome: str, exit_code: int, *, route: str | None = "answer", turns: int = 1) -> dict[str, Any]:
    return {
        "type": "result",
        "outcome": outcome,
        "reason": "why",
        "exit_code": exit_code,
        "route": route,
        "num_turns": turns,
    }


def _events(*answers: dict[str, Any], turns: int = 1) -> list[dict[str, Any]]:
    messages = [{"type": "message", "role": "assistant", "agent": "a1", **answer} for answer in answers]
    return [*messages, {"type": "agent.end", "agent": "a1", "outcome": "failed", "turns": turns}]


REFUSED = [{"turn": 1, "attempt": n, "parse_error": "no JSON object found"} for n in range(3)]


@pytest.mark.parametrize(
    ("status", "result", "events", "ran"),
    [
        (1, _result("failed", 1), _events(*REFUSED), True),  # every attempt refused
        (1, _result("failed", 1, turns=3), _events({"turn": 3, "attempt": 0}, turns=3), True),  # a repeat
        (1, None, [], False),  # a crash: no JSON result
        (1, _result("failed", 1), _events(*REFUSED[:1]), False),  # the pool broke off the re-ask
        (1, _result("failed", 1, turns=2), _events({"turn": 1, "attempt": 0}, turns=2), False),  # … turn 2
        (1, _result("failed", 1, route=None, turns=0), [], False),  # the pool would not start
        (bounds.EXIT_USAGE, _result("failed", bounds.EXIT_USAGE), [], False),
        (bounds.EXIT_KILLED, _result("killed", bounds.EXIT_KILLED), [], False),
        (bounds.EXIT_CANCELLED, _result("cancelled", bounds.EXIT_CANCELLED), [], False),
        (2, _result("budget", 1), [], False),  # the status and the result disagree
    ],
)
def test_only_an_end_the_machinery_reached_passes(
    status: int, result: dict[str, Any] | None, events: list[dict[str, Any]], ran: bool
) -> None:
    verdict = main_job.judge(status, result, events)
    assert verdict.ran is ran
    assert verdict.status == (0 if ran else status)

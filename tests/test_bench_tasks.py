"""The coding-tasks benchmark's harness, on caldrix's scripted member: two exercises written here
(one whose scripted answer passes its test, one whose answers fail it twice), agent aerix only.

What is checked is the harness and its protocol, not a model: the agent's folder holds the stub
and nothing else (the tests are hidden), the second try is a request in the same session whose
prompt holds the test output and Aider's wording, the pool's figures count every generation, a
rerun skips the rows its results file holds, and the table and summary say what happened.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aerix.domain.attachments import attachment_text
from tests.benchmark_modules import ROOT, load_benchmark

bench = load_benchmark("bench_tasks")
exercises = load_benchmark("_tasks_exercises")

EXERCISES = {
    "double": ("Return twice the number given.", "def double(number):\n    pass\n", "double(2)", "4"),
    "shout": ("Return the text in capitals.", "def shout(text):\n    pass\n", 'shout("hi")', '"HI"'),
}


def _write_exercises(folder: Path) -> Path:
    """Two exercises in the shared tasks folder's layout, and QUICK.txt naming both."""
    for name, (text, stub, call, expected) in EXERCISES.items():
        exercise = folder / "exercises" / name
        (exercise / ".meta").mkdir(parents=True)
        (exercise / ".docs").mkdir()
        config = {"solution": [f"{name}.py"], "test": [f"{name}_test.py"], "example": [".meta/example.py"]}
        (exercise / ".meta" / "config.json").write_text(json.dumps(config))
        (exercise / ".docs" / "instructions.md").write_text(f"# {name.title()}\n\n{text}\n")
        (exercise / f"{name}.py").write_text(stub)
        (exercise / f"{name}.py").chmod(0o444)  # as the shared folder's files are: read-only
        test = (
            f"import unittest\n\nfrom {name} import {name}\n\n\n"
            f"class {name.title()}Test(unittest.TestCase):\n"
            f"    def test_it(self):\n        self.assertEqual({call}, {expected})\n"
        )
        (exercise / f"{name}_test.py").write_text(test)
    (folder / "QUICK.txt").write_text("double\nshout\n")
    return folder


def _turn(thought: str, tool: str, tool_input: dict[str, Any]) -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": tool, "input": tool_input}]})


def _final(text: str) -> str:
    return json.dumps({"thought": "Done.", "final": text})


LOOK = _turn("See what is here.", "bash", {"command": "ls -A"})


def _read_then_write(when: str, path: str, content: str) -> list[dict[str, str]]:
    """Two turns: read the stub, then write it whole (a write over a file whose text the agent
    has not had in an earlier turn is refused)."""
    read = _turn("Read it.", "read", {"path": path})
    write = _turn("Write it.", "write", {"path": path, "content": content})
    return [{"when": when, "text": read}, {"when": when, "text": write}]


def script() -> list[Any]:
    """Each run's pool starts the script afresh. Routing takes the plain ``answer``s; each root
    turn the first unused answer its prompt matches: double's are keyed to its instructions,
    shout's to its own, so each exercise gets its own answers from the one script."""
    return [
        "answer",
        {"when": "# Double", "text": LOOK},
        *_read_then_write("# Double", "double.py", "def double(number):\n    return number * 2\n"),
        *_read_then_write("# Shout", "shout.py", "def shout(text):\n    return text\n"),
        _final("Implemented."),
        "answer",
        {"when": "# Shout", "text": LOOK},
        *_read_then_write("# Shout", "shout.py", "def shout(text):\n    return text.lower()\n"),
        _final("Fixed."),
    ]


def _run(tasks: Path, results: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(ROOT / "benchmarks" / "bench_tasks.py"), "--exercises", str(tasks)]
    args += ["--agents", "aerix", "--model", "smollm2-135m", "--engine", "scripted"]
    args += ["--script", str(tasks / "script.json"), "--results", str(results), "--pool-flags", "--ctx 8192"]
    done = subprocess.run([*args, *extra], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def _rows(results: Path) -> dict[str, dict[str, Any]]:
    return {row["exercise"]: row for row in map(json.loads, results.read_text().splitlines())}


def _session(kept: Path, name: str, session: str) -> list[dict[str, Any]]:
    [log] = (kept / f"{name}-aerix" / "aerix" / "xdg_data_home" / "aerix" / "sessions").glob(
        f"*/{session}.jsonl"
    )
    return [json.loads(line) for line in log.read_text().splitlines()]


def _tool_results(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e["type"] == "message" and e["role"] == "tool"]


@pytest.mark.e2e
def test_two_exercises_on_the_scripted_member_then_a_rerun_skips_them(tmp_path: Path) -> None:
    tasks = _write_exercises(tmp_path / "tasks")
    (tasks / "script.json").write_text(json.dumps(script()))
    results = tmp_path / "results.jsonl"
    first = _run(tasks, results, "--keep", "--aerix-settings", json.dumps(PLANNER_ROUTES))
    [kept] = [Path(f) for f in re.findall(r"kept the runs' folders in (\S+)", first.stderr)]
    try:
        _check_the_first_run(tasks, kept, results, first.stdout)
    finally:
        shutil.rmtree(kept, ignore_errors=True)

    # A rerun runs nothing and prints the same table; with a row gone, it runs that one only.
    again = _run(tasks, results)
    assert "2 already in" in again.stderr and "0 to run" in again.stderr and "asking" not in again.stderr
    assert again.stdout.split("\n\n", 1)[1] == first.stdout.split("\n\n", 1)[1]
    results.write_text(json.dumps(_rows(results)["double"]) + "\n")
    third = _run(tasks, results)
    assert "[1/1] shout · aerix" in third.stderr and "double · aerix · try" not in third.stderr
    assert sorted(_rows(results)) == ["double", "shout"]


#: A setting given with --aerix-settings: aerix's runs read it, and each row records it.
PLANNER_ROUTES = {"delegation.planner_routes": ["plan"]}


def _check_the_first_run(tasks: Path, kept: Path, results: Path, stdout: str) -> None:
    rows = _rows(results)
    assert all(row["aerix_settings"] == PLANNER_ROUTES for row in rows.values())
    config = kept / "double-aerix" / "aerix" / "xdg_config_home" / "aerix" / "settings.json"
    assert json.loads(config.read_text())["delegation.planner_routes"] == ["plan"]

    double, shout = rows["double"], rows["shout"]
    assert (double["pass1"], double["pass2"], len(double["tries"]), double["why"]) == (True, True, 1, "")
    assert (shout["pass1"], shout["pass2"], len(shout["tries"])) == (False, False, 2)
    assert shout["why"].startswith(
        "done; tests: 1 failed (shout_test.py::ShoutTest::test_it - AssertionError"
    )
    assert double["wall_s"] == double["tries"][0]["seconds"] > 0

    # The agent's folder held the stub and nothing else, on try 1 and on try 2 alike.
    [double_session] = {t["session"] for t in double["tries"]}
    assert (
        _tool_results(_session(kept, "double", double_session))[0] == "[bash c1]\n.git\ndouble.py\n[exit 0]"
    )
    # Try 2 was a second request of the same session, its prompt the test output in Aider's words.
    [shout_session] = {t["session"] for t in shout["tries"]}
    events = _session(kept, "shout", shout_session)
    prompts = [e["text"] for e in events if e["type"] == "segment" and e["kind"] == "prompt"]
    task = exercises.Exercise.load(tasks / "exercises" / "shout")
    assert len([e for e in events if e["type"] == "session.start"]) == 2
    # Each prompt carries the stub as it was then: the file it names (aerix's attachment).
    stub = attachment_text([("shout.py", "1\tdef shout(text):\n2\t    pass")])
    assert prompts[0] == f"{task.first_prompt()}\n\n{stub}"
    assert prompts[0].startswith(
        "# Shout\n\nReturn the text in capitals.\n\n####\n\nUse the above instructions"
    )
    assert "AssertionError: 'hi' != 'HI'" in prompts[1] and "1 failed" in prompts[1]
    written = attachment_text([("shout.py", "1\tdef shout(text):\n2\t    return text")])
    assert prompts[1].endswith(
        "See the testing errors above.\nThe tests are correct, don't try and change them.\n"
        f"Fix the code in shout.py to resolve the errors.\n\n\n{written}"
    )
    assert str(kept) not in prompts[1]  # the tests' folder is named as the exercise, as Aider does
    assert _tool_results(events)[2] == "[bash c3]\n.git\nshout.py\n[exit 0]"  # after try 1's read, write

    # The pool's figures count every generation: each request's own, and its routing probe.
    for row, name in ((double, "double"), (shout, "shout")):
        outputs = [json.loads(p.read_text()) for p in sorted((kept / f"{name}-aerix").glob("aerix-*.out"))]
        pool = row["pool"]
        assert pool["generations"] == pool["finished"] == sum(o["generations"] + 1 for o in outputs)
        assert pool["unfinished"] == 0
        assert row["rows"] == pool["rows"] >= sum(o["usage"]["input_tokens"] for o in outputs) > 0
        assert row["tokens"] == pool["tokens"] > sum(o["usage"]["output_tokens"] for o in outputs)

    # The table and the summary.
    assert "| double | aerix | pass | pass |" in stdout
    assert "| shout | aerix | fail | fail |" in stdout
    assert "| aerix | 2 | 1 (50.0 %) | 1 (50.0 %) |" in stdout


def test_a_results_file_of_another_model_is_refused(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"exercise": "bob", "agent": "aerix", "model": "a.gguf"}) + "\n")
    with pytest.raises(SystemExit, match=r"holds runs on a\.gguf, not b\.gguf; give another --results"):
        bench.read_results(results, "b.gguf")
    assert bench.read_results(results, "a.gguf")[0]["exercise"] == "bob"


def test_a_try_that_ran_out_of_time_shows_no_second_try() -> None:
    row = {
        "exercise": "bob",
        "agent": "claude",
        "pass1": False,
        "pass2": False,
        "wall_s": 600.04,
        "rows": 12345,
        "tokens": 67,
        "why": "timed out after 600 s; tests: 1 failed | x",
        "tries": [{"seconds": 600.04}],
    }
    text = bench.table([row], ["bob"], ["aerix", "claude"])
    assert text.splitlines()[-1] == (
        "| bob | claude | fail | — | 600.0 | 12,345 | 67 | timed out after 600 s; tests: 1 failed / x |"
    )
    assert bench.summary([row], ["aerix", "claude"]).splitlines()[-1] == (
        "| claude | 1 | 0 (0.0 %) | 0 (0.0 %) | 600.0 | 12,345 | 67 |"
    )


def test_long_test_output_keeps_its_start_and_its_summary() -> None:
    output = "F" * 10_000 + "\n7 failed"
    trimmed = exercises.trim(output)
    assert len(trimmed) < 6100 and trimmed.startswith("F" * 4500) and trimmed.endswith("\n7 failed")
    assert "[… 4009 characters of the test output cut …]" in trimmed
    assert exercises.trim("short") == "short"
    cleaned = exercises.clean_output(
        "FAILED /tmp/x/bob_test.py - boom\n1 failed in 0.12s\n", Path("/tmp/x"), "bob"
    )
    assert cleaned == "FAILED bob/bob_test.py - boom\n1 failed \n"
    assert exercises.summarize(cleaned, 1) == "1 failed (bob/bob_test.py - boom)"
    assert exercises.summarize("", 4) == "pytest exited 4 and printed nothing"


def test_a_model_name_is_looked_for_beside_the_checkout(tmp_path: Path) -> None:
    file = tmp_path / "m.gguf"
    file.write_bytes(b"GGUF")
    assert bench.model_reference(str(file)) == str(file)
    assert bench.model_reference("smollm2-135m") == "smollm2-135m"
    assert bench.model_reference("qwen2.5-coder-1.5b") in {
        "qwen2.5-coder-1.5b",
        str(ROOT.parent / "models" / "qwen2.5-coder-1.5b.gguf"),
    }


def test_an_interrupted_try_stops_the_agents_process_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent runs in a session of its own, out of Ctrl-C's reach: the benchmark stops it."""
    agents = load_benchmark("_tasks_agents")
    monkeypatch.setattr(agents, "TICK_SECS", 0.1)
    run = agents.AgentRun(tmp_path, tmp_path, tmp_path / "pool.sock", "m", (), 60.0)

    def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        agents.run_command(["sh", "-c", "echo $$ > pid; exec sleep 60"], run, {}, 60.0, interrupt, "agent")
    group = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)


def _sigint_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.e2e
def test_ctrl_c_while_a_pool_loads_ends_the_run_with_one_line_and_no_pool_left(tmp_path: Path) -> None:
    """Stopped as the first exercise's pool loaded, the run printed a traceback and left that
    pool running, its model in memory."""
    tasks = _write_exercises(tmp_path / "tasks")
    (tasks / "script.json").write_text(json.dumps(script()))
    # A long TMPDIR (xdist's tmp_path, deeper still): the run's folders go under it, and its
    # sockets once did too, past AF_UNIX's 108 bytes; the pool never started and the run ended 1.
    scratch = tmp_path / ("deep-" * 12)
    scratch.mkdir()
    args = [sys.executable, str(ROOT / "benchmarks" / "bench_tasks.py"), "--exercises", str(tasks)]
    args += ["--agents", "aerix", "--model", "smollm2-135m", "--engine", "scripted"]
    args += ["--script", str(tasks / "script.json"), "--results", str(tmp_path / "r.jsonl")]
    run = subprocess.Popen(
        args,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
        # As from a terminal: Ctrl-C is not ignored. A child inherits an ignored SIGINT, and a
        # suite started in the background by a script (`scripts/test &`) ignores it: the run
        # went on to its end and exited 0.
        preexec_fn=_sigint_as_from_a_terminal,
    )
    assert run.stderr is not None
    lines = [run.stderr.readline() for _ in range(2)]
    assert lines[1].startswith("bench_tasks: [1/2] double · aerix")  # its pool starts next
    run.send_signal(signal.SIGINT)
    rest = run.stderr.read()
    assert run.wait(timeout=60) == 130, rest
    assert rest.splitlines()[-1] == bench.STOPPED and "Traceback" not in rest
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert left.stdout == ""  # no pool (its --script is under tmp_path) nor agent still running

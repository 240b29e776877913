"""The routing benchmark's harness on caldrix's scripted members: every request routed on both
members, the retry carrying the stub's real test output, and the summary of agreement and time.
What is checked is the harness, not a model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmark_modules import ROOT
from tests.test_bench_tasks import _write_exercises


@pytest.mark.e2e
def test_each_request_is_routed_on_both_members_and_summed_up(tmp_path: Path) -> None:
    tasks = _write_exercises(tmp_path / "tasks")
    # Each member runs the script on its own, each answer keyed to its request: setup's two,
    # double's two prompts (the retry by the test output it carries), and shout's retry.
    script = [
        {"when": "greet.py", "text": "answer"},
        {"when": "calc.py", "text": "edit"},
        {"when": "FAILED double_test.py", "text": "edit"},
        {"when": "# Double", "text": "plan"},
        {"when": "FAILED shout_test.py", "text": "investigate"},
    ]
    (tasks / "script.json").write_text(json.dumps(script))
    args = [sys.executable, str(ROOT / "benchmarks" / "bench_routing.py"), "--exercises", str(tasks)]
    args += ["--model", "smollm2-135m", "--decision", "smollm2-135m", "--engine", "scripted"]
    args += ["--script", str(tasks / "script.json"), "--pool-flags", "--ctx 8192"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr

    rows = {line.split(" main ")[0].strip(): line for line in done.stdout.splitlines() if " rows   " in line}
    labels = ["greet.py question", "calc.py fix", "double", "double retry", "shout", "shout retry"]
    assert list(rows) == labels
    routed = {label: line.split(" main ")[1].split()[0] for label, line in rows.items()}
    assert routed == {
        "greet.py question": "answer",
        "calc.py fix": "edit",
        "double": "plan",
        "double retry": "edit",
        "shout": "answer",  # unscripted: the constraint's first word
        "shout retry": "investigate",
    }
    assert all(f"decision {routed[label]} " in line for label, line in rows.items())
    assert "choices agree on 6 of 6 requests" in done.stdout
    assert "main / decision: " in done.stdout
    # Each member computed rows of its own: the requests are prefilled on each.
    totals = [line for line in done.stdout.splitlines() if line.startswith(("main: ", "decision: "))]
    assert len(totals) == 2 and all(" 0 rows" not in line for line in totals)

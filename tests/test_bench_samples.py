"""The sampling benchmark's harness, on caldrix's scripted member: two exercises written here, each
asked for three answers; what is checked is the harness (the answers judged by the hidden tests,
the greedy one told apart, a rerun that skips what is recorded), not a model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.benchmark_modules import ROOT, load_benchmark
from tests.test_bench_tasks import _write_exercises

samples = load_benchmark("bench_samples")


def _answer(when: str, code: str) -> dict[str, str]:
    return {"when": when, "text": f"Here it is.\n\n```python\n{code}```\n"}


def script() -> list[Any]:
    """double: a greedy answer that fails, then one that passes and one with no code; shout: three
    that fail. Each answer is keyed to its exercise's instructions."""
    return [
        _answer("# Double", "def double(number):\n    return number\n"),
        _answer("# Double", "def double(number):\n    return number * 2\n"),
        {"when": "# Double", "text": "I would multiply it by two."},
        *[_answer("# Shout", "def shout(text):\n    return text\n") for _ in range(3)],
    ]


def _run(tasks: Path, results: Path) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(ROOT / "benchmarks" / "bench_samples.py"), "--exercises", str(tasks)]
    args += ["--samples", "3", "--model", "smollm2-135m", "--engine", "scripted"]
    args += ["--script", str(tasks / "script.json"), "--results", str(results), "--pool-flags", "--ctx 8192"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.e2e
def test_each_answer_is_judged_by_the_hidden_tests_and_a_rerun_skips_them(tmp_path: Path) -> None:
    tasks = _write_exercises(tmp_path / "tasks")
    (tasks / "script.json").write_text(json.dumps(script()))
    results = tmp_path / "results.jsonl"
    first = _run(tasks, results)

    assert "bench_samples: [1/2] double: 3 answers" in first.stderr
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    by_answer = {(row["exercise"], row["seed"]): row for row in rows}
    assert sorted(by_answer) == [
        ("double", 0),
        ("double", 1),
        ("double", 2),
        ("shout", 0),
        ("shout", 1),
        ("shout", 2),
    ]
    assert [by_answer["double", seed]["passed"] for seed in range(3)] == [False, True, False]
    assert by_answer["double", 0]["temperature"] == 0.0 and by_answer["double", 1]["temperature"] == 0.7
    assert by_answer["double", 0]["why"].startswith("1 failed")
    assert by_answer["double", 2]["why"].startswith("no fenced block in the answer")
    assert by_answer["double", 1]["code"] == "def double(number):\n    return number * 2\n"
    assert by_answer["double", 2]["code"] is None
    assert not any(by_answer["shout", seed]["passed"] for seed in range(3))
    assert all(row["tokens"] > 0 and row["model"] == "smollm2-135m" for row in rows)
    assert "| double | fail | 1 of 2 | **yes** |" in first.stdout
    assert "| shout | fail | 0 of 2 | no |" in first.stdout
    assert "2 exercises, 6 answers" in first.stdout
    assert "greedy solves 0, some answer solves 1; 1 of 6 answers pass" in first.stdout

    # The scripted member starts afresh with every pool: had anything run again, double's greedy
    # answer would now be its first script line again, and the file would grow.
    again = _run(tasks, results)
    assert len(results.read_text().splitlines()) == 6
    assert "[1/2]" not in again.stderr
    assert "| double | fail | 1 of 2 | **yes** |" in again.stdout


def test_the_code_of_an_answer_is_its_longest_fenced_block() -> None:
    text = "double.py\n```python\ndef double(n):\n    return n * 2\n```\nUse it:\n```\ndouble(2)\n```\n"
    assert samples.answer_code(text) == "def double(n):\n    return n * 2\n"
    assert samples.answer_code("no code here") is None

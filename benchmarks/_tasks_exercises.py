"""The coding tasks of ``bench_tasks.py``: Exercism exercises, the prompts of Aider's two-try
protocol worded as Aider's benchmark words them (``benchmark/prompts.py``), and the tests run
on what the agent left.

An exercise is a folder with ``.meta/config.json`` (its ``solution`` stub files and ``test``
files), ``.docs/instructions.md`` (with ``introduction.md`` before it and
``instructions.append.md`` after it where present) and the files themselves. The agent's folder
gets the stubs only; the tests are run in a folder of their own, on a copy of what the agent
wrote, so they are never where the agent can read them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Aider's ``instructions_addendum``, after the exercise's text (try 1).
INSTRUCTIONS_ADDENDUM: Final = """
####

Use the above instructions to modify the supplied files: {file_list}
Don't change the names of existing functions or classes, as they may be referenced from other code like unit tests, etc.
Only use standard libraries, don't suggest installing any packages.
"""  # noqa: E501
#: Aider's ``test_failures``, after the test output (try 2).
TEST_FAILURES: Final = """
####

See the testing errors above.
The tests are correct, don't try and change them.
Fix the code in {file_list} to resolve the errors.
"""
#: How long one run of an exercise's tests may take (Aider's benchmark allows 3 minutes).
TEST_TIMEOUT_SECS: Final = 180.0
#: The most test output that goes into the second try; a longer output keeps its start (the
#: first failures) and its end (pytest's summary), with a line saying what was cut.
TEST_OUTPUT_CHARS: Final = 6000
TEST_OUTPUT_TAIL_CHARS: Final = 1500
#: How much of the first failure's line the one-line summary keeps.
SUMMARY_FAILURE_CHARS: Final = 160


@dataclass(frozen=True)
class Exercise:
    name: str
    folder: Path
    solution: tuple[str, ...]
    tests: tuple[str, ...]

    @classmethod
    def load(cls, folder: Path) -> Exercise:
        config = json.loads((folder / ".meta" / "config.json").read_text())
        return cls(folder.name, folder, tuple(config["solution"]), tuple(config["test"]))

    @property
    def file_list(self) -> str:
        return " ".join(Path(name).name for name in self.solution)

    def instructions(self) -> str:
        """The exercise's text, as Aider's benchmark puts it together."""
        docs = self.folder / ".docs"
        parts = ["introduction.md", "instructions.md", "instructions.append.md"]
        return "".join((docs / part).read_text() for part in parts if (docs / part).exists())

    def first_prompt(self) -> str:
        return self.instructions() + INSTRUCTIONS_ADDENDUM.format(file_list=self.file_list)

    def retry_prompt(self, test_output: str) -> str:
        return test_output + TEST_FAILURES.format(file_list=self.file_list)

    def copy_stubs(self, project: Path) -> None:
        """The stub files into ``project``, writable (the exercise's own may be read-only)."""
        for name in self.solution:
            target = project / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((self.folder / name).read_bytes())


def exercise_names(list_file: Path) -> list[str]:
    """The names a list file holds, one a line (blank lines and ``#`` comments skipped)."""
    lines = (line.split("#", 1)[0].strip() for line in list_file.read_text().splitlines())
    return [line for line in lines if line]


@dataclass(frozen=True)
class TestRun:
    passed: bool
    output: str
    """pytest's output, cleaned as Aider's benchmark cleans it and trimmed."""
    summary: str
    """One line: pytest's last, or what stopped the run."""


def run_tests(exercise: Exercise, project: Path, folder: Path, timeout: float = TEST_TIMEOUT_SECS) -> TestRun:
    """The exercise's tests on a copy of the solution files in ``project``, in ``folder``
    (made afresh): ``python -m pytest -q``, at most ``timeout`` seconds."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in exercise.solution:
        if (project / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(project / name, folder / name)
    for name in exercise.tests:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes((exercise.folder / name).read_bytes())
    # A pytest the benchmark itself runs under must not hand its own settings to this one.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *exercise.tests]
    try:
        done = subprocess.run(
            command,
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return TestRun(False, "Tests timed out!", f"tests timed out after {timeout:.0f} s")
    output = clean_output(done.stdout.decode(errors="replace"), folder, exercise.name)
    (folder / "pytest.out").write_text(output)
    return TestRun(done.returncode == 0, trim(output), summarize(output, done.returncode))


def clean_output(output: str, folder: Path, name: str) -> str:
    """Aider's ``cleanup_test_output``: no timings (they differ run to run), and the test
    folder named as the exercise."""
    return re.sub(r"\bin \d+\.\d+s\b", "", output).replace(str(folder), name)


def trim(output: str, limit: int = TEST_OUTPUT_CHARS, tail: int = TEST_OUTPUT_TAIL_CHARS) -> str:
    if len(output) <= limit:
        return output
    head = limit - tail
    cut = len(output) - limit
    return f"{output[:head]}\n[… {cut} characters of the test output cut …]\n{output[-tail:]}"


def summarize(output: str, code: int) -> str:
    """pytest's last line (``2 failed, 5 passed``), and the first failure it lists when one
    failed (``bob_test.py::BobTest::test_x - AssertionError: …``, cut short)."""
    lines = [line.strip(" =") for line in output.splitlines() if line.strip(" =")]
    if not lines:
        return f"pytest exited {code} and printed nothing"
    first = next((line for line in lines if line.startswith(("FAILED ", "ERROR "))), None)
    if code == 0 or first is None:
        return lines[-1]
    return f"{lines[-1]} ({first.removeprefix('FAILED ')[:SUMMARY_FAILURE_CHARS]})"

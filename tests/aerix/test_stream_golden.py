"""What a session leaves behind, byte for byte: a characterisation test of the session stream.

Three processes of the real console script against a real scripted pool (the real tokenizer,
template and constraints; answers chosen here): a stream-json input holding one session over two
prompts (an ``edit`` that delegates a piece, then an ``answer`` that notes and pins in its context),
then ``-p --resume`` of it, then ``-p --resume --fork-session`` of it. Every byte they leave is
compared with ``tests/fixtures/golden/stream.json``: each session's log, its Claude Code transcript
and its subagents' files, the project's ``index.json``, and each process's stdout and stderr.

What differs from run to run by nature is put in words first (``normalised``): UUIDs become
``<uuid-N>`` in the order they first appear (so a link between two records still has to hold),
commit hashes ``<commit>`` (two commits made in the same second may or may not be one), times
``<time>``, durations ``<ms>`` (and so the index's size of a log, which holds times), the temporary
folder ``<root>`` and the project named after it ``<project>``.
Everything else has to stay as it was, so a change meant to keep behaviour (how the stream reaches
its views) can show that it did.

``AERIX_GOLDEN_WRITE=1`` writes the file anew instead of comparing (the change must mean to change
what a session leaves, and say so).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.aerix.request_world import World, aerix, make_project, make_world, start_scripted_pool, stop_pool
from tests.fixture_files import FIXTURES_ROOT

pytestmark = [pytest.mark.e2e]

GOLDEN = FIXTURES_ROOT / "golden" / "stream.json"
SESSION = "5f0c6a2e-6f0e-4b8e-9d3c-2b7a1c4e8d10"
FORK = "7e1b9c3d-2a4f-4c6e-8b5d-9f0a1e2c3b4d"


def _turn(thought: str, *calls: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": tool, "input": args} for tool, args in calls]})


def _final(thought: str, text: Any) -> str:
    return json.dumps({"thought": thought, "final": text})


BRIEF = "Create hello.txt holding the line hi."
CHECK = "cat hello.txt prints hi"
SCRIPT = [
    # The first prompt: routed edit, the root delegates a piece (an implementer, its verifier).
    "edit",
    _turn("Delegate the file.", ("agent", {"brief": BRIEF, "check": CHECK})),
    _turn("Write it.", ("write", {"path": "hello.txt", "content": "hi\n"})),
    _final("Written.", "I wrote hello.txt."),
    _turn("Run the check.", ("bash", {"command": "cat hello.txt"})),
    _final("It prints hi.", {"verdict": "pass", "reason": "cat printed hi"}),
    _final("The piece passed.", "hello.txt is in place."),
    # The second prompt, on the held session: a note, a pin, an edit of a file, the answer.
    "answer",
    _turn("Keep a note.", ("context", {"op": "note", "text": "hello.txt holds hi"})),
    _turn("Pin it and edit.", ("context", {"op": "pin", "ids": ["a1.c1"]}), ("read", {"path": "a.txt"})),
    _turn("Add a line.", ("write", {"path": "a.txt", "content": "one\ntwo\n"})),
    _final("Done.", "a.txt has two lines."),
    # -p --resume: the root rebuilt from the log.
    "answer",
    _final("Recalled.", "hello.txt and a.txt changed."),
    # -p --resume --fork-session: the copy.
    "answer",
    _final("Forked.", "This is the copy."),
]


def _prompt(text: str) -> str:
    return json.dumps(
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
    )


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[tuple[World, Path, Path]]:
    socket = tmp_path / "run" / "pool.sock"
    world = make_world(
        tmp_path / "world", {"pool": {"socket": str(socket)}, "context": {"max_new_tokens": 256}}
    )
    proj = make_project(tmp_path / "proj", {"a.txt": "one\n", "README.md": "# Demo\n"})
    (proj / ".git" / "info" / "exclude").write_text(".aerix/\n")
    try:
        yield world, proj, socket
    finally:
        stop_pool(world, socket)


def _left_behind(world: World, proj: Path, socket: Path) -> dict[str, Any]:
    """Run the three processes; every file and stdout they leave, by name."""
    start_scripted_pool(world, socket, SCRIPT)
    stdin = "\n".join([_prompt("create hello.txt"), _prompt("and note it")]) + "\n"
    stream = ("--output-format", "stream-json", "--input-format", "stream-json", "--session-id", SESSION)
    held = aerix(world, proj, *stream, stdin=stdin)
    assert held.returncode == 0, held.stderr
    resumed = aerix(world, proj, "-p", "what changed?", "--resume", SESSION, "--output-format", "stream-json")
    assert resumed.returncode == 0, resumed.stderr
    forked = aerix(
        world,
        proj,
        *("-p", "and the copy?", "--resume", SESSION, "--fork-session", "--session-id", FORK),
        *("--output-format", "json"),
    )
    assert forked.returncode == 0, forked.stderr
    done = (held, resumed, forked)
    left: dict[str, Any] = {"stdout": [run.stdout for run in done], "stderr": [run.stderr for run in done]}
    [project] = world.sessions.iterdir()  # named after the temporary folder: <project>
    for path in sorted(project.rglob("*")):
        if path.is_file() and path.suffix != ".lock":  # a lock file holds the pid of its holder
            left[str(path.relative_to(project))] = path.read_text().replace(project.name, "<project>")
    return left


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_COMMIT = re.compile(r"\b[0-9a-f]{40}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
#: Figures measured by the clock, as JSON fields: ``"duration_ms": 12.5``.
_MEASURED = re.compile(r'"(\w*(?:_ms|_secs|_s|Ms|_per_s)|log_bytes)": ?-?\d+(?:\.\d+)?(?:e-?\d+)?')


def normalised(text: str, root: Path, names: dict[str, str]) -> str:
    """``text`` with what differs from run to run by nature put in words; ``names`` numbers each
    UUID as it first appears, across every file of the run."""

    def named(match: re.Match[str]) -> str:
        value = match.group(0)
        if value in (SESSION, FORK):
            return value
        return names.setdefault(value, f"<uuid-{len(names) + 1}>")

    text = text.replace(str(root), "<root>")
    text = _UUID.sub(named, text)
    text = _COMMIT.sub("<commit>", text)
    text = _TIME.sub("<time>", text)
    return _MEASURED.sub(lambda match: f'"{match.group(1)}": "<ms>"', text)


def test_a_session_leaves_the_same_bytes(scripted: tuple[World, Path, Path], tmp_path: Path) -> None:
    world, proj, socket = scripted
    left = _left_behind(world, proj, socket)
    names: dict[str, str] = {}
    got = {
        name: (
            [normalised(text, tmp_path, names) for text in value]
            if isinstance(value, list)
            else normalised(value, tmp_path, names)
        )
        for name, value in left.items()
    }
    if os.environ.get("AERIX_GOLDEN_WRITE") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert got[name] == expected[name], name

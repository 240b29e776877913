"""Claude Code's own clients run for real on aerix's transcripts.

``ccusage`` (npm, pinned in tests/clients/package.json, installed by scripts/setup) reads
Claude Code's projects folder and sums each response's tokens once. Here it reads aerix's
transcripts, linked into a temporary ``CLAUDE_CONFIG_DIR`` by ``transcript.claude_projects``,
and its totals must be the session log's usage: for a new session (a scripted member through
the real daemon, with a turn that failed to parse, one the pool's guard stopped, and a turn of
two calls) and for a real
Claude Code session imported with ``aerix import claude``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.domain.claude_tools import claude_project_dir_name
from caldrix import limits
from tests.aerix.request_world import (
    World,
    aerix,
    make_project,
    make_world,
    session_events,
    start_scripted_pool,
    stop_pool,
)
from tests.fixture_files import claude_code_transcripts

pytestmark = [pytest.mark.model, pytest.mark.e2e]

CLIENTS = Path(__file__).resolve().parent.parent / "clients"
CCUSAGE = CLIENTS / "node_modules" / ".bin" / "ccusage"
SPOTTER = "4d5611e5-241a-462a-8d15-5122611a9569"

BAD_TURN = "Let me look first."  # not JSON: the turn does not parse and is asked again
#: A paragraph of some 200 tokens written over and over: the pool's guard stops it.
_NAMES = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")
LOOPING = "".join(f"I read {name}.py and it calls {name}_helper.\n" for name in (*_NAMES, "kilo")) * 8
TWO_CALLS = json.dumps(
    {
        "thought": "Read it and list the folder.",
        "calls": [
            {"tool": "read", "input": {"path": "a.txt"}},
            {"tool": "bash", "input": {"command": "ls"}},
        ],
    }
)
FINAL = json.dumps({"thought": "Done.", "final": "a.txt holds one line."})


def ccusage(config_dir: Path) -> dict[str, Any]:
    """``ccusage session --json`` over ``config_dir``'s projects: its totals."""
    if not CCUSAGE.exists():
        pytest.fail(f"ccusage is not installed at {CCUSAGE}: run scripts/setup (it needs npm, node >= 20)")
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_dir)}
    run = subprocess.run(
        [str(CCUSAGE), "session", "--json", "--offline"], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    totals: dict[str, Any] = json.loads(run.stdout)["totals"]
    return totals


def log_usage(events: list[dict[str, Any]]) -> dict[str, int]:
    """The session log's usage, in ccusage's terms."""
    usages = [event["usage"] for event in events if event["type"] == "message" and event.get("usage")]
    reused = sum(usage.get("recomputed_from") or 0 for usage in usages)
    cached = sum(usage.get("cache_creation_tokens") or 0 for usage in usages)
    return {
        "inputTokens": sum(usage["prompt_tokens"] for usage in usages) - reused - cached,
        "outputTokens": sum(usage["completion_tokens"] for usage in usages),
        "cacheCreationTokens": cached,
        "cacheReadTokens": reused,
    }


def token_totals(totals: dict[str, Any]) -> dict[str, int]:
    return {
        key: totals[key] for key in ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")
    }


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    socket = tmp_path / "run" / "pool.sock"
    settings = {
        "pool": {"socket": str(socket), "main_flags": {"ctx": 4096}},
        "transcript": {"claude_projects": True},
    }
    world = make_world(tmp_path, settings)
    try:
        yield world
    finally:
        stop_pool(world, socket)


def test_ccusage_counts_a_new_session_as_its_log_does(world: World) -> None:
    proj = make_project(world.root / "my_proj.x", {"a.txt": "one\n"})
    # A member without the json constraint, so the unparseable turn is generated as written.
    completions = ["investigate", BAD_TURN, LOOPING, TWO_CALLS, FINAL]
    start_scripted_pool(world, world.socket, completions, constraints=["one_of"])
    done = aerix(world, proj, "-p", "what is in a.txt?", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    session = json.loads(done.stdout)["session_id"]
    assert str(uuid.UUID(session)) == session  # a dashed UUID, as Claude Code's are
    events = session_events(world, session)
    # Every attempt the pool decoded is counted: the unparsed one and the stopped one too.
    attempts = [e for e in events if e["type"] == "message" and e["role"] == "assistant"]
    assert [(e["attempt"], bool(e.get("parse_error"))) for e in attempts][:3] == [
        (0, True),
        (1, True),
        (2, False),
    ]
    assert attempts[1]["parse_error"].startswith("stopped after")
    assert all(e["usage"]["completion_tokens"] > 0 for e in attempts)
    stopped = re.fullmatch(
        r"stopped after (\d+) tokens: the same (\d+)-token span .*", attempts[1]["parse_error"]
    )
    assert stopped is not None and 100 <= int(stopped.group(2)) <= limits.DEGENERATE_SPAN_MAX_TOKENS
    assert attempts[1]["usage"]["completion_tokens"] == int(stopped.group(1)) < 5 * int(stopped.group(2))

    # Written as the session went, beside the log, and linked where Claude Code keeps the cwd's.
    [folder] = [log.parent for log in world.sessions.glob(f"*/{session}.jsonl")]
    transcript = folder / f"{session}.claude.jsonl"
    link = (
        Path(world.env["CLAUDE_CONFIG_DIR"])
        / "projects"
        / claude_project_dir_name(str(proj))
        / f"{session}.jsonl"
    )
    assert link.is_symlink() and link.resolve() == transcript.resolve()
    assert link.parent.name == str(proj).replace("/", "-").replace("_", "-").replace(".", "-")
    written = transcript.read_bytes()
    records = [json.loads(line) for line in written.splitlines()]
    assert [r["message"]["content"][0]["type"] for r in records if r["type"] == "assistant"].count(
        "tool_use"
    ) == 2

    totals = ccusage(Path(world.env["CLAUDE_CONFIG_DIR"]))
    wanted = log_usage(events)
    assert wanted["outputTokens"] > 0 and wanted["inputTokens"] > 0 and wanted["cacheReadTokens"] > 0
    assert token_totals(totals) == wanted
    assert totals["totalTokens"] == sum(wanted.values())

    # A second request (--resume) appends to the same file; `aerix sessions rebuild` writes the
    # same bytes the session wrote as it went.
    stop_pool(world, world.socket)
    start_scripted_pool(world, world.socket, ["answer", FINAL])
    again = aerix(world, proj, "-p", "and now?", "--resume", session, "--output-format", "json")
    assert again.returncode == 0, again.stderr
    written_again = transcript.read_bytes()
    assert written_again.startswith(written) and len(written_again) > len(written)
    assert token_totals(ccusage(Path(world.env["CLAUDE_CONFIG_DIR"]))) == log_usage(
        session_events(world, session)
    )
    rebuilt = aerix(world, proj, "sessions", "rebuild", session)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert transcript.read_bytes() == written_again
    # Removing the session removes its link too.
    removed = aerix(world, proj, "sessions", "rm", session)
    assert removed.returncode == 0, removed.stderr
    assert not link.is_symlink()


def test_ccusage_counts_an_imported_session_as_the_original(world: World, tmp_path: Path) -> None:
    fixtures = claude_code_transcripts()
    source = tmp_path / "source-claude"
    original = source / "projects" / "-home-USER-projects-spotter-worktrees-spotter-dov"
    (original / SPOTTER / "subagents").mkdir(parents=True)
    shutil.copy(fixtures / "spotter_main.jsonl", original / f"{SPOTTER}.jsonl")
    shutil.copy(fixtures / "spotter_sub.jsonl", original / SPOTTER / "subagents" / "agent-a2898e3.jsonl")
    shutil.copy(
        fixtures / "spotter_compact.jsonl", original / SPOTTER / "subagents" / "agent-acompact-e1f845.jsonl"
    )
    here = make_project(tmp_path / "here", {"a.txt": "one\n"})

    imported = aerix(world, here, "import", "claude", str(source))
    assert imported.returncode == 0, imported.stderr
    rebuilt = aerix(world, here, "sessions", "rebuild", SPOTTER)  # links it into CLAUDE_CONFIG_DIR
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    events = session_events(world, SPOTTER)

    ours = ccusage(Path(world.env["CLAUDE_CONFIG_DIR"]))
    assert token_totals(ours) == log_usage(events)
    # Each response counted once, with the usage of its line that has the most output tokens
    # (Claude Code repeats a response's usage on each of its lines as it streams).
    best: dict[str, dict[str, int]] = {}
    for path in original.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            message = json.loads(line).get("message")
            if isinstance(message, dict) and isinstance(message.get("usage"), dict):
                kept = best.get(message["id"])
                if kept is None or message["usage"]["output_tokens"] >= kept["output_tokens"]:
                    best[message["id"]] = message["usage"]
    assert ours["outputTokens"] == sum(usage["output_tokens"] for usage in best.values())
    # ccusage on the original keeps the first line of each response: the same prompt side, and
    # output counts that may be cut short where a later line of the response had more.
    theirs = ccusage(source)
    for key in ("inputTokens", "cacheCreationTokens", "cacheReadTokens"):
        assert ours[key] == theirs[key], key
    assert ours["outputTokens"] >= theirs["outputTokens"]
    # The model ids were kept, so ccusage prices the imported session (more output, more cost).
    assert ours["totalCost"] >= theirs["totalCost"] > 0


def test_a_projects_folder_that_cannot_be_written_is_one_note(world: World) -> None:
    """The transcript is a projection: when it cannot be linked (``projects`` is a file here)
    the request says so in one line and finishes; the log is whole, and a rebuild reports
    the same problem as a line, not a traceback."""
    proj = make_project(world.root / "proj", {"a.txt": "one\n"})
    config = Path(world.env["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "projects").write_text("not a folder\n")
    start_scripted_pool(world, world.socket, ["investigate", FINAL])
    done = aerix(world, proj, "-p", "what is in a.txt?", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    notes = [
        line for line in done.stderr.splitlines() if "Claude Code transcript could not be written" in line
    ]
    assert len(notes) == 1 and "the session log is kept" in notes[0]
    assert "Traceback" not in done.stderr
    session = json.loads(done.stdout)["session_id"]
    assert session_events(world, session)[-1]["type"] == "session.end"

    rebuilt = aerix(world, proj, "sessions", "rebuild", session)
    assert rebuilt.returncode == 1 and "Traceback" not in rebuilt.stderr
    assert "not linked into Claude Code's projects folder" in rebuilt.stdout

"""``aerix -p`` end to end: the real console script, a real caldrix pool started by autostart on
the embedded model, in a temporary git repository; the session log read back from disk.

The model is tiny, so what it answers is not checked, only that the machinery ran: a route, the
root's segments with the pool's counts, turns carrying the pool's usage, ``session.end`` with a
named outcome. Cases that need a particular answer (budget, the diff of a write) run on
caldrix's scripted member, which plays back given completions through the real tokenizer,
template and constraints.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.clock import utc_now
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.writer import start_session
from aerix.domain.attachments import attachment_text
from aerix.domain.bounds import EXIT_USAGE
from aerix.domain.session import CLAUDE_CODE_TAG
from tests.aerix.request_world import (
    AERIX,
    World,
    aerix,
    make_project,
    make_world,
    on_a_terminal,
    reported_turns,
    scripted_project,
    session_events,
    start_scripted_pool,
    stop_pool,
)

pytestmark = [pytest.mark.model, pytest.mark.e2e]

OUTCOMES = {"done", "failed", "killed", "budget"}
EXIT_OF = {"done": 0, "failed": 1, "budget": 2, "killed": 3}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("request")
    settings = {
        "pool": {"socket": str(root / "run" / "pool.sock"), "main_flags": {"ctx": 4096}},
        # Small turns and budgets: a weak model's rambling must not cost minutes.
        "context": {"max_new_tokens": 96},
        "delegation": {"max_turns": 3},
    }
    world = make_world(root, settings)
    try:
        yield world
    finally:
        stop_pool(world, world.socket)


@pytest.fixture(scope="module")
def project(world: World) -> Path:
    files = {"README.md": "# Demo\nA demo project.\n", "AGENTS.md": "Be brief.\n"}
    return make_project(world.root / "proj", files)


@pytest.fixture(scope="module")
def first(world: World, project: Path) -> dict[str, Any]:
    """The first request in the project: it autostarts the pool."""
    done = aerix(world, project, "-p", "What is this project?", "--output-format", "json")
    assert done.stdout.strip(), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    result["_exit"] = done.returncode
    result["_stderr"] = done.stderr
    return result


def by_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def test_first_request_writes_a_complete_session(world: World, first: dict[str, Any]) -> None:
    assert first["outcome"] in OUTCOMES and first["_exit"] == EXIT_OF[first["outcome"]]
    assert first["type"] == "result" and first["is_error"] == (first["outcome"] != "done")
    events = session_events(world, first["session_id"])
    types = [event["type"] for event in events]
    assert types[0] == "session.start" and types[-1] == "session.end"
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))

    [route] = by_type(events, "route")
    assert route["choice"] in {"answer", "edit", "investigate", "plan"} and route["scores"]
    segments = [event for event in by_type(events, "segment") if event["agent"] == "a1"]
    assert [s["kind"] for s in segments[:3]] == ["system", "instructions", "prompt"]
    assert all(isinstance(s["tokens"], int) and s["tokens"] > 0 for s in segments)
    assert "# Tools" in segments[0]["text"] and "# Turns" in segments[0]["text"]
    assert "Be brief." in segments[1]["text"]

    turns = reported_turns(events, "a1")
    assert turns and all(m["usage"]["prompt_tokens"] > 0 for m in turns)
    assert turns[0]["usage"]["recomputed_from"] is not None
    [end] = by_type(events, "session.end")
    assert end["outcome"] == first["outcome"] and end["exit_code"] == first["_exit"]
    usage = first["usage"]  # Claude's keys: the rows computed, and those the prefix store gave back
    prompt_rows = usage["input_tokens"] + usage["cache_read_input_tokens"]
    assert prompt_rows >= sum(m["usage"]["prompt_tokens"] for m in turns)
    assert first["num_turns"] >= 1 and first["diff"]["in_git"] is True


def test_the_transcript_is_written_beside_the_log_and_nowhere_else_by_default(
    world: World, first: dict[str, Any]
) -> None:
    """Written as the session went (no hook asked, no rebuild); Claude Code's projects folder is
    left alone unless transcript.claude_projects is on."""
    [log] = list(world.sessions.glob(f"*/{first['session_id']}.jsonl"))
    records = [json.loads(line) for line in log.with_suffix(".claude.jsonl").read_text().splitlines()]
    assert records[0]["type"] == "user" and records[0]["sessionId"] == first["session_id"]
    assert any(record["type"] == "assistant" for record in records)
    assert not (Path(world.env["CLAUDE_CONFIG_DIR"]) / "projects").exists()


def test_the_first_request_started_the_pool(world: World, first: dict[str, Any]) -> None:
    log = world.pool_start_log.read_text()
    assert log.count(" starts: ") == 1
    assert f"pool --socket {world.socket} --load smollm2-135m --ctx 4096" in log
    # Started without --threads, its member computes on every CPU it may run on; the banner says so.
    threads = len(os.sched_getaffinity(0))
    [start] = by_type(session_events(world, first["session_id"]), "session.start")
    assert start["threads"] == threads
    assert f"smollm2-135m, 4096 tokens, {threads} thread" in first["_stderr"]


def test_a_new_session_in_the_same_directory_resumes_after_the_shared_prefix(
    world: World, project: Path, first: dict[str, Any]
) -> None:
    done = aerix(world, project, "-p", "List the files here.", "--output-format", "json")
    second = json.loads(done.stdout)
    assert second["session_id"] != first["session_id"]
    events = session_events(world, second["session_id"])
    shared = sum(s["tokens"] for s in by_type(events, "segment") if s["kind"] in ("system", "instructions"))
    usage = reported_turns(events)[0]["usage"]
    # The system and instruction rows come from the prefix store; only the prompt is computed.
    assert usage["recomputed_from"] >= shared - 8
    assert usage["prompt_tokens"] - usage["recomputed_from"] < usage["prompt_tokens"] // 4


def test_continue_appends_to_the_latest_session_as_stream_json(world: World, project: Path) -> None:
    args = ("-p", "Thanks. Anything else?", "--continue", "--output-format", "stream-json")
    done = aerix(world, project, *args)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    init, result = lines[0], lines[-1]
    assert init["type"] == "system" and init["subtype"] == "init" and init["resumed"] is True
    assert result["type"] == "result" and result["session_id"] == init["session_id"]
    assert result["request"] == init["request"] >= 2 and done.returncode == result["exit_code"]
    assert any(line["type"] == "system" and line.get("subtype") == "route" for line in lines)
    events = session_events(world, init["session_id"])
    starts = by_type(events, "session.start")
    assert [s["request"] for s in starts] == list(range(1, len(starts) + 1)) and starts[-1]["resumed"]
    [prompt] = [s for s in by_type(events, "segment") if s["id"] == f"a1.p{init['request']}"]
    assert prompt["kind"] == "prompt" and prompt["text"].startswith("Thanks.")
    assert len(by_type(events, "session.end")) == len(starts)
    # The rebuilt root starts with the rows the earlier requests left in the prefix store.
    latest = [e for e in events if e["seq"] > starts[-1]["seq"]]
    first_turn = reported_turns(latest)[0]
    system = next(s for s in by_type(events, "segment") if s["kind"] == "system")
    assert first_turn["usage"]["recomputed_from"] >= system["tokens"]


def test_resume_by_id_prefix_with_text_output(world: World, project: Path, first: dict[str, Any]) -> None:
    session = first["session_id"]
    done = aerix(world, project, "-p", "--resume", session[:12], stdin="One more question: why?\n")
    assert done.returncode in EXIT_OF.values()
    assert f"session {session} (resumed, request 2)" in done.stderr
    events = session_events(world, session)
    assert by_type(events, "session.start")[-1]["prompt"] == "One more question: why?\n"


def test_an_imported_session_is_refused_in_one_line(world: World, project: Path) -> None:
    files = SessionFiles(world.sessions)
    writer = start_session(
        files,
        utc_now,
        session="imported-1",
        project="claude-code",
        cwd=str(project),
        model="claude",
        prompt="hello",
        aerix_version="0.1.0",
        tags=[CLAUDE_CODE_TAG],
    )
    writer.close()
    files.log.close()
    done = aerix(world, project, "-p", "continue that", "--resume", "imported-1")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "cannot be resumed" in done.stderr


def test_an_empty_prompt_and_a_bad_flag_are_refused(world: World, project: Path) -> None:
    done = aerix(world, project, "-p", stdin="  \n")
    assert done.returncode == EXIT_USAGE and "prompt is empty" in done.stderr
    done = aerix(world, project, "-p", "x", "--max-turns", "0")
    assert done.returncode == EXIT_USAGE and "--max-turns" in done.stderr
    # A Claude Code script's stream-json line (which needs --verbose there) parses here too.
    done = aerix(world, project, "-p", "--output-format", "stream-json", "--verbose", stdin="")
    assert done.returncode == EXIT_USAGE and "prompt is empty" in done.stderr
    done = aerix(world, project, "-p", "x", "--no-such-flag")
    assert done.returncode == EXIT_USAGE and "unrecognized arguments: --no-such-flag" in done.stderr


DELEGATING_PROMPT = (
    'Call the agent tool now. Your answer must be exactly: {"thought": "Delegate the fix.", "calls": '
    '[{"tool": "agent", "input": {"brief": "In calc.py make add return a + b.", "check": '
    '"python3 -c \\"import calc; assert calc.add(2, 3) == 5\\""}}]}'
)


def test_an_edit_request_on_the_embedded_model_delegates_a_piece(world: World) -> None:
    """The real model, the real pool: the request delegates (the prompt spells out the call, a
    135M model copies it), the piece's agents run and end with named outcomes, and each one's
    first generation resumes from the stored shared prefix."""
    proj = make_project(world.root / "calc", {"calc.py": "def add(a, b):\n    return a - b\n"})
    (proj / ".aerix").mkdir()
    (proj / ".aerix" / "settings.json").write_text(json.dumps({"delegation": {"retries": 0}}))
    (proj / ".git" / "info" / "exclude").write_text(".aerix/\n")
    done = aerix(world, proj, "-p", DELEGATING_PROMPT, "--max-turns", "2", "--output-format", "json")
    result = json.loads(done.stdout)
    assert result["outcome"] in OUTCOMES and done.returncode == EXIT_OF[result["outcome"]], done.stderr
    events = session_events(world, result["session_id"])
    spawns = by_type(events, "agent.spawn")
    pieces = [s for s in spawns if s["kind"] != "root"]
    assert pieces and pieces[0]["agent"] == "a1.c1" and pieces[0]["kind"] == "implementer"
    ends = {e["agent"]: e for e in by_type(events, "agent.end")}
    assert all(ends[s["agent"]]["outcome"] in OUTCOMES for s in spawns)
    agent_results = [  # the calls that ran a piece (a repeat held as unchanged ran none)
        m
        for m in by_type(events, "message")
        if m["role"] == "tool" and m.get("tool") == "agent" and "unchanged_since" not in m
    ]
    assert agent_results
    for message in agent_results:
        body = json.loads(message["text"].split("\n", 1)[1])
        assert (
            set(body) == {"summary", "files_touched", "checks_run", "outcome"} and body["outcome"] in OUTCOMES
        )
    shared = sum(
        s["tokens"]
        for s in by_type(events, "segment")
        if s["agent"] == "a1" and s["kind"] in ("system", "instructions")
    )
    firsts: dict[str, dict[str, Any]] = {}
    for message in reported_turns(events):
        firsts.setdefault(message["agent"], message["usage"])
    for piece in pieces:
        assert firsts[piece["agent"]]["recomputed_from"] >= shared, piece["agent"]


# ---- on the scripted member ----------------------------------------------------------------------

WRITE_TURN = json.dumps(
    {
        "thought": "Write the file.",
        "calls": [{"tool": "write", "input": {"path": "hello.txt", "content": "hi\n"}}],
    }
)
FINAL_TURN = json.dumps({"thought": "Done.", "final": "I wrote hello.txt."})


@pytest.fixture
def scripted(world: World, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A project whose settings point at its own pool socket (started by each test)."""
    proj, socket = scripted_project(tmp_path)
    try:
        yield proj, socket
    finally:
        stop_pool(world, socket)


def test_text_output_is_the_answer_then_the_diff(world: World, scripted: tuple[Path, Path]) -> None:
    proj, socket = scripted
    (proj / "a.txt").write_text("one\nmine\n")  # the user's own edit, before the request
    start_scripted_pool(world, socket, ["answer", WRITE_TURN, FINAL_TURN])
    done = aerix(world, proj, "-p", "write hello.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "I wrote hello.txt.\n\nuntracked: hello.txt\n"
    assert (proj / "hello.txt").read_text() == "hi\n"


#: Read a.txt, then (a turn later: a write is refused until the file's text was in an earlier
#: turn's results) add a line to it.
EDIT_TURNS = [
    json.dumps({"thought": "Read it.", "calls": [{"tool": "read", "input": {"path": "a.txt"}}]}),
    json.dumps(
        {
            "thought": "Add a line.",
            "calls": [{"tool": "write", "input": {"path": "a.txt", "content": "one\ntwo\n"}}],
        }
    ),
]


def test_a_file_the_prompt_names_is_attached_to_it_and_may_be_written_at_once(
    world: World, scripted: tuple[Path, Path]
) -> None:
    """The prompt segment holds a.txt as ``read`` shows it, and the agent has seen it: its first
    turn's whole-file write is not refused."""
    proj, socket = scripted
    start_scripted_pool(world, socket, ["answer", EDIT_TURNS[1], FINAL_TURN])
    done = aerix(world, proj, "-p", "add a line to a.txt", "--output-format", "json")
    assert done.returncode == 0, done.stderr
    assert (proj / "a.txt").read_text() == "one\ntwo\n"
    [log] = list(world.sessions.glob(f"*/{json.loads(done.stdout)['session_id']}.jsonl"))
    events = [json.loads(line) for line in log.read_text().splitlines()]
    [prompt] = [e for e in events if e["type"] == "segment" and e["id"] == "a1.p1"]
    assert prompt["text"] == "add a line to a.txt\n\n" + attachment_text([("a.txt", "1\tone")])
    [write] = [e for e in events if e["type"] == "message" and e["role"] == "tool"]
    assert write["text"].startswith("[write c1]\nreplaced a.txt")


def test_on_a_terminal_the_diff_is_in_git_s_colours(world: World, scripted: tuple[Path, Path]) -> None:
    proj, socket = scripted
    start_scripted_pool(world, socket, ["answer", *EDIT_TURNS, FINAL_TURN])
    env = {name: value for name, value in world.env.items() if name not in ("NO_COLOR", "FORCE_COLOR")}
    code, out = on_a_terminal([AERIX, "-p", "add a line to a.txt"], proj, {**env, "TERM": "xterm-256color"})
    assert code == 0
    green, cyan, reset = "\x1b[32m", "\x1b[36m", "\x1b[0m"
    assert f"{cyan}@@ -1 +1,2 @@{reset}\n one\n{green}+two{reset}\n" in out, out


def test_a_request_that_changed_no_file_says_so(world: World, scripted: tuple[Path, Path]) -> None:
    """A ``done`` that did nothing is visible: text ends ``no files changed`` and the outcome
    line on stderr names the route, the turns and the pieces (none)."""
    proj, socket = scripted
    read_turn = json.dumps({"thought": "Look.", "calls": [{"tool": "read", "input": {"path": "a.txt"}}]})
    answer = json.dumps({"thought": "Read it.", "final": "a.txt holds one."})
    start_scripted_pool(world, socket, ["answer", read_turn, answer, "answer", answer])
    done = aerix(world, proj, "-p", "add a --verbose flag")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a.txt holds one.\n\nno files changed\n"
    [line] = [line for line in done.stderr.splitlines() if line.startswith("aerix: done")]
    assert line.startswith("aerix: done · route answer · 2 turns · no pieces · no files changed (session ")
    done = aerix(world, proj, "-p", "add a --verbose flag", "--output-format", "json")
    result = json.loads(done.stdout)
    assert (result["outcome"], result["files_changed"], result["pieces"]) == ("done", 0, [])
    assert result["outcome_line"] == "done · route answer · 1 turn · no pieces · no files changed"
    assert "aerix: done" not in done.stderr  # json that ended done keeps stderr to the banner


def test_out_of_turns_is_budget_with_exit_2(world: World, scripted: tuple[Path, Path]) -> None:
    proj, socket = scripted
    start_scripted_pool(world, socket, ["investigate", WRITE_TURN, WRITE_TURN])
    done = aerix(world, proj, "-p", "write hello.txt", "--max-turns", "1", "--output-format", "json")
    result = json.loads(done.stdout)
    assert done.returncode == 2
    # The failure's one line is on stderr in json too (docs/commands.md promises it).
    [line] = [line for line in done.stderr.splitlines() if line.startswith("aerix: budget")]
    assert line.startswith("aerix: budget: the turn budget ran out (1 turns) · route investigate · 1 turn · ")
    assert result["outcome_line"] in line
    assert (result["outcome"], result["subtype"], result["exit_code"]) == ("budget", "error_max_turns", 2)
    assert result["route"] == "investigate" and result["diff"]["untracked"] == ["hello.txt"]
    [end] = by_type(session_events(world, result["session_id"]), "session.end")
    assert (end["outcome"], end["exit_code"], end["untracked"]) == ("budget", 2, ["hello.txt"])


def test_an_edit_route_makes_the_root_a_limited_planner(world: World, scripted: tuple[Path, Path]) -> None:
    proj, socket = scripted
    # Its first final, with nothing handed out, is answered once with a note; the second stands.
    start_scripted_pool(world, socket, ["edit", FINAL_TURN, FINAL_TURN])
    done = aerix(world, proj, "-p", "change things", "--output-format", "json")
    result = json.loads(done.stdout)
    events = session_events(world, result["session_id"])
    [spawn] = by_type(events, "agent.spawn")
    assert result["route"] == "edit" and spawn["tools"] == ["repo_map", "agent", "plan", "context"]
    prompt = next(s for s in by_type(events, "segment") if s["kind"] == "prompt")
    assert "You are the planner" in prompt["text"]
    system = next(s for s in by_type(events, "segment") if s["kind"] == "system")
    assert "- bash:" in system["text"]  # the system segment still lists every tool


def test_continue_rebuilds_the_plan_and_init_shows_what_startup_found(
    world: World, scripted: tuple[Path, Path]
) -> None:
    """Request 1 writes a plan; request 2 (``--continue``) reads it back from the rebuilt root.
    The stream-json ``init`` line lists the project's plugin and skill."""
    proj, socket = scripted
    (proj / ".aerix" / "plugins" / "helper" / "commands").mkdir(parents=True)
    (proj / ".aerix" / "plugins" / "helper" / "commands" / "tidy.md").write_text("Tidy up.\n")
    (proj / ".aerix" / "skills" / "deploy").mkdir(parents=True)
    (proj / ".aerix" / "skills" / "deploy" / "SKILL.md").write_text("Deploy $ARGUMENTS.\n")
    write_plan = json.dumps(
        {
            "thought": "Plan first.",
            "calls": [{"tool": "plan", "input": {"op": "write", "text": "1. look\n2. fix"}}],
        }
    )
    read_plan = json.dumps({"thought": "Where was I?", "calls": [{"tool": "plan", "input": {"op": "read"}}]})
    start_scripted_pool(
        world,
        socket,
        [
            "investigate",
            write_plan,
            FINAL_TURN,
            "investigate",
            read_plan,
            FINAL_TURN,
        ],
    )
    first_run = aerix(world, proj, "-p", "plan the fix", "--output-format", "json")
    assert first_run.returncode == 0, first_run.stderr
    done = aerix(world, proj, "-p", "go on", "--continue", "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    init = lines[0]
    assert init["subtype"] == "init" and init["resumed"] is True and init["request"] == 2
    assert init["session_id"] == json.loads(first_run.stdout)["session_id"]
    assert [(p["name"], p["commands"], p["enabled"]) for p in init["plugins"]] == [("helper", ["tidy"], True)]
    # The enabled plugin's command is a skill of its own name.
    assert init["skills"] == ["deploy", "helper:tidy"] and "plan" in init["tools"]
    starts = by_type(session_events(world, init["session_id"]), "session.start")
    assert [start["loaded"]["plugins"] for start in starts] == [["helper"], ["helper"]]
    assert all(start["loaded"]["skills"] == ["deploy", "helper:tidy"] for start in starts)
    [result] = [line for line in lines if line["type"] == "user"]
    [block] = result["message"]["content"]
    assert block["tool_use_id"] == "toolu_a1_c2" and block["content"] == "[plan c2]\n1. look\n2. fix"


def test_a_session_store_that_cannot_be_used_is_one_line(
    world: World, scripted: tuple[Path, Path], tmp_path: Path
) -> None:
    """XDG_DATA_HOME naming a file: the request fails in one line (and as the json result's
    reason), not a traceback, once the pool is bound and the session cannot be created."""
    proj, socket = scripted
    start_scripted_pool(world, socket, [FINAL_TURN])
    not_a_folder = tmp_path / "data-is-a-file"
    not_a_folder.write_text("")
    broken = World(world.root, {**world.env, "XDG_DATA_HOME": str(not_a_folder)})
    done = aerix(broken, proj, "-p", "say hi", "--output-format", "json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    # The profile beside the store cannot be used either: its own line first, the embedded
    # prompts would have been used; then the store's line ends the request.
    profile_note, *_, store_line = done.stderr.splitlines()
    assert profile_note.startswith(f"aerix: profile default ({not_a_folder}/aerix/profiles/default.git)")
    assert store_line.startswith(f"aerix: cannot use {not_a_folder}/aerix/sessions/")
    assert "(Not a directory); check that path and its permissions" in json.loads(done.stdout)["reason"]

"""The Claude Agent SDK (``claude-agent-sdk``, a real client of Claude Code) against aerix.

Its own parser reads every line of aerix's ``json`` and ``stream-json``; its ``query()`` and
``ClaudeSDKClient`` run aerix as their CLI (``cli_path``), with the command line and the stdin
control protocol they speak to Claude Code. The requests run on caldrix's scripted member (a real
pool on a real socket playing back the given turns through the real tokenizer and constraints).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    get_session_messages,
    list_sessions,
    query,
)
from claude_agent_sdk import __version__ as SDK_VERSION
from claude_agent_sdk._internal.message_parser import parse_message

from aerix.domain.bounds import EXIT_USAGE
from tests.aerix.request_world import (
    AERIX,
    World,
    aerix,
    make_world,
    scripted_project,
    session_events,
    start_scripted_pool,
    stop_pool,
)

pytestmark = pytest.mark.e2e

WRITE_TURN = json.dumps(
    {
        "thought": "Write the file.",
        "calls": [{"tool": "write", "input": {"path": "hello.txt", "content": "hi\n"}}],
    }
)
FINAL_TURN = json.dumps({"thought": "Done.", "final": "I wrote hello.txt."})
HI_TURN = json.dumps({"thought": "Greet.", "final": "Hi there."})


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("sdk"), {"context": {"max_new_tokens": 96}})


@pytest.fixture
def project(world: World, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A git project whose settings point at its own pool socket (each test starts its pool)."""
    proj, socket = scripted_project(tmp_path)
    try:
        yield proj, socket
    finally:
        stop_pool(world, socket)


def parsed_lines(stdout: str) -> list[tuple[dict[str, Any], Any]]:
    """Every stdout line, as JSON and as the SDK's parser makes it (it raises on a bad one)."""
    return [(data, parse_message(data)) for data in map(json.loads, stdout.splitlines())]


def test_every_stream_json_and_json_line_parses_with_the_sdks_parser(
    world: World, project: tuple[Path, Path]
) -> None:
    proj, socket = project
    start_scripted_pool(
        world, socket, ["answer", WRITE_TURN, FINAL_TURN, "answer", HI_TURN, "answer", HI_TURN]
    )
    done = aerix(world, proj, "-p", "write hello.txt", "--output-format", "stream-json", "--verbose")
    assert done.returncode == 0, done.stderr
    lines = parsed_lines(done.stdout)
    (init_data, init), *middle, (_, result) = lines
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert (
        init_data["claude_code_version"].count(".") == 2
        and init_data["permissionMode"] == "bypassPermissions"
    )
    assert {"Read", "Write", "Edit", "Bash", "Glob", "Grep", "Agent"} <= set(init_data["tools"])
    session = init_data["session_id"]
    assistants = [message for _, message in middle if isinstance(message, AssistantMessage)]
    users = [message for _, message in middle if isinstance(message, UserMessage)]
    assert [type(block) for block in assistants[0].content] == [ThinkingBlock, ToolUseBlock]
    call = assistants[0].content[1]
    assert isinstance(call, ToolUseBlock)
    assert (call.name, call.input) == (
        "Write",
        {"file_path": str(proj.resolve() / "hello.txt"), "content": "hi\n"},
    )
    assert all(m.model == "smollm2-135m" and m.session_id == session and m.uuid for m in assistants)
    assert all(m.message_id and m.usage and m.usage["output_tokens"] > 0 for m in assistants)
    assert [m.stop_reason for m in assistants] == ["tool_use", "end_turn"]
    [tool_result] = users[0].content
    assert isinstance(tool_result, ToolResultBlock) and tool_result.tool_use_id == call.id
    assert (
        isinstance(assistants[1].content[1], TextBlock)
        and assistants[1].content[1].text == "I wrote hello.txt."
    )
    # aerix's own events are system lines of their own subtypes.
    others = {data["subtype"] for data, message in middle if isinstance(message, SystemMessage)}
    assert {"route", "agent.spawn", "agent.end", "session.end"} <= others
    assert isinstance(result, ResultMessage) and result.subtype == "success" and not result.is_error
    assert (result.session_id, result.result, result.num_turns, result.total_cost_usd) == (
        session,
        "I wrote hello.txt.",
        2,
        0,
    )
    assert isinstance(result.duration_ms, int) and isinstance(result.duration_api_ms, int)
    assert result.permission_denials == [] and result.uuid
    events = session_events(world, session)
    generated = [e["usage"] for e in events if e["type"] == "message" and e["role"] == "assistant"]
    assert result.usage is not None
    assert result.usage["output_tokens"] == sum(u["completion_tokens"] for u in generated)
    assert result.usage["input_tokens"] + result.usage["cache_read_input_tokens"] == sum(
        u["prompt_tokens"] for u in generated
    )

    # json: one result object, which parses too.
    done = aerix(world, proj, "-p", "say hi", "--output-format", "json")
    [(data, parsed)] = parsed_lines(done.stdout)
    assert isinstance(parsed, ResultMessage) and parsed.result == "Hi there." and data["outcome"] == "done"

    # stream-json output without -p is a headless run too, the prompt read from stdin.
    done = aerix(world, proj, "--output-format", "stream-json", stdin="say hi again\n")
    *_, (_, last) = parsed_lines(done.stdout)
    assert done.returncode == 0 and isinstance(last, ResultMessage) and last.result == "Hi there."
    assert session_events(world, last.session_id)[0]["prompt"] == "say hi again\n"


def test_the_transcript_names_each_call_as_stream_json_does(world: World, project: tuple[Path, Path]) -> None:
    """One tool id, one tool name and one input per call, in stream-json and in the transcript."""
    proj, socket = project
    start_scripted_pool(world, socket, ["answer", WRITE_TURN, FINAL_TURN])
    done = aerix(world, proj, "-p", "write hello.txt", "--output-format", "stream-json")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    session = lines[0]["session_id"]
    rebuilt = aerix(world, proj, "sessions", "rebuild", session)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    [transcript] = list(world.sessions.glob(f"*/{session}.claude.jsonl"))
    records = [json.loads(line) for line in transcript.read_text().splitlines()]

    def tool_uses(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            b
            for i in items
            if i["type"] == "assistant"
            for b in i["message"]["content"]
            if b["type"] == "tool_use"
        ]

    def results(items: list[dict[str, Any]]) -> list[str]:
        return [
            b["tool_use_id"]
            for i in items
            if i["type"] == "user" and isinstance(i["message"]["content"], list)
            for b in i["message"]["content"]
        ]

    assert tool_uses(lines) == tool_uses(records) and len(tool_uses(lines)) == 1
    assert results(lines) == results(records) == [tool_uses(lines)[0]["id"]]
    # One generation, one message.id (the transcript may split it into a record per block).
    stream_ids = [line["message"]["id"] for line in lines if line["type"] == "assistant"]
    record_ids = [r["message"]["id"] for r in records if r["type"] == "assistant"]
    assert stream_ids == list(dict.fromkeys(record_ids))


def test_query_runs_aerix_as_its_cli(world: World, project: tuple[Path, Path]) -> None:
    """``query()`` with ``cli_path`` set to aerix: the SDK's own command line, its initialize
    request and prompt line on stdin; it yields the request's messages and result."""
    proj, socket = project
    start_scripted_pool(world, socket, ["answer", WRITE_TURN, FINAL_TURN])
    stderr: list[str] = []
    options = ClaudeAgentOptions(
        cli_path=AERIX,
        cwd=proj,
        env=world.env,
        max_turns=4,
        model="claude-sonnet-4-5",
        effort="low",
        include_partial_messages=True,
        stderr=stderr.append,
    )

    async def run() -> list[Any]:
        return [message async for message in query(prompt="write hello.txt", options=options)]

    messages = anyio.run(run)
    kinds = [type(message).__name__ for message in messages]
    assert kinds[0] == "SystemMessage" and kinds[-1] == "ResultMessage"
    assert "AssistantMessage" in kinds and "UserMessage" in kinds
    result = messages[-1]
    assert (
        isinstance(result, ResultMessage)
        and result.subtype == "success"
        and result.result == "I wrote hello.txt."
    )
    assert (proj / "hello.txt").read_text() == "hi\n"
    events = session_events(world, result.session_id)
    assert events[0]["prompt"] == "write hello.txt" and events[-1]["outcome"] == "done"
    [spawn] = [e for e in events if e["type"] == "agent.spawn"]
    assert spawn["max_turns"] == 4  # the SDK's max_turns reached the root
    # The flags aerix does not act on are named, once, in one note.
    [note] = [line for line in stderr if line.startswith("aerix: ignored")]
    assert all(flag in note for flag in ("--model", "--effort", "--include-partial-messages"))
    assert "--system-prompt" not in note  # the SDK's default empty one leaves aerix's in place


def test_query_with_disallowed_tools_and_tools_is_held_to_them(
    world: World, project: tuple[Path, Path]
) -> None:
    """``disallowed_tools`` and ``tools`` of ``ClaudeAgentOptions`` reach aerix as the SDK
    passes them (``--disallowedTools Bash(touch:*),WebFetch``, ``--tools Read,Write,Bash``): the
    init line lists only the tools left, the denied call does not run, and the ResultMessage's
    ``permission_denials`` names it."""
    proj, socket = project
    touch = json.dumps(
        {"thought": "Touch it.", "calls": [{"tool": "Bash", "input": {"command": "touch made.txt"}}]}
    )
    start_scripted_pool(world, socket, ["investigate", touch, WRITE_TURN, FINAL_TURN])
    stderr: list[str] = []
    options = ClaudeAgentOptions(
        cli_path=AERIX,
        cwd=proj,
        env=world.env,
        tools=["Read", "Write", "Bash", "WebFetch"],
        disallowed_tools=["Bash(touch:*)", "WebFetch"],
        stderr=stderr.append,
    )

    async def run() -> list[Any]:
        return [message async for message in query(prompt="make the files", options=options)]

    messages = anyio.run(run)
    [init] = [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init"]
    assert init.data["tools"] == ["Read", "Write", "Bash"]
    results = [
        b for m in messages if isinstance(m, UserMessage) for b in m.content if isinstance(b, ToolResultBlock)
    ]
    assert results[
        0
    ].is_error and "denied by the permission rule Bash(touch:*) (from --disallowedTools)" in str(
        results[0].content
    )
    assert not (proj / "made.txt").exists() and (proj / "hello.txt").read_text() == "hi\n"
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success", stderr
    assert result.permission_denials == [
        {"tool_name": "Bash", "tool_use_id": "toolu_a1_c1", "tool_input": {"command": "touch made.txt"}}
    ]
    assert not any("--disallowedTools" in line or "--tools" in line for line in stderr if "ignored" in line)


def test_a_client_runs_each_prompt_as_a_request_of_one_session(
    world: World, project: tuple[Path, Path]
) -> None:
    """``ClaudeSDKClient``: initialize's answer, two prompts over one process, one session."""
    proj, socket = project
    start_scripted_pool(world, socket, ["answer", HI_TURN, "answer", FINAL_TURN])
    (proj / ".aerix" / "skills" / "deploy").mkdir(parents=True)
    (proj / ".aerix" / "skills" / "deploy" / "SKILL.md").write_text("Deploy $ARGUMENTS.\n")
    options = ClaudeAgentOptions(
        cli_path=AERIX,
        cwd=proj,
        env=world.env,
        system_prompt={"type": "preset", "preset": "claude_code", "append": "Answer in English."},
    )

    async def run() -> tuple[dict[str, Any] | None, list[Any], list[Any]]:
        async with ClaudeSDKClient(options) as client:
            info = await client.get_server_info()
            await client.query("say hi")
            first = [message async for message in client.receive_response()]
            await client.query("and now?")
            second = [message async for message in client.receive_response()]
        return info, first, second

    info, first, second = anyio.run(run)
    assert info is not None and [command["name"] for command in info["commands"]] == ["deploy"]
    one, two = first[-1], second[-1]
    assert isinstance(one, ResultMessage) and isinstance(two, ResultMessage)
    assert (one.result, two.result) == ("Hi there.", "I wrote hello.txt.")
    assert one.session_id == two.session_id
    starts = [e for e in session_events(world, one.session_id) if e["type"] == "session.start"]
    assert [(s["request"], s["prompt"]) for s in starts] == [(1, "say hi"), (2, "and now?")]
    system = next(e for e in session_events(world, one.session_id) if e["type"] == "segment")
    assert system["kind"] == "system" and system["text"].endswith("\n\nAnswer in English.")


def test_the_control_protocol_answers_and_refuses_in_its_own_lines(
    world: World, project: tuple[Path, Path]
) -> None:
    """Written by hand, as any client may: initialize answered, an unknown control request and
    an unsupported one answered with subtype error, a bad line noted, the prompt run, exit at
    the end of stdin."""
    proj, socket = project
    start_scripted_pool(world, socket, ["answer", HI_TURN])
    session = "9d9f6f39-55a2-4c57-9e93-6ad8a4a7f3a1"
    lines = [
        {"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize", "hooks": None}},
        {"type": "control_request", "request_id": "r2", "request": {"subtype": "no_such_request"}},
        {"type": "control_request", "request_id": "r3", "request": {"subtype": "set_model", "model": "x"}},
        {"type": "keep_alive"},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "say hi"}]}},
    ]
    stdin = "\n".join([json.dumps(lines[0]), "{not json", *map(json.dumps, lines[1:])]) + "\n"
    args = ("--output-format", "stream-json", "--input-format", "stream-json", "--session-id", session)
    done = aerix(world, proj, *args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    answers = {o["response"]["request_id"]: o["response"] for o in out if o["type"] == "control_response"}
    assert answers["r1"]["subtype"] == "success" and "commands" in answers["r1"]["response"]
    assert answers["r2"]["subtype"] == "error" and "no_such_request" in answers["r2"]["error"]
    assert answers["r3"]["subtype"] == "error" and "pool.main" in answers["r3"]["error"]
    assert "stdin line 2: not JSON" in done.stderr and "Traceback" not in done.stderr
    assert (
        out[-1]["type"] == "result" and out[-1]["session_id"] == session and out[-1]["result"] == "Hi there."
    )
    again = aerix(world, proj, "-p", "again", "--session-id", session)
    assert again.returncode == EXIT_USAGE and f"session {session} already exists" in again.stderr


def test_the_sdk_version_is_the_one_the_docs_name() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "commands.md").read_text()
    assert f"claude-agent-sdk {SDK_VERSION}" in docs


SLEEP_TURN = json.dumps(
    {
        "thought": "Wait for it.",
        "calls": [{"tool": "bash", "input": {"command": "sleep 60", "timeout_secs": 90}}],
    }
)


def test_an_interrupt_cancels_the_running_request_and_the_next_prompt_continues_its_session(
    world: World, project: tuple[Path, Path]
) -> None:
    """``client.interrupt()`` while a bash call runs: the request ends ``cancelled`` with an
    error result; the next prompt is a request of the same session."""
    proj, socket = project
    start_scripted_pool(world, socket, ["answer", SLEEP_TURN, "answer", HI_TURN])
    options = ClaudeAgentOptions(cli_path=AERIX, cwd=proj, env=world.env)

    async def run() -> tuple[list[Any], list[Any]]:
        async with ClaudeSDKClient(options) as client:
            await client.query("wait a minute")
            first: list[Any] = []
            async for message in client.receive_response():
                first.append(message)
                if isinstance(message, AssistantMessage) and any(
                    isinstance(block, ToolUseBlock) and block.name == "Bash" for block in message.content
                ):
                    await client.interrupt()
            await client.query("say hi")
            second = [message async for message in client.receive_response()]
        return first, second

    first, second = anyio.run(run)
    stopped, answered = first[-1], second[-1]
    assert isinstance(stopped, ResultMessage) and isinstance(answered, ResultMessage)
    assert stopped.subtype == "error_during_execution" and stopped.is_error
    assert stopped.errors and "interrupt" in stopped.errors[0]
    assert answered.result == "Hi there." and answered.session_id == stopped.session_id
    events = session_events(world, stopped.session_id)
    ends = [e for e in events if e["type"] == "session.end"]
    assert [(e["outcome"], e["exit_code"]) for e in ends] == [("cancelled", 130), ("done", 0)]
    # The bash call was stopped while it ran: it has no result in the interrupted request.
    results = [e for e in events if e["type"] == "message" and e["role"] == "tool"]
    assert not [e for e in results if e["seq"] < ends[0]["seq"]]


def test_the_sdks_session_readers_find_aerix_sessions(
    world: World, project: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``transcript.claude_projects`` on, ``list_sessions`` and ``get_session_messages``
    (which read Claude Code's projects folder) find an aerix session and its conversation."""
    proj, socket = project
    settings = json.loads((proj / ".aerix" / "settings.json").read_text())
    settings["transcript"] = {"claude_projects": True}
    (proj / ".aerix" / "settings.json").write_text(json.dumps(settings))
    start_scripted_pool(world, socket, ["answer", WRITE_TURN, FINAL_TURN])
    done = aerix(world, proj, "-p", "write hello.txt", "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    session = lines[0]["session_id"]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", world.env["CLAUDE_CONFIG_DIR"])
    [info] = [s for s in list_sessions(directory=str(proj)) if s.session_id == session]
    assert (info.first_prompt, info.cwd) == ("write hello.txt", str(proj.resolve()))
    messages = get_session_messages(session, directory=str(proj))
    assert messages[0].type == "user" and messages[0].message["content"] == "write hello.txt"
    read = [block for m in messages if m.type == "assistant" for block in m.message["content"]]
    streamed = [
        block for line in lines if line["type"] == "assistant" for block in line["message"]["content"]
    ]
    calls = [block for block in read if block["type"] == "tool_use"]
    assert calls == [block for block in streamed if block["type"] == "tool_use"] and len(calls) == 1
    texts = [block["text"] for block in read if block["type"] == "text"]
    assert texts[-1] == "I wrote hello.txt."

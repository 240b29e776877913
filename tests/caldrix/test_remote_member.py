"""A member on an OpenAI-compatible server, through the real daemon.

The server is llama-cpp-python's own (``python -m llama_cpp.server``) on the embedded model, on a
loopback port chosen at run time, with an API key. The pool runs the same model locally as
``main``, so the remote member's counts and greedy answers can be checked against caldrix's own:
the same rendered prompt on the same model must give the same tokens and the same text.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.caldrix.pool_harness import DEFAULT_MODEL, PoolProcess, RawConnection, raw_connection, start_pool
from tests.openai_server import OpenAIServer, free_port, start_server

pytestmark = [pytest.mark.e2e, pytest.mark.model]

API_KEY_ENV = "CALDRIX_TEST_SERVER_KEY"
API_KEY = "remote-member-test-key-5f3a"
SEGMENTS = [
    {"id": "sys", "role": "system", "text": "You are a brief assistant.", "pinned": True},
    {"id": "u1", "role": "user", "text": "Name three colours.", "pinned": False},
]
#: A request the model answers at length: a generation the client leaves must still be running
#: on the server when the pool's watcher (once a second) shuts its connection. On "Name three
#: colours." smollm2-135m stopped by itself after 78 tokens, in 0.6 s, before the watcher looked.
LONG_ANSWER = [
    SEGMENTS[0],
    {"id": "u1", "role": "user", "text": "Count from 1 to 1000, one number per line.", "pinned": False},
]
WINDOW = "4096"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remote")


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[OpenAIServer]:
    served = start_server(folder, api_key=API_KEY)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def pool(folder: Path, server: OpenAIServer) -> Iterator[PoolProcess]:
    """``main`` is the embedded model here; ``remote`` is the same model on the server."""
    env = {API_KEY_ENV: API_KEY}
    with _env(env):
        process = start_pool(folder, "--load", DEFAULT_MODEL, "--ctx", WINDOW, "--threads", "1")
    with raw_connection(process.socket_path, process.frames) as raw:
        reply = _request(raw, "member.load", name="remote", model=server.reference, flags=_flags())
        assert reply["op"] == "ok", reply
    yield process
    process.stop()


def _flags(**more: Any) -> dict[str, Any]:
    return {"ctx": int(WINDOW), "api_key_env": API_KEY_ENV, **more}


class _env:
    """Set environment variables for a child started inside the block."""

    def __init__(self, values: dict[str, str]) -> None:
        self._values = values

    def __enter__(self) -> None:
        import os

        self._saved = {k: os.environ.get(k) for k in self._values}
        os.environ.update(self._values)

    def __exit__(self, *exc: object) -> None:
        import os

        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_rids = iter(range(1, 1 << 30))


def _request(raw: RawConnection, op: str, **fields: Any) -> dict[str, Any]:
    rid = next(_rids)
    raw.send({"op": op, "rid": rid, **fields})
    reply = raw.receive()
    assert reply["rid"] == rid, reply
    return reply


def _generate(raw: RawConnection, context: str, **fields: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every frame of one generation: the token frames, then ``done`` or ``error``."""
    rid = next(_rids)
    raw.send({"op": "generate", "rid": rid, "context": context, **fields})
    tokens: list[dict[str, Any]] = []
    while True:
        frame = raw.receive()
        assert frame["rid"] == rid, frame
        if frame["op"] == "token":
            tokens.append(frame)
        elif frame["op"] in ("done", "error"):
            return tokens, frame


def _context(raw: RawConnection, member: str, segments: list[dict[str, Any]] = SEGMENTS) -> dict[str, Any]:
    reply = _request(raw, "context.create", member=member, segments=segments)
    assert reply["op"] == "ok", reply
    return reply


def _member(raw: RawConnection, name: str) -> dict[str, Any]:
    members = _request(raw, "member.list")["members"]
    return dict(next(m for m in members if m["name"] == name))


def test_the_member_object_names_the_server_and_counts_nothing_locally(
    pool: PoolProcess, server: OpenAIServer
) -> None:
    with raw_connection(pool.socket_path, pool.frames) as raw:
        member = _member(raw, "remote")
        memory = _request(raw, "member.list")["memory"]
        status = _request(raw, "pool.status")
    assert member["state"] == "ready" and member["model"] == server.reference
    assert member["footprint_bytes"] == 0 and member["n_ctx"] == int(WINDOW)
    assert member["remote"] == {
        "url": server.url,
        "server": "llama-cpp-python",
        "model": "smol",
        "reports_cached": False,
    }
    # llama-cpp-python's server takes GBNF grammars: JSON schemas and choices, not regex or Lark.
    assert member["constraints"] == ["json", "one_of"]
    main = next(m for m in status["members"] if m["name"] == "main")
    assert memory["used"] >= main["footprint_bytes"]  # main's weights; the remote adds none
    assert status["prefix_store"]["remote"]["budget"] == 0


def test_pool_status_shows_the_remote_member(pool: PoolProcess, server: OpenAIServer) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "caldrix", "pool", "status", "--socket", str(pool.socket_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"  remote: ready, {server.reference}, n_ctx {WINDOW}, 0 MiB, cpu, queue 0" in shown.stdout


def test_counts_come_from_the_servers_tokenizer_and_match_the_local_model(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as raw:
        local = _context(raw, "main")
        remote = _context(raw, "remote")
        edit = {
            "op": "append",
            "segment": {"id": "u2", "role": "user", "text": "And two fruits?", "pinned": False},
        }
        local_edit = _request(raw, "context.edit", context=local["context"], edits=[edit])
        remote_edit = _request(raw, "context.edit", context=remote["context"], edits=[edit])
    assert remote["segments"] == local["segments"] and remote["tokens"] == local["tokens"]
    assert remote_edit["segments"] == local_edit["segments"] and remote_edit["tokens"] == local_edit["tokens"]
    assert remote_edit["tokens"] > remote["tokens"]


def test_a_generation_streams_token_frames_and_matches_the_local_greedy_answer(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as raw:
        local = _context(raw, "main")
        remote = _context(raw, "remote")
        _, local_done = _generate(raw, local["context"], max_new_tokens=16)
        tokens, done = _generate(
            raw, remote["context"], max_new_tokens=16, append={"id": "a1", "pinned": False}
        )
        after = _request(raw, "context.get", context=remote["context"])
    assert done["op"] == "done", done
    assert len(tokens) > 1 and "".join(t["text"] for t in tokens) == done["text"]
    assert done["text"] == local_done["text"]
    assert done["prompt_tokens"] == remote["tokens"]
    assert done["completion_tokens"] == local_done["completion_tokens"]
    assert done["finish"] == local_done["finish"]
    # llama-cpp-python reports no cached tokens, so nothing is claimed as reused.
    assert done["recomputed_from"] == 0
    assert set(done["timings"]) == {"queue_ms", "prefill_ms", "decode_ms"}
    assert after["segments"][-1]["id"] == "a1" and after["segments"][-1]["text"] == done["text"]
    assert done["segment"] == {"id": "a1", "tokens": after["segments"][-1]["tokens"]}


def test_the_guard_stops_a_remote_generation_that_loops(pool: PoolProcess) -> None:
    """On a remote member each streamed piece is one token to the guard: a repeat is stopped
    there as on a local member (the same greedy text, the same reason), and nothing is appended.
    The model repeats a sentence only a few times, so the guard is asked for two repeats."""
    repeat = "Repeat after me, many times: I am a loop. I am a loop. I am a loop. I am a loop."
    segments = [SEGMENTS[0], {"id": "u1", "role": "user", "text": repeat, "pinned": False}]
    guard = {"repeats": 2, "run_min_tokens": 8}
    answers = []
    with raw_connection(pool.socket_path, pool.frames) as raw:
        for member in ("main", "remote"):
            created = _context(raw, member, segments)
            _, done = _generate(
                raw, created["context"], max_new_tokens=64, guard=guard, append={"id": "a1", "pinned": False}
            )
            after = _request(raw, "context.get", context=created["context"])
            assert done["finish"] == "degenerate" and done["segment"] is None, (member, done)
            assert [segment["id"] for segment in after["segments"]] == ["sys", "u1"]
            answers.append((done["text"], done["reason"]))
    assert answers[0] == answers[1]
    assert answers[0][0].startswith("I am a loop. I am a loop")
    assert re.fullmatch(r"the same \d+-token span repeated 2 times", answers[0][1])


def test_logprobs_come_back_when_asked(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as raw:
        remote = _context(raw, "remote")
        _, done = _generate(raw, remote["context"], max_new_tokens=4, logprobs=2)
    assert done["op"] == "done", done
    entries = done["logprobs"]
    assert entries and "".join(e["token"] for e in entries) == done["text"]
    for entry in entries:
        assert entry["logprob"] <= 0.0 and 1 <= len(entry["top"]) <= 2 + 1
        assert entry["top"] == sorted(entry["top"], key=lambda t: t["logprob"], reverse=True)


def test_a_one_of_constraint_gives_exactly_one_option(pool: PoolProcess) -> None:
    options = ["answer", "edit", "investigate", "plan"]
    segments = [
        *SEGMENTS[:1],
        {"id": "u1", "role": "user", "text": "Fix the bug in main.py.", "pinned": False},
    ]
    with raw_connection(pool.socket_path, pool.frames) as raw:
        remote = _context(raw, "remote", segments)
        _, done = _generate(raw, remote["context"], max_new_tokens=8, constraint={"one_of": options})
    assert done["op"] == "done", done
    assert done["text"] in options and done["finish"] == "stop"


def test_a_json_constraint_gives_a_valid_value_with_no_whitespace_around_it(pool: PoolProcess) -> None:
    schema = {
        "type": "object",
        "properties": {"colour": {"type": "string", "maxLength": 12}, "count": {"type": "integer"}},
        "required": ["colour", "count"],
    }
    with raw_connection(pool.socket_path, pool.frames) as raw:
        remote = _context(raw, "remote")
        tokens, done = _generate(raw, remote["context"], max_new_tokens=40, constraint={"json": schema})
    assert done["op"] == "done", done
    jsonschema.validate(json.loads(done["text"]), schema)
    assert done["text"] == done["text"].strip() and "".join(t["text"] for t in tokens) == done["text"]


def test_a_constraint_the_server_lacks_is_refused_in_one_line(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as raw:
        remote = _context(raw, "remote")
        _, error = _generate(raw, remote["context"], max_new_tokens=4, constraint={"regex": "[a-z]+"})
        # The connection goes on: a plain generation after the refusal is served.
        _, done = _generate(raw, remote["context"], max_new_tokens=2)
    assert error["op"] == "error" and error["code"] == "constraint_invalid"
    assert "regex" in error["message"] and "json, one_of" in error["message"]
    assert "\n" not in error["message"]
    assert done["op"] == "done"


def test_closing_the_connection_cancels_the_http_request(pool: PoolProcess, server: OpenAIServer) -> None:
    before = server.log().count("Disconnected from client")
    with raw_connection(pool.socket_path, pool.frames) as raw:
        remote = _context(raw, "remote", LONG_ANSWER)
        raw.send({"op": "generate", "rid": 1, "context": remote["context"], "max_new_tokens": 2000})
        while raw.receive()["op"] != "token":
            pass
    # The server notices the dropped HTTP request and stops generating; the member serves the next.
    with raw_connection(pool.socket_path, pool.frames) as raw:
        remote = _context(raw, "remote")
        _, done = _generate(raw, remote["context"], max_new_tokens=2)
    assert done["op"] == "done", done
    assert _wait_for(lambda: server.log().count("Disconnected from client") > before)
    assert "generation cancelled" in pool.log()


def test_unloading_stops_a_generation_on_the_server(pool: PoolProcess, server: OpenAIServer) -> None:
    with (
        raw_connection(pool.socket_path, pool.frames) as raw,
        raw_connection(pool.socket_path, pool.frames) as other,
    ):
        loaded = _request(other, "member.load", name="brief", model=server.reference, flags=_flags())
        assert loaded["op"] == "ok", loaded
        context = _context(raw, "brief")
        raw.send({"op": "generate", "rid": 9, "context": context["context"], "max_new_tokens": 2000})
        while raw.receive()["op"] != "token":
            pass
        unloaded = _request(other, "member.unload", name="brief")
        frame = raw.receive()
        while frame["op"] == "token":
            frame = raw.receive()
        names = [m["name"] for m in _request(other, "member.list")["members"]]
    assert unloaded["op"] == "ok", unloaded
    assert frame["op"] == "error" and frame["code"] == "member_not_found" and "unloaded" in frame["message"]
    assert "brief" not in names


def test_the_api_key_is_sent_but_never_logged(pool: PoolProcess, server: OpenAIServer) -> None:
    with raw_connection(pool.socket_path, pool.frames) as raw:
        refused = _request(raw, "member.load", name="nokey", model=server.reference, flags={"ctx": 512})
        unset = _request(
            raw, "member.load", name="unset", model=server.reference, flags={"api_key_env": "NOT_SET_X"}
        )
        status = _request(raw, "pool.status")
    assert refused["op"] == "error" and refused["code"] == "precheck_failed"
    assert refused["message"] == f"{server.url}/models answered HTTP 401: Invalid API key"
    assert unset["op"] == "error" and "NOT_SET_X" in unset["message"] and "not set" in unset["message"]
    assert API_KEY not in pool.log() and API_KEY not in json.dumps(status)


def test_a_server_that_is_not_there_is_one_line(pool: PoolProcess, folder: Path) -> None:
    gone = f"openai+http://127.0.0.1:{free_port()}/v1#smol"
    with raw_connection(pool.socket_path, pool.frames) as raw:
        reply = _request(raw, "member.load", name="gone", model=gone)
        names = [m["name"] for m in _request(raw, "member.list")["members"]]
    assert reply["op"] == "error" and reply["code"] == "precheck_failed"
    assert (
        reply["message"] == f"nothing answered at {gone[len('openai+') :].split('#')[0]} (connection refused)"
    )
    assert "gone" not in names
    # The same at the command line: one line, status 1, no traceback.
    started = subprocess.run(
        [sys.executable, "-m", "caldrix", "pool", "--socket", str(folder / "x.sock"), "--load", gone],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode == 1
    assert started.stderr.strip().splitlines()[-1].startswith("caldrix: ")
    assert "connection refused" in started.stderr and "Traceback" not in started.stderr


def test_a_server_that_dies_mid_stream_fails_that_generation_only(pool: PoolProcess, folder: Path) -> None:
    doomed = start_server(folder)
    try:
        with raw_connection(pool.socket_path, pool.frames) as raw:
            loaded = _request(raw, "member.load", name="doomed", model=doomed.reference, flags={"ctx": 2048})
            assert loaded["op"] == "ok", loaded
            context = _context(raw, "doomed")
            raw.send({"op": "generate", "rid": 7, "context": context["context"], "max_new_tokens": 1500})
            while raw.receive()["op"] != "token":
                pass
            doomed.kill()
            frame = raw.receive()
            while frame["op"] == "token":
                frame = raw.receive()
            # The pool goes on: the local member and the other remote member still answer.
            local = _context(raw, "main")
            _, local_done = _generate(raw, local["context"], max_new_tokens=2)
            remote = _context(raw, "remote")
            _, remote_done = _generate(raw, remote["context"], max_new_tokens=2)
    finally:
        doomed.stop()
    assert frame["op"] == "error" and frame["rid"] == 7 and frame["code"] == "internal"
    assert doomed.url in frame["message"] and "\n" not in frame["message"]
    assert local_done["op"] == "done" and remote_done["op"] == "done"


def test_caldrix_run_answers_on_a_remote_model(server: OpenAIServer) -> None:
    # With a system message the embedded model's template and ChatML (which the member renders
    # with, as llama-cpp-python's server does not give its template) render the same prompt.
    command = [
        sys.executable,
        "-m",
        "caldrix",
        "run",
        server.reference,
        "--ctx",
        WINDOW,
        "--system",
        "Be brief.",
    ]
    with _env({API_KEY_ENV: API_KEY}):
        remote = subprocess.run(
            [*command, "--api-key-env", API_KEY_ENV, "-p", "Say hi.", "--max-new-tokens", "8"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    local = subprocess.run(
        [
            *command[:4],
            DEFAULT_MODEL,
            *command[5:],
            "--threads",
            "1",
            "-p",
            "Say hi.",
            "--max-new-tokens",
            "8",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout.strip() and remote.stdout == local.stdout


def _wait_for(condition: Any, bound: float = 60.0) -> bool:
    """Poll ``condition`` up to ``bound`` seconds (a bound on a shared machine, not a timing check)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return bool(condition())

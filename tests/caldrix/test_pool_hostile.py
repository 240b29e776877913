"""Hostile requests against the real daemon: whatever a client sends, the pool answers that
connection with one line and goes on serving everyone else.

One pool per frame mode serves the module: ``caldrix pool`` on a Unix socket in a temporary
folder, whose ``main`` is the scripted engine on the embedded model (its real tokenizer and
template, so contexts render for real) with a window of :data:`WINDOW` tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from caldrix.limits import CONTEXT_CHARS_PER_TOKEN, CONTEXT_WINDOWS, ECHO_CHARS, MESSAGE_CHARS
from tests.caldrix.pool_harness import (
    DEFAULT_MODEL,
    PoolProcess,
    RawConnection,
    hostile_frame,
    raw_connection,
    start_scripted_pool,
)

pytestmark = [pytest.mark.e2e, pytest.mark.model]

WINDOW = 1024
USER = {"id": "u1", "role": "user", "text": "Name one colour.", "pinned": False}


@pytest.fixture(scope="module", params=["cbor", "json"])
def pool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp(f"hostile-{request.param}")
    process = start_scripted_pool(folder, [], WINDOW, request.param)
    yield process
    process.stop()


def request(connection: RawConnection, message: dict[str, Any]) -> dict[str, Any]:
    connection.send(message)
    return connection.receive()


def assert_one_line(reply: dict[str, Any]) -> str:
    message = reply["message"]
    assert isinstance(message, str) and message.isprintable(), message
    assert len(message) <= MESSAGE_CHARS
    return message


def assert_pool_serves(pool: PoolProcess) -> None:
    """A new connection still says hello and gets pool.status: the pool lives."""
    assert pool.process.poll() is None, pool.log()
    with raw_connection(pool.socket_path, pool.frames) as fresh:
        status = request(fresh, {"op": "pool.status", "rid": 1})
        assert status["op"] == "ok" and status["pid"] == fresh_pid(fresh), status


def fresh_pid(connection: RawConnection) -> int:
    return int(request(connection, {"op": "pool.status", "rid": 2})["pid"])


# --- item 1: lone surrogates ---------------------------------------------------------------

SURROGATE_FRAMES = [
    ({"op": "\ud800", "rid": 1}, "op"),
    ({"op": "context.get", "rid": 1, "context": "\udc00"}, "context"),
    ({"op": "context.drop", "rid": 1, "context": "c\ud800"}, "context"),
    ({"op": "member.unload", "rid": 1, "name": "\udc00"}, "name"),
    ({"op": "member.load", "rid": 1, "name": "\ud800", "model": DEFAULT_MODEL}, "name"),
    ({"op": "context.create", "rid": 1, "member": "\udc00", "segments": []}, "member"),
    (
        {"op": "context.create", "rid": 1, "member": "main", "segments": [{**USER, "text": "hi \ud800"}]},
        "segments.0.text",
    ),
    (
        {
            "op": "context.edit",
            "rid": 1,
            "context": "c1",
            "edits": [{"op": "replace", "id": "u1", "text": "\udfff"}],
        },
        "edits.0.text",
    ),
    ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 1, "stop": ["\ud800"]}, "stop.0"),
]


@pytest.mark.parametrize(("frame", "field"), SURROGATE_FRAMES, ids=[field for _, field in SURROGATE_FRAMES])
def test_a_lone_surrogate_never_ends_the_pool(pool: PoolProcess, frame: dict[str, Any], field: str) -> None:
    """JSON: ``bad_request`` naming the field, and the connection goes on. CBOR: such text is
    not UTF-8, so the frame does not decode: ``bad_frame``, and that connection closes."""
    with raw_connection(pool.socket_path, pool.frames) as connection:
        connection.send_bytes(hostile_frame(frame, pool.frames))
        reply = connection.receive()
        message = assert_one_line(reply)
        if pool.frames == "json":
            assert reply["code"] == "bad_request" and reply["field"] == field and reply["rid"] == 1, reply
            assert f"field '{field}' holds a lone surrogate" in message
            assert request(connection, {"op": "member.list", "rid": 2})["op"] == "ok"
        else:
            assert reply["code"] == "bad_frame", reply
            assert connection.at_eof()
    assert_pool_serves(pool)


def test_a_hello_whose_client_is_a_lone_surrogate_is_answered_and_the_connection_serves(
    pool: PoolProcess,
) -> None:
    """JSON: the fuzz probe's frame. The client's name is only a label, so the pool takes it
    with the surrogate escaped, answers the hello and serves the requests that follow (before,
    it was refused and the connection then answered everything ``handshake_required``). CBOR
    cannot carry the surrogate at all: ``bad_frame``, which closes."""
    bad_client = {"op": "hello", "protocol": 2, "client": "\udc00"}
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        connection.send_bytes(hostile_frame(bad_client, pool.frames))
        reply = connection.receive()
        if pool.frames == "json":
            assert reply["op"] == "hello" and reply["protocol"] == 2, reply
            assert request(connection, {"op": "member.list", "rid": 1})["op"] == "ok"
            assert request(connection, {"op": "pool.status", "rid": 2})["op"] == "ok"
            assert "hello from \\udc00" in pool.log()  # written escaped
        else:
            assert reply["code"] == "bad_frame", reply
            assert_one_line(reply)
            assert connection.at_eof()
    assert_pool_serves(pool)


@pytest.mark.parametrize(
    "hello",
    [
        {"op": "hello", "protocol": 2, "client": 3},
        {"op": "hello", "protocol": 2, "client": "x", "note": "\ud800"},
    ],
)
def test_a_hello_with_a_bad_field_is_answered_and_the_next_hello_is_taken(
    pool: PoolProcess, hello: dict[str, Any]
) -> None:
    """A ``hello`` with a bad field is ``bad_request``, which closes nothing (protocol.md): the
    good hello sent right after it is answered and the connection serves. (CBOR cannot carry a
    lone surrogate: there that frame is ``bad_frame``, which closes.)"""
    cbor_surrogate = pool.frames == "cbor" and any("\ud800" in str(value) for value in hello.values())
    second_try = {"op": "hello", "protocol": 2, "client": "a second try"}
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        connection.send_bytes(hostile_frame(hello, pool.frames) + hostile_frame(second_try, pool.frames))
        reply = connection.receive()
        assert_one_line(reply)
        if cbor_surrogate:
            assert reply["code"] == "bad_frame" and connection.at_eof(), reply
        else:
            assert reply["code"] == "bad_request", reply
            assert connection.receive()["op"] == "hello"
            assert request(connection, {"op": "member.list", "rid": 1})["op"] == "ok"
    assert_pool_serves(pool)


@pytest.mark.parametrize(
    ("hello", "code"),
    [
        ({"op": "hello", "protocol": 3}, "protocol_mismatch"),
        ({"op": "\ud800", "protocol": 2}, "handshake_required"),
    ],
)
def test_another_protocol_or_op_in_the_handshake_is_one_error_frame_then_close(
    pool: PoolProcess, hello: dict[str, Any], code: str
) -> None:
    """These refusals are the connection's last frame, even with a good hello already sent."""
    cbor_surrogate = pool.frames == "cbor" and any("\ud800" in str(value) for value in hello.values())
    second_try = {"op": "hello", "protocol": 2, "client": "a second try"}
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        connection.send_bytes(hostile_frame(hello, pool.frames) + hostile_frame(second_try, pool.frames))
        frames = connection.receive_until_eof()
    [reply] = frames
    assert reply["code"] == ("bad_frame" if cbor_surrogate else code), reply
    assert_one_line(reply)
    assert_pool_serves(pool)


# --- item 2: validated at the edge ---------------------------------------------------------


def test_a_negative_or_huge_seed_is_a_bad_request(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        created = request(
            connection, {"op": "context.create", "rid": 1, "member": "main", "segments": [USER]}
        )
        assert created["op"] == "ok", created
        for rid, seed in enumerate((-1, 2**64), start=2):
            reply = request(
                connection,
                {
                    "op": "generate",
                    "rid": rid,
                    "context": created["context"],
                    "max_new_tokens": 1,
                    "seed": seed,
                },
            )
            assert reply["code"] == "bad_request" and reply["field"] == "seed", reply
            assert "field 'seed'" in assert_one_line(reply)


def test_a_model_reference_past_the_bound_is_refused_in_one_line(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        reply = request(connection, {"op": "member.load", "rid": 1, "name": "long", "model": "m" * 70_000})
        assert reply["code"] == "bad_request" and reply["field"] == "model", reply
        message = assert_one_line(reply)
        assert "at most 4096 characters" in message
        # Under the bound but with a path component longer than a file name may be.
        reply = request(
            connection, {"op": "member.load", "rid": 2, "name": "long", "model": "/tmp/" + "n" * 300}
        )
        assert reply["code"] == "model_not_found", reply
        assert len(assert_one_line(reply)) < 400
        listed = request(connection, {"op": "member.list", "rid": 3})
        assert [m["name"] for m in listed["members"]] == ["main"]
    assert_pool_serves(pool)


# --- item 3: messages are one line -----------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        {"op": "context.get", "rid": 1, "context": "\n"},
        {"op": "context.drop", "rid": 1, "context": "x\r\n\x1b[2J" * 1000},
        {"op": "member.unload", "rid": 1, "name": "line\nbreak\u2028"},
        {"op": "context.create", "rid": 1, "member": "a\nb", "segments": []},
        {"op": "bogus\nop", "rid": 1},
        {"op": "member.load", "rid": 1, "name": "m", "model": "no\nsuch\tmodel.gguf"},
        {"op": "member.load", "rid": 1, "name": "m", "model": DEFAULT_MODEL, "flags": {"ctx\n": 1}},
    ],
)
def test_every_message_quotes_the_client_on_one_line(pool: PoolProcess, frame: dict[str, Any]) -> None:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        reply = request(connection, frame)
        assert reply["op"] == "error", reply
        message = assert_one_line(reply)
        assert "\\n" in message or "\\r" in message or "\\u2028" in message, message
        for value in reply.values():
            if isinstance(value, str):
                assert len(value) <= max(ECHO_CHARS, MESSAGE_CHARS)


def test_a_first_frame_that_is_not_hello_is_quoted(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        connection.send({"op": "x\n" * 500})
        reply = connection.receive()
        assert reply["code"] == "handshake_required"
        assert "'x\\nx\\n" in assert_one_line(reply) and "(1000 characters)" in reply["message"]


# --- item 9: one rule for the protocol number ---------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 2.0])
def test_a_number_equal_to_two_is_protocol_two(pool: PoolProcess, protocol: float) -> None:
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        connection.send({"op": "hello", "protocol": protocol})
        assert connection.receive()["op"] == "hello"


@pytest.mark.parametrize("protocol", ["2", 2.5, True, None, 3])
def test_anything_else_is_a_protocol_mismatch(pool: PoolProcess, protocol: object) -> None:
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        hello: dict[str, Any] = {"op": "hello"}
        if protocol is not None:
            hello["protocol"] = protocol
        connection.send(hello)
        reply = connection.receive()
        assert reply["code"] == "protocol_mismatch" and reply["supported"] == [2], reply
        message = assert_one_line(reply)
        if isinstance(protocol, str):
            assert "not the text '2' (the protocol is a number)" in message, message
        assert connection.at_eof()


# --- item 7: a context's size is bounded ------------------------------------------------------

BOUND_TOKENS = CONTEXT_WINDOWS * WINDOW
BOUND_CHARS = BOUND_TOKENS * CONTEXT_CHARS_PER_TOKEN


def segment(segment_id: str, text: str) -> dict[str, Any]:
    return {"id": segment_id, "role": "user", "text": text, "pinned": False}


def digits(count: int) -> str:
    """Text that tokenizes poorly: about one token for every two characters."""
    return " ".join(str(i % 10) for i in range(count))


def test_text_past_the_bound_is_refused_before_it_is_tokenized(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        text = "a" * (BOUND_CHARS + 1)
        reply = request(
            connection,
            {"op": "context.create", "rid": 1, "member": "main", "segments": [segment("big", text)]},
        )
        assert reply["code"] == "context_overflow", reply
        assert (reply["chars"], reply["limit_chars"], reply["n_ctx"]) == (
            BOUND_CHARS + 1,
            BOUND_CHARS,
            WINDOW,
        )
        assert f"over the bound of {BOUND_CHARS:,}" in assert_one_line(reply)


def test_tokens_past_the_bound_are_refused_with_the_figures(pool: PoolProcess) -> None:
    text = digits(BOUND_CHARS // 2 - 10)
    assert len(text) < BOUND_CHARS
    with raw_connection(pool.socket_path, pool.frames) as connection:
        reply = request(
            connection,
            {"op": "context.create", "rid": 1, "member": "main", "segments": [segment("big", text)]},
        )
        assert reply["code"] == "context_overflow", reply
        assert reply["tokens"] > BOUND_TOKENS and reply["limit_tokens"] == BOUND_TOKENS, reply
        assert_one_line(reply)


def test_an_edit_past_the_bound_leaves_the_context_as_it_was(pool: PoolProcess) -> None:
    """Within the bound a context may hold more than one window (to trim before generating);
    a generation on it is then refused by the window, as before; an edit past the bound is
    refused and changes nothing."""
    with raw_connection(pool.socket_path, pool.frames) as connection:
        created = request(
            connection,
            {"op": "context.create", "rid": 1, "member": "main", "segments": [segment("a", digits(1500))]},
        )
        assert created["op"] == "ok" and WINDOW < created["tokens"] <= BOUND_TOKENS, created
        probe = {"op": "generate", "rid": 2, "context": created["context"], "max_new_tokens": 1}
        assert request(connection, probe)["code"] == "context_overflow"
        edit = {"op": "append", "segment": segment("b", digits(BOUND_CHARS // 2 - 3000))}
        reply = request(
            connection, {"op": "context.edit", "rid": 3, "context": created["context"], "edits": [edit]}
        )
        assert reply["code"] == "context_overflow" and reply["limit_tokens"] == BOUND_TOKENS, reply
        kept = request(connection, {"op": "context.get", "rid": 4, "context": created["context"]})
        assert [s["id"] for s in kept["segments"]] == ["a"] and kept["tokens"] == created["tokens"]

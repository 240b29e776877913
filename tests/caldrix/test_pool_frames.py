"""Raw bytes against the real daemon: the handshake and bad frames, in both frame modes.

Every bad frame gets a ``bad_frame`` error and closes only its own connection: the pool keeps
answering other connections, including one opened before the bad frame.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import cbor2
import pytest

from caldrix.protocol.framing import MAX_FRAME_BYTES, FrameMode, encode_frame
from tests.caldrix.pool_harness import DEFAULT_MODEL, PoolProcess, RawConnection, raw_connection, start_pool

pytestmark = [pytest.mark.e2e, pytest.mark.model]


@pytest.fixture(scope="module", params=["cbor", "json"])
def pool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp(f"frames-{request.param}")
    process = start_pool(
        folder, "--load", DEFAULT_MODEL, "--ctx", "1024", "--idle-timeout", "0", frames=request.param
    )
    yield process
    process.stop()


def _garbage(mode: FrameMode) -> bytes:
    """A payload that does not decode in ``mode``."""
    return b"\xff\xfe\x00garbage" if mode == "cbor" else b"{not: json"


def _other(mode: FrameMode) -> FrameMode:
    return "json" if mode == "cbor" else "cbor"


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


BAD_FRAMES = {
    "oversize": lambda mode: struct.pack(">I", MAX_FRAME_BYTES + 1),
    "zero-length": lambda mode: struct.pack(">I", 0),
    "garbage": lambda mode: _frame(_garbage(mode)),
    "not-a-map": lambda mode: _frame(cbor2.dumps([1, 2]) if mode == "cbor" else b"[1, 2]"),
    "other-mode": lambda mode: encode_frame({"op": "pool.status", "rid": 1}, _other(mode)),
}


def _assert_still_serving(pool: PoolProcess, bystander: RawConnection) -> None:
    bystander.send({"op": "pool.status", "rid": 99})
    reply = bystander.receive()
    assert reply["op"] == "ok" and reply["rid"] == 99
    with raw_connection(pool.socket_path, pool.frames) as fresh:
        fresh.send({"op": "member.list", "rid": 1})
        assert fresh.receive()["op"] == "ok"


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_bad_frame_after_hello_closes_only_that_connection(pool: PoolProcess, kind: str) -> None:
    with (
        raw_connection(pool.socket_path, pool.frames) as bystander,
        raw_connection(pool.socket_path, pool.frames) as victim,
    ):
        victim.send_bytes(BAD_FRAMES[kind](pool.frames))
        error = victim.receive()
        assert error["op"] == "error"
        assert error["code"] == "bad_frame"
        assert "\n" not in error["message"] and error["message"]
        assert victim.at_eof()
        _assert_still_serving(pool, bystander)


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_bad_frame_as_the_first_frame(pool: PoolProcess, kind: str) -> None:
    with (
        raw_connection(pool.socket_path, pool.frames, hello=False) as victim,
        raw_connection(pool.socket_path, pool.frames) as bystander,
    ):
        victim.send_bytes(BAD_FRAMES[kind](pool.frames))
        assert victim.receive()["code"] == "bad_frame"
        assert victim.at_eof()
        _assert_still_serving(pool, bystander)


def test_bad_frame_during_a_generation_closes_that_connection(pool: PoolProcess) -> None:
    with (
        raw_connection(pool.socket_path, pool.frames) as victim,
        raw_connection(pool.socket_path, pool.frames) as bystander,
    ):
        story = {"id": "u", "role": "user", "text": "Tell a long story.", "pinned": False}
        victim.send({"op": "context.create", "rid": 1, "member": "main", "segments": [story]})
        context = victim.receive()["context"]
        victim.send({"op": "generate", "rid": 2, "context": context, "max_new_tokens": 400})
        victim.send_bytes(struct.pack(">I", 0))
        frames = victim.receive_until_eof()
        assert frames[-1]["op"] == "error" and frames[-1]["code"] == "bad_frame"
        assert all(frame["op"] in ("progress", "token") for frame in frames[:-1])
        _assert_still_serving(pool, bystander)


def test_hello_reply(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        reply = connection.hello()
    assert reply == {
        "op": "hello",
        "protocol": 2,
        "server": reply["server"],
        "pid": pool.process.pid,
        "frames": pool.frames,
    }
    assert reply["server"].startswith("caldrix ")


def test_other_protocol_is_a_mismatch_then_close(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        connection.send({"op": "hello", "protocol": 1, "client": "old"})
        error = connection.receive()
        assert error["op"] == "error" and error["code"] == "protocol_mismatch"
        assert error["supported"] == [2]
        assert connection.at_eof()


def test_missing_protocol_is_a_mismatch(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        connection.send({"op": "hello", "client": "vague"})
        assert connection.receive()["code"] == "protocol_mismatch"
        assert connection.at_eof()


def test_a_hello_with_a_bad_field_is_a_bad_request_and_the_connection_stays(pool: PoolProcess) -> None:
    """bad_request closes nothing, in the handshake too: the client may say hello again."""
    bad_hellos = [({"op": "hello", "protocol": 2, "client": value}, "client") for value in (5, ["aerix"])]
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        for hello, field in bad_hellos:
            connection.send(hello)
            error = connection.receive()
            assert (error["op"], error["code"], error["field"]) == ("error", "bad_request", field), error
        assert connection.hello()["op"] == "hello"
        connection.send({"op": "member.list", "rid": 3})
        assert connection.receive()["op"] == "ok"


def test_request_before_hello_is_refused_then_close(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames, hello=False) as connection:
        connection.send({"op": "member.list", "rid": 1})
        error = connection.receive()
        assert error["op"] == "error" and error["code"] == "handshake_required"
        assert connection.at_eof()


def test_unknown_op_and_bad_request_do_not_close(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        connection.send({"op": "member.dance", "rid": 5})
        error = connection.receive()
        assert (error["op"], error["rid"], error["code"]) == ("error", 5, "unknown_op")
        assert "member.dance" in error["message"]
        connection.send({"op": "context.get", "rid": 6})
        error = connection.receive()
        assert (error["rid"], error["code"], error["field"]) == (6, "bad_request", "context")
        connection.send({"op": "member.list"})
        error = connection.receive()
        assert error["code"] == "bad_request" and "rid" not in error
        connection.send({"op": "member.list", "rid": 7})
        assert connection.receive()["rid"] == 7


def test_requests_are_answered_in_order(pool: PoolProcess) -> None:
    with raw_connection(pool.socket_path, pool.frames) as connection:
        for rid in range(10, 15):
            connection.send({"op": "pool.status", "rid": rid})
        assert [connection.receive()["rid"] for _ in range(5)] == list(range(10, 15))

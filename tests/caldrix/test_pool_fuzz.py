"""Generated hostile frames against the real daemon, in both frame modes.

Hypothesis draws frames, taken in batches of :data:`FRAMES_PER_BATCH`: requests with known and
unknown ops, fields of every type (huge and negative integers, lone surrogates, control
characters, nested maps), wrong shapes, and now and then a payload of random bytes or a length
prefix out of bounds. Each batch goes through one connection (a new one after a frame that
closes it); every frame must get well-formed replies, each error one line, and never
``internal``. Between batches a health check on
a new connection (hello, then pool.status) shows the pool still serving. ``pool.stop`` is the
one op left out: it would end the pool by design.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caldrix.limits import MESSAGE_CHARS
from caldrix.protocol.framing import MAX_FRAME_BYTES, FrameMode
from caldrix.protocol.parsing import REQUEST_OPS
from tests.caldrix.pool_harness import (
    PoolProcess,
    RawConnection,
    hostile_frame,
    raw_connection,
    start_scripted_pool,
)

pytestmark = [pytest.mark.e2e, pytest.mark.model]

#: Batches per frame mode, and frames per batch: 2 × 25 × 50 = 2,500 frames in all (under
#: 50 s on a busy two-core machine, both modes; about half that when it is idle).
BATCHES = 25
FRAMES_PER_BATCH = 50
#: Frames answered with a stream before their last frame.
STREAM_OPS = ("progress", "token")
FINAL_OPS = ("ok", "error", "done")
#: Every op but pool.stop, and the fields requests carry.
OPS = tuple(op for op in REQUEST_OPS if op != "pool.stop")
FIELDS = (
    "name", "model", "flags", "member", "segments", "context", "edits", "keep", "max_new_tokens",
    "constraint", "logprobs", "temperature", "seed", "stop", "append", "protocol", "client",
)  # fmt: skip

any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
nasty_text = st.one_of(
    any_text,
    st.sampled_from(["\ud800", "\udc00", "a\udfffb", "\n", "\r\n\x1b[2J", "\x00", "\u2028", "main", "c1"]),
    st.text(max_size=3).map(lambda t: t * 2000),
)
integers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([-1, 0, 1, 2**31, 2**63, 2**64, -(2**63) - 1]),
)
scalars = st.one_of(st.none(), st.booleans(), integers, st.floats(allow_nan=False), nasty_text)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(nasty_text, inner, max_size=5)),
    max_leaves=12,
)
segment = st.fixed_dictionaries(
    {"id": nasty_text, "role": st.one_of(st.sampled_from(["system", "user", "assistant"]), nasty_text),
     "text": nasty_text},
    optional={"pinned": values},
)  # fmt: skip
edit = st.fixed_dictionaries(
    {"op": st.one_of(st.sampled_from(["append", "replace", "remove"]), nasty_text)},
    optional={"id": nasty_text, "text": nasty_text, "segment": segment, "role": values},
)
field_values: dict[str, st.SearchStrategy[Any]] = {name: values for name in FIELDS}
field_values.update(
    segments=st.one_of(st.lists(segment, max_size=4), values),
    edits=st.one_of(st.lists(edit, max_size=4), values),
    member=st.one_of(st.just("main"), nasty_text),
    context=st.one_of(st.sampled_from(["c1", "c2", "c3"]), nasty_text),
    max_new_tokens=st.one_of(st.integers(min_value=-3, max_value=4), values),
)


@st.composite
def request_frame(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly a known op with an integer rid, so that most frames get past the first checks
    and into the fields; each field present or not, with a value of its kind or of any kind."""
    rare = st.integers(min_value=0, max_value=9).map(lambda n: n == 0)
    op = draw(nasty_text) if draw(rare) else draw(st.sampled_from(OPS))
    rid = draw(values) if draw(rare) else draw(st.integers(min_value=0, max_value=2**31))
    frame: dict[str, Any] = {"op": op, "rid": rid}
    for name in FIELDS:
        if draw(st.booleans()):
            frame[name] = draw(field_values[name])
    return frame


@st.composite
def wire_frame(draw: st.DrawFn, mode: FrameMode) -> bytes:
    """Mostly a request, sometimes garbage a client could write instead."""
    kind = draw(st.sampled_from(["request"] * 18 + ["bytes", "length"]))
    if kind == "bytes":
        payload = draw(st.binary(min_size=1, max_size=64))
        return struct.pack(">I", len(payload)) + payload
    if kind == "length":
        return struct.pack(">I", draw(st.sampled_from([0, MAX_FRAME_BYTES + 1, 2**32 - 1])))
    return hostile_frame(draw(request_frame()), mode)


@pytest.fixture(scope="module", params=["cbor", "json"])
def pool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    folder = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    process = start_scripted_pool(folder, ["ok", "ok", "ok"], 512, request.param)
    yield process
    process.stop()


class Batch:
    """One batch's frames through one connection, reconnecting after a frame that closes it."""

    def __init__(self, pool: PoolProcess) -> None:
        self.pool = pool
        self.connection: RawConnection | None = None
        self.closed = 0

    def send(self, frame: bytes) -> None:
        if self.connection is None:
            self.connection = RawConnection(self.pool.socket_path, self.pool.frames)
            assert self.connection.hello()["op"] == "hello"
        self.connection.send_bytes(frame)
        try:
            while True:
                reply = self.connection.receive()
                check_reply(reply)
                if reply["op"] in FINAL_OPS:
                    break
                assert reply["op"] in STREAM_OPS, reply
            if reply.get("code") == "bad_frame":
                assert self.connection.at_eof()
                self.close()
        except (EOFError, ConnectionResetError):
            self.close()

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
            self.closed += 1


def check_reply(reply: dict[str, Any]) -> None:
    assert isinstance(reply.get("op"), str), reply
    if reply["op"] != "error":
        return
    message = reply["message"]
    assert isinstance(message, str) and message.isprintable() and len(message) <= MESSAGE_CHARS, reply
    assert reply["code"] != "internal", reply


def health_check(pool: PoolProcess) -> None:
    assert pool.process.poll() is None, pool.log()
    with raw_connection(pool.socket_path, pool.frames) as fresh:
        fresh.send({"op": "pool.status", "rid": 1})
        status = fresh.receive()
        assert status["op"] == "ok" and status["pid"] == pool.process.pid, status


def test_thousands_of_hostile_frames_never_end_the_pool(pool: PoolProcess) -> None:
    sender = Batch(pool)
    sent = 0

    @settings(
        max_examples=BATCHES * FRAMES_PER_BATCH,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
    )
    @given(frame=wire_frame(pool.frames))
    def one_frame(frame: bytes) -> None:
        nonlocal sent
        sender.send(frame)
        sent += 1
        if sent % FRAMES_PER_BATCH == 0:  # a batch is over: is the pool still serving?
            sender.close()
            health_check(pool)

    try:
        one_frame()
    finally:
        sender.close()
    assert sent >= BATCHES * FRAMES_PER_BATCH
    health_check(pool)
    assert "Traceback" not in pool.log()

"""The frame codec, with byte strings only."""

from __future__ import annotations

import json
import struct

import cbor2
import pytest

from caldrix.errors import BadFrame
from caldrix.protocol.framing import (
    MAX_FRAME_BYTES,
    NEED_MORE,
    FrameDecoder,
    FrameMode,
    decode_payload,
    encode_frame,
    sniff_mode,
)

MODES: tuple[FrameMode, ...] = ("cbor", "json")
HELLO = {"op": "hello", "protocol": 2, "client": "aerix 0.1.0"}


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def test_cbor_frame_is_length_then_cbor_map() -> None:
    frame = encode_frame(HELLO, "cbor")
    assert frame[:4] == struct.pack(">I", len(frame) - 4)
    assert cbor2.loads(frame[4:]) == HELLO


def test_json_frame_is_length_then_compact_utf8_json() -> None:
    message = {"op": "token", "rid": 7, "text": "héllo ✓"}
    frame = encode_frame(message, "json")
    payload = '{"op":"token","rid":7,"text":"héllo ✓"}'.encode()
    assert frame == struct.pack(">I", len(payload)) + payload


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_of_several_frames_fed_byte_by_byte(mode: FrameMode) -> None:
    messages = [HELLO, {"op": "ok", "rid": 1, "members": [], "memory": {"limit": 5, "used": 0}}]
    data = b"".join(encode_frame(message, mode) for message in messages)
    decoder = FrameDecoder(mode)
    received = []
    for byte in data:
        decoder.feed(bytes([byte]))
        message = decoder.next_message()
        if message is not NEED_MORE:
            received.append(message)
    assert received == messages
    assert decoder.buffered == 0
    assert decoder.next_message() is NEED_MORE


@pytest.mark.parametrize("mode", MODES)
def test_two_frames_in_one_chunk_come_out_one_at_a_time(mode: FrameMode) -> None:
    decoder = FrameDecoder(mode)
    decoder.feed(encode_frame({"op": "a"}, mode) + encode_frame({"op": "b"}, mode))
    assert decoder.next_message() == {"op": "a"}
    assert decoder.next_message() == {"op": "b"}
    assert decoder.next_message() is NEED_MORE


def test_need_more_is_falsy_and_named() -> None:
    assert not NEED_MORE
    assert repr(NEED_MORE) == "NEED_MORE"


@pytest.mark.parametrize("mode", MODES)
def test_zero_length_is_bad_frame(mode: FrameMode) -> None:
    decoder = FrameDecoder(mode)
    decoder.feed(b"\x00\x00\x00\x00")
    with pytest.raises(BadFrame, match="empty"):
        decoder.next_message()


@pytest.mark.parametrize("mode", MODES)
def test_oversize_length_is_bad_frame_before_the_payload_arrives(mode: FrameMode) -> None:
    decoder = FrameDecoder(mode)
    decoder.feed(struct.pack(">I", MAX_FRAME_BYTES + 1))
    with pytest.raises(BadFrame, match="over the 67108864-byte limit"):
        decoder.next_message()


def test_largest_length_waits_for_its_payload() -> None:
    decoder = FrameDecoder("cbor")
    decoder.feed(struct.pack(">I", MAX_FRAME_BYTES) + b"\xa0")
    assert decoder.next_message() is NEED_MORE


def test_decoder_refuses_use_after_a_bad_frame() -> None:
    decoder = FrameDecoder("json")
    decoder.feed(_frame(b"not json"))
    with pytest.raises(BadFrame):
        decoder.next_message()
    with pytest.raises(BadFrame, match="close the connection"):
        decoder.feed(encode_frame(HELLO, "json"))


@pytest.mark.parametrize(
    ("mode", "payload", "reason"),
    [
        ("cbor", b"\xff\xff", "not valid CBOR"),
        ("cbor", b"\xa1", "not valid CBOR"),
        ("cbor", cbor2.dumps([1, 2]), "list, not a map"),
        ("cbor", cbor2.dumps({1: "x"}), "key that is not text"),
        ("cbor", cbor2.dumps({"op": "a"}) + b"\x01", "after its CBOR map"),
        ("cbor", b"\xa1\x61\xff\x01", "not valid CBOR"),
        ("json", b"{not json", "not valid JSON"),
        ("json", b"\xff\xfe", "not valid JSON"),
        ("json", b"[1, 2]", "list, not a map"),
        ("json", b'{"a": NaN}', "not valid JSON"),
        ("json", b'"text"', "str, not a map"),
    ],
)
def test_undecodable_payloads_are_bad_frames(mode: FrameMode, payload: bytes, reason: str) -> None:
    decoder = FrameDecoder(mode)
    decoder.feed(_frame(payload))
    with pytest.raises(BadFrame, match=reason):
        decoder.next_message()


def test_a_cbor_payload_in_json_mode_is_bad_frame() -> None:
    with pytest.raises(BadFrame, match="JSON"):
        decode_payload(cbor2.dumps(HELLO), "json")


def test_json_payload_keeps_integers_and_text() -> None:
    message = decode_payload(json.dumps({"rid": 3, "text": "x", "t": 0.5}).encode(), "json")
    assert message == {"rid": 3, "text": "x", "t": 0.5}
    assert isinstance(message["rid"], int)


def test_sniff_tells_the_two_modes_apart() -> None:
    assert sniff_mode(encode_frame(HELLO, "json")[4:]) == "json"
    assert sniff_mode(encode_frame(HELLO, "cbor")[4:]) == "cbor"


def test_encoding_a_message_over_the_limit_is_refused() -> None:
    with pytest.raises(BadFrame, match="longer than"):
        encode_frame({"text": "x" * (MAX_FRAME_BYTES + 1)}, "cbor")

"""The frame codec of caldrix-protocol 2, without any I/O.

A frame is a 4-byte unsigned big-endian length ``N`` followed by ``N`` bytes of payload; the
payload is one CBOR map or, in JSON mode, one UTF-8 JSON object. :class:`FrameDecoder` is fed
whatever bytes arrived and hands back complete messages one at a time, or :data:`NEED_MORE`;
:func:`encode_frame` turns a message into the bytes to send. Both sides (the pool's connections
and the client) use the same codec, and its tests need nothing but byte strings.
"""

from __future__ import annotations

import io
import json
import math
import struct
from typing import Any, Final, Literal

import cbor2

from caldrix.errors import BadFrame

#: The protocol version this codec and the message models speak.
PROTOCOL_VERSION: Final = 2
#: The largest payload a frame may carry (64 MiB); a longer frame is a ``bad_frame``.
MAX_FRAME_BYTES: Final = 64 * 1024 * 1024
#: Bytes of the length prefix.
HEADER_BYTES: Final = 4

FrameMode = Literal["cbor", "json"]

Message = dict[str, Any]

_HEADER = struct.Struct(">I")


class NeedMore:
    """The decoder holds no complete frame yet: feed it more bytes."""

    _instance: NeedMore | None = None

    def __new__(cls) -> NeedMore:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NEED_MORE"

    def __bool__(self) -> bool:
        return False


NEED_MORE: Final = NeedMore()


def encode_payload(message: Message, mode: FrameMode) -> bytes:
    """The payload bytes of ``message`` in ``mode`` (no length prefix)."""
    if mode == "cbor":
        return cbor2.dumps(message)
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def encode_frame(message: Message, mode: FrameMode) -> bytes:
    """``message`` as one complete frame: the length prefix, then the payload."""
    payload = encode_payload(message, mode)
    if len(payload) > MAX_FRAME_BYTES:
        raise BadFrame(f"a {len(payload)}-byte frame is longer than the {MAX_FRAME_BYTES}-byte limit")
    return _HEADER.pack(len(payload)) + payload


def decode_payload(payload: bytes, mode: FrameMode) -> Message:
    """One payload back into a message (a map with text keys), or :class:`BadFrame`."""
    try:
        value = _decode_cbor(payload) if mode == "cbor" else _decode_json(payload)
    except BadFrame:
        raise
    except (cbor2.CBORError, ValueError, TypeError, RecursionError) as exc:
        raise BadFrame(f"the frame's payload is not valid {mode.upper()}: {_short(exc)}") from exc
    if not isinstance(value, dict):
        raise BadFrame(f"the frame's payload is a {type(value).__name__}, not a map")
    if not all(isinstance(key, str) for key in value):
        raise BadFrame("the frame's map has a key that is not text")
    return value


def sniff_mode(payload: bytes) -> FrameMode:
    """Which encoding a payload most likely uses: a JSON object starts with ``{`` (or
    whitespace), a CBOR map with a byte in 0xA0..0xBF. Lets a client read a pool's reply in a
    mode it did not expect, so a mismatch becomes a clear message instead of garbage."""
    first = payload[:1]
    return "json" if first in (b"{", b" ", b"\t", b"\r", b"\n") else "cbor"


def _decode_cbor(payload: bytes) -> Any:
    stream = io.BytesIO(payload)
    value = cbor2.CBORDecoder(stream, str_errors="strict").decode()
    if stream.tell() != len(payload):
        raise BadFrame(f"the frame holds {len(payload) - stream.tell()} bytes after its CBOR map")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _decode_json(payload: bytes) -> Any:
    value = json.loads(payload.decode("utf-8"), parse_constant=_reject_constant)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a non-finite number is not JSON")
    return value


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


class FrameDecoder:
    """Splits a byte stream into messages.

    ``feed(data)`` adds bytes; ``next_message()`` returns the next complete message or
    :data:`NEED_MORE`. A length of 0 or over :data:`MAX_FRAME_BYTES` raises :class:`BadFrame`
    as soon as the prefix arrives (without waiting for the payload), and so does a payload that
    does not decode. After a :class:`BadFrame` the stream has lost its frame boundaries: the
    decoder refuses further use and the connection should be closed.
    """

    def __init__(self, mode: FrameMode) -> None:
        self.mode: FrameMode = mode
        self._buffer = bytearray()
        self._failed: BadFrame | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as a message."""
        return len(self._buffer)

    def feed(self, data: bytes) -> None:
        self._check_usable()
        self._buffer += data

    def next_message(self) -> Message | NeedMore:
        self._check_usable()
        payload = self._next_payload()
        if isinstance(payload, NeedMore):
            return NEED_MORE
        try:
            return decode_payload(payload, self.mode)
        except BadFrame as exc:
            self._failed = exc
            raise

    def next_payload(self) -> bytes | NeedMore:
        """The next complete payload, undecoded (for a reader that sniffs its mode)."""
        self._check_usable()
        return self._next_payload()

    def _next_payload(self) -> bytes | NeedMore:
        if len(self._buffer) < HEADER_BYTES:
            return NEED_MORE
        (length,) = _HEADER.unpack_from(self._buffer)
        if length == 0 or length > MAX_FRAME_BYTES:
            what = "empty" if length == 0 else f"{length} bytes long, over the {MAX_FRAME_BYTES}-byte limit"
            self._failed = BadFrame(f"a frame is {what}; frames carry 1..{MAX_FRAME_BYTES} bytes")
            raise self._failed
        if len(self._buffer) < HEADER_BYTES + length:
            return NEED_MORE
        payload = bytes(self._buffer[HEADER_BYTES : HEADER_BYTES + length])
        del self._buffer[: HEADER_BYTES + length]
        return payload

    def _check_usable(self) -> None:
        if self._failed is not None:
            raise BadFrame(f"the frame stream is broken ({self._failed.message}); close the connection")

"""An anyio client for caldrix-protocol 2.

    client = await connect(socket_path)            # the hello handshake
    reply = await client.request("context.create", member="main", segments=[...])
    async with client.generate(context=reply["context"], max_new_tokens=64) as frames:
        async for frame in frames:                 # ProgressFrame / TokenFrame, then DoneFrame
            ...
    await client.aclose()

An ``error`` reply becomes the matching :class:`~caldrix.errors.CaldrixError` subclass (its
extra fields in ``details``); a pool that cannot be reached, goes silent past a bound, or hangs
up becomes :class:`~caldrix.errors.PoolUnavailable`. Requests on one connection run one at a
time. Leaving a generation before its ``done`` closes the connection, which cancels it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import anyio
from anyio.abc import SocketStream
from pydantic import ValidationError

from caldrix import __version__
from caldrix.errors import ERRORS_BY_CODE, CaldrixError, InternalError, PoolUnavailable
from caldrix.protocol.framing import (
    PROTOCOL_VERSION,
    FrameDecoder,
    FrameMode,
    Message,
    NeedMore,
    decode_payload,
    encode_frame,
    sniff_mode,
)
from caldrix.protocol.messages import DoneFrame, GenerationFrame, HelloReply, ProgressFrame, TokenFrame
from caldrix.protocol.transport import default_socket_path

#: Pool handshake and control requests (the spec's bound).
CONTROL_TIMEOUT_SECS: Final = 30.0
#: The longest wait between two frames of a generation; progress frames count as activity.
GENERATION_FRAME_TIMEOUT_SECS: Final = 600.0
#: A ``member.load`` may download and load a model: ``pool.start_timeout_secs``' default.
MEMBER_LOAD_TIMEOUT_SECS: Final = 900.0

_RECEIVE_BYTES: Final = 65536

FramesOption = FrameMode | Literal["auto"]


def error_from_reply(frame: Message) -> CaldrixError:
    """The exception an ``error`` frame stands for; fields beyond code and message go to
    ``details`` (``supported``, the figures of a ``no_fit`` …)."""
    code = str(frame.get("code", "internal"))
    message = str(frame.get("message", "the pool reported an error"))
    details = {key: value for key, value in frame.items() if key not in ("op", "rid", "code", "message")}
    cls = ERRORS_BY_CODE.get(code)
    if cls is None:
        return InternalError(message, code=code, **details)
    return cls(message, **details)


class PoolClient:
    """One connection to a pool, after its handshake."""

    def __init__(self, stream: SocketStream, mode: FrameMode, hello: HelloReply, socket_path: Path) -> None:
        self._stream = stream
        self.mode: FrameMode = mode
        self.hello = hello
        self.socket_path = socket_path
        self._decoder = FrameDecoder(mode)
        self._rids = itertools.count(1)
        self._lock = anyio.Lock()
        self._state: Literal["open", "busy", "closed"] = "open"
        self._last_mode: FrameMode = mode

    @property
    def closed(self) -> bool:
        return self._state == "closed"

    async def __aenter__(self) -> PoolClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._state != "closed":
            self._state = "closed"
            with anyio.CancelScope(shield=True):
                await self._stream.aclose()

    async def wait_closed(self, timeout: float = CONTROL_TIMEOUT_SECS) -> bool:
        """Wait until the pool closes this connection (as it does after ``pool.stop``);
        returns whether it did within ``timeout``. The connection is closed either way."""
        closed = False
        with anyio.move_on_after(timeout):
            try:
                while await self._stream.receive(_RECEIVE_BYTES):
                    pass
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                closed = True
        await self.aclose()
        return closed

    async def request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        """Send one request and return its ``ok`` reply's fields (without ``op`` and ``rid``);
        an ``error`` reply raises. ``timeout`` defaults to the control bound (member loads: the
        load bound)."""
        if timeout is None:
            timeout = MEMBER_LOAD_TIMEOUT_SECS if op == "member.load" else CONTROL_TIMEOUT_SECS
        self._check_open()
        async with self._lock:
            self._check_open()
            rid = next(self._rids)
            try:
                await self._send({"op": op, "rid": rid, **fields})
                reply = await self._receive(timeout, waiting_for=f"the reply to {op}")
            except BaseException:
                await self.aclose()
                raise
            return _result_of(reply, rid)

    def generate(self, context: str, max_new_tokens: int, **fields: Any) -> Generation:
        """A generation on ``context``: iterate it for progress and token frames and the final
        :class:`DoneFrame`. Other fields (``constraint``, ``logprobs``, ``temperature``,
        ``seed``, ``stop``, ``append``) are passed as the protocol names them."""
        return Generation(self, {"context": context, "max_new_tokens": max_new_tokens, **fields})

    async def _send(self, message: Message) -> None:
        try:
            await self._stream.send(encode_frame(message, self.mode))
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise PoolUnavailable(f"the pool at {self.socket_path} hung up: {exc}") from exc

    async def _receive(self, timeout: float, *, waiting_for: str) -> Message:
        with anyio.move_on_after(timeout) as scope:
            return await self._receive_frame()
        assert scope.cancelled_caught
        raise PoolUnavailable(
            f"the pool at {self.socket_path} sent nothing for {timeout:g} s while "
            f"waiting for {waiting_for}; it may be overloaded or stuck"
        )

    async def _receive_frame(self) -> Message:
        while True:
            payload = self._decoder.next_payload()
            if not isinstance(payload, NeedMore):
                # Read in whichever mode the pool used, so a mode mismatch shows as its error.
                self._last_mode = sniff_mode(payload)
                return decode_payload(payload, self._last_mode)
            try:
                data = await self._stream.receive(_RECEIVE_BYTES)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError) as exc:
                raise PoolUnavailable(f"the pool at {self.socket_path} closed the connection") from exc
            self._decoder.feed(data)

    def _check_open(self) -> None:
        if self._state == "closed":
            raise PoolUnavailable("this pool connection is closed; connect again")
        if self._state == "busy":
            raise PoolUnavailable(
                "this pool connection has an unfinished generation; finish or close it first"
            )


def _result_of(reply: Message, rid: int) -> dict[str, Any]:
    if reply.get("op") == "error":
        raise error_from_reply(reply)
    if reply.get("op") != "ok" or reply.get("rid") != rid:
        raise InternalError(f"the pool answered rid {rid} with an unexpected frame: {str(reply)[:200]}")
    return {key: value for key, value in reply.items() if key not in ("op", "rid")}


class Generation:
    """The frames of one ``generate`` request, as an async iterator (and context manager).

    The request is sent when iteration starts. Iteration ends after the :class:`DoneFrame`
    (the last item); an ``error`` frame raises. Closing the generation early closes the whole
    connection, which is how the protocol cancels a generation.
    """

    def __init__(self, client: PoolClient, fields: dict[str, Any]) -> None:
        self._client = client
        self._fields = fields
        self._iterator: AsyncIterator[GenerationFrame] | None = None
        self.done: DoneFrame | None = None

    def __aiter__(self) -> AsyncIterator[GenerationFrame]:
        if self._iterator is None:
            self._iterator = self._frames()
        return self._iterator

    async def __aenter__(self) -> Generation:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Cancel the generation (by closing the connection) unless it has finished."""
        if self.done is None:
            await self._client.aclose()
        if self._iterator is not None and hasattr(self._iterator, "aclose"):
            await self._iterator.aclose()

    async def result(self) -> DoneFrame:
        """Run the generation to its end and return the done frame."""
        async for _ in self:
            pass
        if self.done is None:
            raise InternalError("the generation ended without a done frame")
        return self.done

    async def _frames(self) -> AsyncIterator[GenerationFrame]:
        client = self._client
        client._check_open()
        async with client._lock:
            client._check_open()
            client._state = "busy"
            rid = next(client._rids)
            try:
                await client._send({"op": "generate", "rid": rid, **self._fields})
                while self.done is None:
                    frame = await client._receive(
                        GENERATION_FRAME_TIMEOUT_SECS, waiting_for="the next generation frame"
                    )
                    parsed = _generation_frame(frame, rid)
                    if isinstance(parsed, DoneFrame):
                        self.done = parsed
                        client._state = "open"
                    yield parsed
            except CaldrixError as exc:
                # An error reply ends the request and leaves the connection usable; a broken
                # or silent connection does not.
                if client._state == "busy" and exc.code not in ("bad_frame", "internal"):
                    client._state = "open"
                raise
            finally:
                if client._state == "busy":
                    await client.aclose()


_GENERATION_FRAMES: Final[dict[Any, type[GenerationFrame]]] = {
    "progress": ProgressFrame,
    "token": TokenFrame,
    "done": DoneFrame,
}


def _generation_frame(frame: Message, rid: int) -> GenerationFrame:
    op = frame.get("op")
    if op == "error":
        raise error_from_reply(frame)
    if frame.get("rid") != rid:
        raise InternalError(f"the pool sent a frame for rid {frame.get('rid')} during generation {rid}")
    model = _GENERATION_FRAMES.get(op)
    if model is None:
        raise InternalError(f"the pool sent an unexpected '{op}' frame during a generation")
    try:
        return model.model_validate(frame)
    except ValidationError as exc:
        raise InternalError(f"the pool sent a malformed '{op}' frame: {exc.errors()[0]['msg']}") from exc


async def connect(
    socket_path: Path | str | None = None,
    *,
    frames: FramesOption = "auto",
    client_name: str = f"caldrix-client {__version__}",
    timeout: float = CONTROL_TIMEOUT_SECS,
) -> PoolClient:
    """Connect to the pool on ``socket_path`` (default: the default socket) and shake hands.

    ``frames="auto"`` speaks CBOR first and, when the pool answers in JSON (its ``--frames
    json`` mode), reconnects in JSON."""
    path = Path(socket_path) if socket_path is not None else default_socket_path()
    mode: FrameMode = "cbor" if frames == "auto" else frames
    try:
        return await _handshake(path, mode, client_name, timeout)
    except _ModeMismatch as mismatch:
        if frames != "auto":
            raise PoolUnavailable(
                f"the pool at {path} speaks {mismatch.pool_mode} frames, not {mode}; "
                f"connect with frames='{mismatch.pool_mode}'"
            ) from None
        return await _handshake(path, mismatch.pool_mode, client_name, timeout)


class _ModeMismatch(Exception):
    def __init__(self, pool_mode: FrameMode) -> None:
        self.pool_mode: FrameMode = pool_mode


async def _handshake(path: Path, mode: FrameMode, client_name: str, timeout: float) -> PoolClient:
    try:
        with anyio.fail_after(timeout):
            stream = await anyio.connect_unix(os.fspath(path))
    except (OSError, TimeoutError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise PoolUnavailable(
            f"no pool answers on {path} ({reason}); start one with 'caldrix pool --load MODEL'"
        ) from exc
    client = PoolClient(stream, mode, HelloReply(op="hello", server="", pid=0, frames=mode), path)
    try:
        await client._send({"op": "hello", "protocol": PROTOCOL_VERSION, "client": client_name})
        reply = await client._receive(timeout, waiting_for="the pool's hello")
        if reply.get("op") == "error":
            if reply.get("code") == "bad_frame" and client._last_mode != mode:
                raise _ModeMismatch(client._last_mode)
            raise error_from_reply(reply)
        client.hello = HelloReply.model_validate(reply)
    except ValidationError as exc:
        await client.aclose()
        raise PoolUnavailable(
            f"what answers on {path} is not a caldrix pool speaking protocol {PROTOCOL_VERSION}"
        ) from exc
    except BaseException:
        await client.aclose()
        raise
    return client

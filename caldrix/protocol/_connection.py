"""One client connection's frames: the stream, the handshake, one request at a time.

:class:`Connection` sends and receives frames, draws rids, keeps one request in flight and
waits no longer than its :class:`ClientBounds`; :class:`caldrix.protocol.client.PoolClient`
builds the typed ops on top of it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import anyio
from anyio.abc import SocketStream
from pydantic import ValidationError

from caldrix.errors import CaldrixError, PoolUnavailable
from caldrix.protocol._exchange import error_from_reply, fields_of, generation_frame, wire
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
from caldrix.protocol.messages import DoneFrame, Generate, GenerationFrame, HelloReply
from caldrix.protocol.transport import overlong_socket_path

_RECEIVE_BYTES: Final = 65536


@dataclass(frozen=True)
class ClientBounds:
    """How long the client waits on the pool, in seconds; the caller's bounds."""

    control_secs: float
    """The connect and handshake, and each control request (everything but a load or a
    generation)."""
    frame_gap_secs: float
    """The longest wait between two frames of a generation; progress frames count."""
    member_load_secs: float
    """A ``member.load``, which may download a model before loading it."""


class ModeMismatch(Exception):
    """The pool answered the hello in the other frame mode."""

    def __init__(self, pool_mode: FrameMode) -> None:
        self.pool_mode: FrameMode = pool_mode


async def open_stream(path: Path, bounds: ClientBounds) -> SocketStream:
    overlong = overlong_socket_path(path)
    if overlong is not None:  # no pool can answer there: the kernel refuses the path itself
        raise PoolUnavailable(overlong)
    try:
        with anyio.fail_after(bounds.control_secs):
            return await anyio.connect_unix(os.fspath(path))
    except (OSError, TimeoutError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise PoolUnavailable(
            f"no pool answers on {path} ({reason}); start one with 'caldrix pool --load MODEL'"
        ) from exc


class Connection:
    """One stream to a pool, speaking frames in ``mode``."""

    def __init__(
        self, stream: SocketStream, mode: FrameMode, socket_path: Path, bounds: ClientBounds
    ) -> None:
        self._stream = stream
        self.mode: FrameMode = mode
        self.socket_path = socket_path
        self.bounds = bounds
        self.hello = HelloReply(op="hello", server="", pid=0, frames=mode)
        """The pool's hello, once :meth:`shake_hands` has had it."""
        self._decoder = FrameDecoder(mode)
        self._rids = itertools.count(1)
        self._lock = anyio.Lock()
        self._state: Literal["open", "busy", "closed"] = "open"
        self._last_mode: FrameMode = mode

    @property
    def closed(self) -> bool:
        return self._state == "closed"

    async def aclose(self) -> None:
        if self._state != "closed":
            self._state = "closed"
            with anyio.CancelScope(shield=True):
                await self._stream.aclose()

    async def wait_closed(self, timeout: float | None = None) -> bool:
        """Wait until the pool closes this connection (as it does after ``pool.stop``), at most
        ``timeout`` (default: the control bound); returns whether it did. The connection is
        closed either way."""
        closed = False
        with anyio.move_on_after(self.bounds.control_secs if timeout is None else timeout):
            try:
                while await self._stream.receive(_RECEIVE_BYTES):
                    pass
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                closed = True
        await self.aclose()
        return closed

    async def shake_hands(self, client_name: str) -> None:
        """Send the hello and keep the pool's; closes the connection when it fails. Raises
        :class:`ModeMismatch` when the pool speaks the other frame mode."""
        try:
            await self._send({"op": "hello", "protocol": PROTOCOL_VERSION, "client": client_name})
            reply = await self._receive(self.bounds.control_secs, waiting_for="the pool's hello")
            if reply.get("op") == "error":
                if reply.get("code") == "bad_frame" and self._last_mode != self.mode:
                    raise ModeMismatch(self._last_mode)
                raise error_from_reply(reply)
            self.hello = HelloReply.model_validate(reply)
        except ValidationError as exc:
            await self.aclose()
            raise PoolUnavailable(
                f"what answers on {self.socket_path} is not a caldrix pool "
                f"speaking protocol {PROTOCOL_VERSION}"
            ) from exc
        except BaseException:
            await self.aclose()
            raise

    async def exchange(self, frame: Callable[[int], Message], op: str, timeout: float) -> dict[str, Any]:
        """Send ``frame(rid)`` with the next rid and return its ``ok`` reply's fields; an
        ``error`` reply raises. A broken or silent connection is closed."""
        self._check_open()
        async with self._lock:
            self._check_open()
            rid = next(self._rids)
            try:
                await self._send(frame(rid))
                reply = await self._receive(timeout, waiting_for=f"the reply to {op}")
            except BaseException:
                await self.aclose()
                raise
            return fields_of(reply, rid)

    async def generation_frames(
        self, request: Generate, done: Callable[[DoneFrame], None]
    ) -> AsyncIterator[GenerationFrame]:
        """Send ``request`` with the next rid and yield its frames up to its done frame (also
        handed to ``done``). Leaving early closes the connection, which cancels it."""
        self._check_open()
        async with self._lock:
            self._check_open()
            self._state = "busy"
            rid = next(self._rids)
            try:
                await self._send(wire(request.model_copy(update={"rid": rid})))
                while True:
                    waited = await self._receive(
                        self.bounds.frame_gap_secs, waiting_for="the next generation frame"
                    )
                    frame = generation_frame(waited, rid)
                    if isinstance(frame, DoneFrame):
                        done(frame)
                        self._state = "open"
                    yield frame
                    if isinstance(frame, DoneFrame):
                        return
            except CaldrixError as exc:
                # An error reply ends the request and leaves the connection usable; a broken
                # or silent connection does not.
                if self._state == "busy" and exc.code not in ("bad_frame", "internal"):
                    self._state = "open"
                raise
            finally:
                if self._state == "busy":
                    await self.aclose()

    async def _send(self, message: Message) -> None:
        try:
            await self._stream.send(encode_frame(message, self.mode))
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            # anyio's broken and closed stream errors carry no text of their own.
            reason = str(exc) or "the connection was closed"
            raise PoolUnavailable(f"the pool at {self.socket_path} hung up: {reason}") from exc

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

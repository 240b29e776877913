"""One client connection: the handshake, then requests one at a time, with streamed replies.

Two tasks share a connection. The reader decodes frames as they arrive and queues requests;
the request loop answers them in order. Because the reader keeps reading while a ``generate``
runs, a client that hangs up is noticed at once and its generation is cancelled (a queued one
never starts, a running one stops at its next row or token). A frame that cannot be decoded
gets a ``bad_frame`` error and closes this connection only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import threading
from typing import Final, Literal

import anyio
from anyio.abc import SocketStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from caldrix import __version__
from caldrix.errors import (
    BadFrame,
    CaldrixError,
    HandshakeRequired,
    InternalError,
    ProtocolMismatch,
    one_line,
    quoted,
)
from caldrix.limits import ECHO_CHARS
from caldrix.pool import Pool
from caldrix.protocol.framing import (
    PROTOCOL_VERSION,
    FrameDecoder,
    FrameMode,
    Message,
    NeedMore,
    encode_frame,
)
from caldrix.protocol.messages import (
    DoneFrame,
    ErrorReply,
    Generate,
    HelloReply,
    ProgressFrame,
    TokenFrame,
)
from caldrix.protocol.parsing import hello_protocol, parse_request, request_rid, validate_hello

logger = logging.getLogger("caldrix.pool")

#: A connection that has not said hello within this long is closed (the spec's handshake bound).
HANDSHAKE_TIMEOUT_SECS: Final = 30.0
#: How often a queued generation reports that it is still waiting (progress with done 0).
QUEUED_PROGRESS_SECS: Final = 30.0
#: How long a request cut short by the pool stopping may take to send that it was.
STOPPING_REPLY_SECS: Final = 1.0
#: Requests read ahead of the one being answered; beyond this the reader waits.
REQUEST_BACKLOG: Final = 16
_RECEIVE_BYTES: Final = 65536
#: The fields an error frame has of its own; an error's detail of the same name is left out.
_ERROR_FIELDS: Final = frozenset(ErrorReply.model_fields)


class _Closed(Exception):
    """The peer hung up or the stream broke."""


class Connection:
    """Serves one accepted stream until the client leaves, a bad frame, or the pool stops."""

    def __init__(self, stream: SocketStream, pool: Pool, mode: FrameMode, number: int) -> None:
        self._stream = stream
        self._pool = pool
        self._mode: FrameMode = mode
        self._decoder = FrameDecoder(mode)
        self._send_lock = anyio.Lock()
        self._scope = anyio.CancelScope()
        self._busy = False
        self._closing = False
        self.name = f"connection {number}"

    def close_when_idle(self) -> None:
        """Close now if no request is being answered, else right after the current one."""
        self._closing = True
        if not self._busy:
            self._scope.cancel()

    def close_now(self) -> None:
        self._scope.cancel()

    async def serve(self) -> None:
        with self._scope, contextlib.suppress(_Closed):
            if await self._handshake():
                await self._serve_requests()
        with anyio.CancelScope(shield=True):
            await self._stream.aclose()
        logger.debug("%s closed", self.name)

    async def _handshake(self) -> bool:
        """Read frames until one is a good ``hello`` (True) or the connection must close (False):
        a frame that does not decode (``bad_frame``), another first op (``handshake_required``),
        another protocol (``protocol_mismatch``), or no hello within HANDSHAKE_TIMEOUT_SECS. A
        ``hello`` with a bad field is ``bad_request``, which, as every ``bad_request``, closes
        nothing: the client may say hello again, within the same time. A ``client`` name is only a
        label, so one holding a lone surrogate is taken escaped, not refused (``validate_hello``)."""
        with anyio.move_on_after(HANDSHAKE_TIMEOUT_SECS):
            while True:
                try:
                    frame = await self._read_frame()
                except BadFrame as exc:
                    await self._send_error(exc, None)
                    return False
                answered = await self._answer_hello(frame)
                if answered != "again":
                    return answered == "ready"
        logger.info("%s: no hello within %g s; closing", self.name, HANDSHAKE_TIMEOUT_SECS)
        return False

    async def _answer_hello(self, frame: Message) -> Literal["ready", "close", "again"]:
        if frame.get("op") != "hello":
            await self._send_error(
                HandshakeRequired(
                    f"the first frame must be hello (protocol {PROTOCOL_VERSION}), "
                    f"not {quoted(frame.get('op'))}"
                ),
                None,
            )
            return "close"
        protocol = hello_protocol(frame.get("protocol"))
        if protocol != PROTOCOL_VERSION:
            await self._send_error(
                ProtocolMismatch(
                    f"this pool speaks caldrix-protocol {PROTOCOL_VERSION}, "
                    f"not {_protocol_words(frame.get('protocol'))}; update the client or the pool",
                    supported=[PROTOCOL_VERSION],
                ),
                None,
            )
            return "close"
        try:
            hello = validate_hello({**frame, "protocol": protocol})
        except CaldrixError as exc:
            await self._send_error(exc, None)
            return "again"
        logger.info("%s: hello from %s", self.name, hello.client or "an unnamed client")
        reply = HelloReply(
            op="hello",
            protocol=PROTOCOL_VERSION,
            server=f"caldrix {__version__}",
            pid=_pid(),
            frames=self._mode,
        )
        await self._send(reply.model_dump())
        return "ready"

    async def _serve_requests(self) -> None:
        sender, receiver = anyio.create_memory_object_stream[Message](REQUEST_BACKLOG)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._read_requests, sender, tasks.cancel_scope)
            # An exception would leave the task group wrapped in a group: end quietly instead.
            with contextlib.suppress(_Closed):
                await self._answer_in_order(receiver)
            tasks.cancel_scope.cancel()

    async def _answer_in_order(self, receiver: MemoryObjectReceiveStream[Message]) -> None:
        async with receiver:
            async for frame in receiver:
                self._busy = True
                try:
                    await self._answer(frame)
                finally:
                    self._busy = False
                if self._closing:
                    return

    async def _read_requests(self, sender: MemoryObjectSendStream[Message], scope: anyio.CancelScope) -> None:
        """Queue frames for the request loop. When the client hangs up or sends a bad frame,
        cancel everything on this connection, including a running generation."""
        async with sender:
            try:
                while True:
                    await sender.send(await self._read_frame())
            except BadFrame as exc:
                logger.info("%s: bad frame (%s); closing it", self.name, exc.message)
                with contextlib.suppress(_Closed):
                    await self._send_error(exc, None)
            except _Closed:
                pass
        scope.cancel()

    async def _answer(self, frame: Message) -> None:
        rid = request_rid(frame)
        try:
            request = parse_request(frame)
            if isinstance(request, Generate):
                await self._generate(request)
                return
            # Control requests finish even if the client leaves meanwhile: a load half done
            # or an edit half applied would be worse than a reply nobody reads. Only the pool
            # stopping cancels one (Pool.cancel_control_requests), so none can outlive it.
            with self._pool.control_scope() as scope:
                result = await self._pool.handle(request)
                fields = result.model_dump() if result is not None else {}
                await self._send({"op": "ok", "rid": request.rid, **fields})
            if scope.cancelled_caught:
                # The connection is being closed too: say why in a send of its own, bounded.
                with anyio.move_on_after(STOPPING_REPLY_SECS, shield=True):
                    stopping = InternalError("the pool is stopping; this request was not finished")
                    await self._send_error(stopping, rid)
                return
            if request.op == "pool.stop":
                logger.info("%s asked the pool to stop", self.name)
                self._pool.request_stop()
        except CaldrixError as exc:
            await self._send_error(exc, rid)
        except Exception as exc:
            logger.exception("%s: %s failed", self.name, frame.get("op"))
            await self._send_error(InternalError(f"the pool failed on this request: {exc}"), rid)

    async def _generate(self, request: Generate) -> None:
        sender, receiver = anyio.create_memory_object_stream[Message](math.inf)
        sink = FrameSink(request.rid, sender)
        outcome: DoneFrame | CaldrixError
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._forward, receiver, sink)
            try:
                outcome = await self._run_while_kept_alive(request, sink)
            finally:
                # When the generation returns, its last frames may still wait in the stream:
                # closing the sink lets the forwarder send them all and then end, so the task
                # group exits only after every token frame is out, and ``done`` follows them.
                sink.close()
        if isinstance(outcome, CaldrixError):
            await self._send_error(outcome, request.rid)
        else:
            await self._send(outcome.model_dump())

    async def _run_while_kept_alive(self, request: Generate, sink: FrameSink) -> DoneFrame | CaldrixError:
        """The generation's ``done`` frame or its error, with queued keep-alives sent meanwhile."""
        outcome: DoneFrame | CaldrixError
        async with anyio.create_task_group() as keep_alive:
            keep_alive.start_soon(self._keep_alive_while_queued, sink, request.context)
            try:
                outcome = await self._pool.generate(request, sink)
            except CaldrixError as exc:
                outcome = exc
            finally:
                keep_alive.cancel_scope.cancel()
        return outcome

    async def _keep_alive_while_queued(self, sink: FrameSink, context_id: str) -> None:
        """While the generation waits behind others, send ``progress`` with nothing done yet
        every :data:`QUEUED_PROGRESS_SECS`, so the client's wait between frames does not run
        out before the generation even starts."""
        while True:
            await anyio.sleep(QUEUED_PROGRESS_SECS)
            if sink.started:
                return
            context = self._pool.contexts.find(context_id)
            if context is not None:
                sink.waiting(context.tokens)

    async def _forward(self, receiver: MemoryObjectReceiveStream[Message], sink: FrameSink) -> None:
        async with receiver:
            try:
                async for frame in receiver:
                    await self._send(frame)
            except _Closed:
                sink.cancel()  # the client is gone; the reader ends the connection

    async def _read_frame(self) -> Message:
        while True:
            message = self._decoder.next_message()
            if not isinstance(message, NeedMore):
                return message
            try:
                data = await self._stream.receive(_RECEIVE_BYTES)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise _Closed from exc
            self._decoder.feed(data)

    async def _send(self, message: Message) -> None:
        try:
            data = encode_frame(message, self._mode)
        except (CaldrixError, ValueError, TypeError, OverflowError) as exc:
            # Whatever a reply holds, failing to encode it must not end the pool: say so instead.
            logger.error("%s: cannot encode a %s frame: %s", self.name, message.get("op"), exc)
            rid = message.get("rid")
            fallback = ErrorReply(
                op="error",
                rid=rid if isinstance(rid, int) else None,
                code=InternalError.code,
                message=f"the pool could not encode its reply ({type(exc).__name__})",
            )
            data = encode_frame(fallback.model_dump(), self._mode)
        async with self._send_lock:
            try:
                await self._stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise _Closed from exc

    async def _send_error(self, exc: CaldrixError, rid: int | None) -> None:
        # A detail that repeats what the client sent (an id, a name) is cut like a quote is.
        details = {key: _cut(value) for key, value in exc.details.items() if key not in _ERROR_FIELDS}
        reply = ErrorReply(op="error", rid=rid, code=exc.code, message=one_line(exc.message), **details)
        await self._send(reply.model_dump())


class FrameSink:
    """Where a generation running on its member's thread reports: each call hands a frame to
    the event loop, which forwards it to the client in order."""

    def __init__(self, rid: int, sender: MemoryObjectSendStream[Message]) -> None:
        self._rid = rid
        self._sender = sender
        # The pool runs anyio on asyncio. Frames are handed to the loop without waiting for it:
        # a blocking round trip per token would stall decoding on the engine thread.
        self._loop = asyncio.get_running_loop()
        self._stop = threading.Event()
        self.started = False
        """Whether the engine has reported anything yet (the generation left the queue)."""

    def progress(self, done: int, total: int) -> None:
        self.started = True
        self._push(ProgressFrame(op="progress", rid=self._rid, done=done, total=total).model_dump())

    def waiting(self, total: int) -> None:
        """From the event loop: the generation is still queued."""
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._sender.send_nowait(
                ProgressFrame(op="progress", rid=self._rid, done=0, total=total).model_dump()
            )

    def token(self, text: str) -> None:
        self.started = True
        self._push(TokenFrame(op="token", rid=self._rid, text=text).model_dump())

    def cancelled(self) -> bool:
        return self._stop.is_set()

    def cancel(self) -> None:
        self._stop.set()

    def close(self) -> None:
        """No more frames (called on the event loop when the generation ends)."""
        self._sender.close()

    def _push(self, frame: Message) -> None:
        """From the engine thread: queue ``frame`` for the event loop (in order) and go on."""
        if self._stop.is_set():
            return
        try:
            self._loop.call_soon_threadsafe(self._deliver, frame)
        except RuntimeError:  # the event loop has closed
            self._stop.set()

    def _deliver(self, frame: Message) -> None:
        """On the event loop: into the connection's unbounded frame stream."""
        try:
            self._sender.send_nowait(frame)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._stop.set()  # nobody will read further frames: stop generating them


def _protocol_words(value: object) -> str:
    if value is None:
        return "a hello without a protocol number"
    if isinstance(value, str):
        return f"the text {quoted(value)} (the protocol is a number)"
    return quoted(value)


def _cut(value: object) -> object:
    return value[:ECHO_CHARS] if isinstance(value, str) else value


def _pid() -> int:
    return os.getpid()

"""The pool port over caldrix's protocol client.

One connection carries the control requests (contexts, members), one at a time; every
generation gets a connection of its own, as the spec draws it ("one connection per
generation"), so a cancelled generation closes only its own connection. At most
``pool.max_connections`` generations run at once. Every caldrix error is translated here into
an :class:`aerix.errors.PoolError` and re-raised ``from`` the original.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

from aerix import __version__
from aerix.app.ports.pool import (
    ContextCounts,
    ContextEditOp,
    GenerationDone,
    GenerationTimings,
    MemberInfo,
    OnProgress,
    OnToken,
    SegmentAppend,
    SegmentCount,
    SegmentSpec,
    TokenLogprob,
)
from aerix.domain.bounds import FRAME_GAP_SECS, GENERATION_GUARD, POOL_CONTROL_TIMEOUT_SECS
from aerix.domain.settings import PoolSettings
from aerix.errors import ContextOverflow, PoolError, PoolUnavailable
from caldrix import protocol
from caldrix.protocol import CaldrixError, ClientBounds, DoneFrame, PoolClient, ProgressFrame, TokenFrame
from caldrix.protocol import messages as wire

CLIENT_NAME = f"aerix {__version__}"
_DEFAULT_SETTINGS = PoolSettings()

T = TypeVar("T")


def client_bounds(settings: PoolSettings) -> ClientBounds:
    """How long aerix waits on the pool (the spec's bounds): each control request, the gap
    between two frames of a generation, and a member load (``pool.start_timeout_secs``)."""
    return ClientBounds(
        control_secs=POOL_CONTROL_TIMEOUT_SECS,
        frame_gap_secs=FRAME_GAP_SECS,
        member_load_secs=settings.start_timeout_secs,
    )


def translate(exc: CaldrixError) -> PoolError:
    """The aerix error a caldrix error stands for (the message is already one line)."""
    message = str(exc)
    if isinstance(exc, protocol.PoolUnavailable):
        return PoolUnavailable(message)
    if isinstance(exc, protocol.ContextOverflow):
        return ContextOverflow(f"the context does not fit the member's window: {message}")
    return PoolError(message, code=exc.code)


@asynccontextmanager
async def _translated() -> AsyncIterator[None]:
    try:
        yield
    except CaldrixError as exc:
        raise translate(exc) from exc


class CaldrixPool:
    """:class:`aerix.app.ports.pool.PoolPort` on a caldrix pool's socket: one control connection
    for the members and the contexts, a connection of its own for each generation."""

    def __init__(self, socket_path: Path, settings: PoolSettings = _DEFAULT_SETTINGS) -> None:
        """``settings`` bound the pool's use: at most ``pool.max_connections`` generations at
        once, a member load waits ``pool.start_timeout_secs``, the rest the spec's bounds."""
        self.socket_path = socket_path
        self.bounds = client_bounds(settings)
        self.control = ControlConnection(socket_path, self.bounds)
        self.members = CaldrixMembers(self.control)
        self.contexts = CaldrixContexts(self.control, anyio.CapacityLimiter(settings.max_connections))

    async def aclose(self) -> None:
        await self.control.aclose()

    async def __aenter__(self) -> CaldrixPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def pid(self) -> int:
        """The pool's process id (from its hello)."""
        client = await self.control.client()
        return client.hello.pid


class ControlConnection:
    """The one connection a pool's members and contexts are asked about, opened when first
    needed and again after it closed."""

    def __init__(self, socket_path: Path, bounds: ClientBounds) -> None:
        self.socket_path = socket_path
        self.bounds = bounds
        self._client: PoolClient | None = None
        self._lock = anyio.Lock()

    async def client(self) -> PoolClient:
        async with self._lock, _translated():
            if self._client is None or self._client.closed:
                self._client = await protocol.connect(
                    self.socket_path, bounds=self.bounds, client_name=CLIENT_NAME
                )
            return self._client

    async def call(self, call: Callable[[PoolClient], Awaitable[T]]) -> T:
        """``call`` on the control connection, with caldrix's errors translated."""
        client = await self.client()
        async with _translated():
            return await call(client)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class CaldrixMembers:
    """:class:`aerix.app.ports.pool.PoolMembers` over the control connection."""

    def __init__(self, control: ControlConnection) -> None:
        self._control = control

    async def loaded(self) -> list[MemberInfo]:
        reply = await self._control.call(lambda client: client.member_list())
        return [_member(member) for member in reply.members]

    async def load(self, name: str, model: str, flags: Mapping[str, Any] | None = None) -> MemberInfo:
        reply = await self._control.call(lambda client: client.member_load(name, model, flags))
        return _member(reply.member)

    async def unload(self, name: str) -> None:
        await self._control.call(lambda client: client.member_unload(name))


class CaldrixContexts:
    """:class:`aerix.app.ports.pool.PoolContexts`: contexts over the control connection, each
    generation on a connection of its own, at most ``generations`` at once."""

    def __init__(self, control: ControlConnection, generations: anyio.CapacityLimiter) -> None:
        self._control = control
        self._generations = generations

    async def create(self, member: str, segments: Sequence[SegmentSpec]) -> ContextCounts:
        plain = [dict(segment) for segment in segments]
        reply = await self._control.call(lambda client: client.context_create(member, plain))
        return _counts(reply.context, reply.segments, reply.tokens, member)

    async def edit(self, context: str, edits: Sequence[ContextEditOp]) -> ContextCounts:
        plain = [_plain(edit) for edit in edits]
        reply = await self._control.call(lambda client: client.context_edit(context, plain))
        return _counts(context, reply.segments, reply.tokens)

    async def fork(self, context: str, keep: int) -> ContextCounts:
        reply = await self._control.call(lambda client: client.context_fork(context, keep))
        return _counts(reply.context, reply.segments, reply.tokens)

    async def get(self, context: str) -> ContextCounts:
        reply = await self._control.call(lambda client: client.context_get(context))
        return _counts(context, reply.segments, reply.tokens, reply.member)

    async def drop(self, context: str) -> None:
        await self._control.call(lambda client: client.context_drop(context))

    async def generate(
        self,
        context: str,
        max_new_tokens: int,
        constraint: Mapping[str, Any] | None = None,
        logprobs: int = 0,
        append: SegmentAppend | None = None,
        on_token: OnToken | None = None,
        on_progress: OnProgress | None = None,
    ) -> GenerationDone:
        output = wire.AppendOutput(id=append.id, pinned=append.pinned) if append is not None else None
        async with self._generations, _translated():
            client = await protocol.connect(
                self._control.socket_path, bounds=self._control.bounds, client_name=CLIENT_NAME
            )
            try:
                generation = client.generate(
                    context,
                    max_new_tokens,
                    constraint=dict(constraint) if constraint is not None else None,
                    logprobs=logprobs,
                    append=output,
                    # Every generation aerix asks for is guarded: none may run away.
                    guard=dict(GENERATION_GUARD),
                )
                async with generation as frames:
                    async for frame in frames:
                        if isinstance(frame, TokenFrame) and on_token is not None:
                            on_token(frame.text)
                        elif isinstance(frame, ProgressFrame) and on_progress is not None:
                            on_progress(frame.done, frame.total)
                        elif isinstance(frame, DoneFrame):
                            return _done(frame)
            finally:
                await client.aclose()
        raise PoolError("the pool ended a generation without its done frame")


def _plain(edit: ContextEditOp) -> dict[str, Any]:
    return {key: dict(value) if isinstance(value, Mapping) else value for key, value in edit.items()}


def _counts(
    context: str,
    segments: Sequence[wire.SegmentCount | wire.SegmentWithCount],
    tokens: int,
    member: str | None = None,
) -> ContextCounts:
    counts = tuple(SegmentCount(segment.id, segment.tokens) for segment in segments)
    return ContextCounts(context=context, segments=counts, tokens=tokens, member=member)


def _member(info: wire.MemberObject) -> MemberInfo:
    return MemberInfo(
        name=info.name,
        model=info.model,
        state=info.state,
        n_ctx=info.n_ctx,
        lane=info.lane,
        constraints=tuple(info.constraints),
        threads=info.threads,
        footprint_bytes=info.footprint_bytes,
        queue=info.queue,
    )


def _done(frame: DoneFrame) -> GenerationDone:
    logprobs = None
    if frame.logprobs is not None:
        logprobs = tuple(
            TokenLogprob(item.token, item.logprob, tuple((top.token, top.logprob) for top in item.top))
            for item in frame.logprobs
        )
    segment = SegmentCount(frame.segment.id, frame.segment.tokens) if frame.segment is not None else None
    return GenerationDone(
        text=frame.text,
        finish=frame.finish,
        prompt_tokens=frame.prompt_tokens,
        completion_tokens=frame.completion_tokens,
        recomputed_from=frame.recomputed_from,
        timings=GenerationTimings(frame.timings.queue_ms, frame.timings.prefill_ms, frame.timings.decode_ms),
        logprobs=logprobs,
        segment=segment,
        reason=frame.reason,
    )

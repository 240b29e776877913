"""The pool port over caldrix's protocol client.

One connection carries the control requests (contexts, members), one at a time; every
generation gets a connection of its own, as the spec draws it ("one connection per
generation"), so a cancelled generation closes only its own connection. At most
``pool.max_connections`` generations run at once. Every caldrix error is translated here into
an :class:`aerix.errors.PoolError` and re-raised ``from`` the original.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from aerix import __version__
from aerix.app.ports import (
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
from aerix.errors import ContextOverflow, PoolError, PoolUnavailable
from caldrix import protocol
from caldrix.protocol import CaldrixError, DoneFrame, PoolClient, ProgressFrame, TokenFrame

CLIENT_NAME = f"aerix {__version__}"


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
    """:class:`aerix.app.ports.PoolPort` on a caldrix pool's socket."""

    def __init__(
        self, socket_path: Path, max_connections: int = 4, member_load_timeout: float | None = None
    ) -> None:
        """``member_load_timeout``: how long a ``member.load`` may take (the spec bounds it by
        ``pool.start_timeout_secs``); None leaves the protocol client's default."""
        self.socket_path = socket_path
        self.member_load_timeout = member_load_timeout
        self._control: PoolClient | None = None
        self._control_lock = anyio.Lock()
        self._generations = anyio.CapacityLimiter(max_connections)

    async def aclose(self) -> None:
        if self._control is not None:
            await self._control.aclose()
            self._control = None

    async def __aenter__(self) -> CaldrixPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def pid(self) -> int:
        """The pool's process id (from its hello)."""
        client = await self._client()
        return client.hello.pid

    # ---- members ----------------------------------------------------------------------------

    async def member_list(self) -> list[MemberInfo]:
        reply = await self._request("member.list")
        return [_member(item) for item in reply["members"]]

    async def member_load(self, name: str, model: str, flags: Mapping[str, Any] | None = None) -> MemberInfo:
        fields: dict[str, Any] = {"name": name, "model": model}
        if flags:
            fields["flags"] = dict(flags)
        reply = await self._request("member.load", timeout=self.member_load_timeout, **fields)
        return _member(reply["member"])

    # ---- contexts ---------------------------------------------------------------------------

    async def create_context(self, member: str, segments: Sequence[SegmentSpec]) -> ContextCounts:
        reply = await self._request("context.create", member=member, segments=[dict(s) for s in segments])
        return _counts(reply["context"], reply, member)

    async def edit_context(self, context: str, edits: Sequence[ContextEditOp]) -> ContextCounts:
        reply = await self._request("context.edit", context=context, edits=[_plain(e) for e in edits])
        return _counts(context, reply)

    async def fork_context(self, context: str, keep: int) -> ContextCounts:
        reply = await self._request("context.fork", context=context, keep=keep)
        return _counts(reply["context"], reply)

    async def get_context(self, context: str) -> ContextCounts:
        reply = await self._request("context.get", context=context)
        return _counts(context, reply, reply.get("member"))

    async def drop_context(self, context: str) -> None:
        await self._request("context.drop", context=context)

    # ---- generation -------------------------------------------------------------------------

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
        fields: dict[str, Any] = {"constraint": dict(constraint) if constraint is not None else None}
        if logprobs:
            fields["logprobs"] = logprobs
        if append is not None:
            fields["append"] = {"id": append.id, "pinned": append.pinned}
        async with self._generations, _translated():
            client = await protocol.connect(self.socket_path, client_name=CLIENT_NAME)
            try:
                async with client.generate(context, max_new_tokens, **fields) as frames:
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

    # ---- the control connection ---------------------------------------------------------------

    async def _client(self) -> PoolClient:
        async with self._control_lock, _translated():
            if self._control is None or self._control.closed:
                self._control = await protocol.connect(self.socket_path, client_name=CLIENT_NAME)
            return self._control

    async def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        client = await self._client()
        async with _translated():
            return await client.request(op, **fields)


def _plain(edit: ContextEditOp) -> dict[str, Any]:
    return {key: dict(value) if isinstance(value, Mapping) else value for key, value in edit.items()}


def _counts(context: str, reply: Mapping[str, Any], member: str | None = None) -> ContextCounts:
    segments = tuple(SegmentCount(str(s["id"]), int(s["tokens"])) for s in reply["segments"])
    return ContextCounts(context=context, segments=segments, tokens=int(reply["tokens"]), member=member)


def _member(info: Mapping[str, Any]) -> MemberInfo:
    return MemberInfo(
        name=info["name"],
        model=info["model"],
        state=info["state"],
        n_ctx=int(info["n_ctx"]),
        lane=info["lane"],
        constraints=tuple(info.get("constraints", ())),
        threads=info.get("threads"),
        footprint_bytes=info.get("footprint_bytes"),
        queue=int(info.get("queue", 0)),
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
    )

"""An anyio client for caldrix-protocol 2, with one typed method per op.

    client = await connect(socket_path, bounds=ClientBounds(30.0, 600.0, 900.0))   # hello
    created = await client.context_create("main", [SegmentSpec(id="u", role="user", text="Hi")])
    async with client.generate(created.context, max_new_tokens=64) as frames:
        async for frame in frames:                 # ProgressFrame / TokenFrame, then DoneFrame
            ...
    await client.aclose()

Requests are built from the request models of :mod:`caldrix.protocol.messages` and checked
before they are sent: a value the pool would refuse raises the same :class:`BadRequest`, naming
the same field, without a round trip. Replies are read into the reply models (``member_list()``
returns a :class:`MemberListResult` …), so a field renamed in the models fails the type check
of every caller. A segment, an edit, a constraint or an ``append`` may be given as its model or
as the mapping protocol.md spells.

How long the client waits is the caller's to say (:class:`ClientBounds`): the client holds no
bound of its own. An ``error`` reply becomes the matching
:class:`~caldrix.errors.CaldrixError` subclass (its extra fields in ``details``); a pool that
cannot be reached, goes silent past a bound, or hangs up becomes
:class:`~caldrix.errors.PoolUnavailable`. Requests on one connection run one at a time. Leaving
a generation before its ``done`` closes the connection, which cancels it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from caldrix import __version__
from caldrix.errors import InternalError, PoolUnavailable
from caldrix.protocol._connection import ClientBounds, Connection, ModeMismatch, open_stream
from caldrix.protocol._exchange import checked, edit_op, error_from_reply, part, result_of, wire
from caldrix.protocol.framing import FrameMode
from caldrix.protocol.messages import (
    AppendOutput,
    Constraint,
    ContextCreate,
    ContextDrop,
    ContextEdit,
    ContextEditResult,
    ContextFork,
    ContextGet,
    ContextGetResult,
    ContextResult,
    DoneFrame,
    Edit,
    Generate,
    GenerationFrame,
    Guard,
    MemberList,
    MemberListResult,
    MemberLoad,
    MemberLoadResult,
    MemberUnload,
    PoolStatus,
    PoolStatusResult,
    PoolStop,
    Request,
    SegmentSpec,
)
from caldrix.protocol.transport import default_socket_path

__all__ = ["ClientBounds", "Generation", "PoolClient", "connect", "error_from_reply"]

#: The rid a request is built and checked with; the real one is drawn when it is sent.
UNSENT: Final = 0

FramesOption = FrameMode | Literal["auto"]


class PoolClient(Connection):
    """One connection to a pool, after its handshake, with a method per op."""

    async def __aenter__(self) -> PoolClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ---- members ----------------------------------------------------------------------------

    async def member_list(self) -> MemberListResult:
        reply = await self._call(lambda: MemberList(op="member.list", rid=UNSENT))
        return result_of(MemberListResult, reply, "member.list")

    async def member_load(
        self, name: str, model: str, flags: Mapping[str, Any] | None = None
    ) -> MemberLoadResult:
        """Load ``model`` (a model reference) as member ``name``; waits up to the load bound."""
        reply = await self._call(
            lambda: MemberLoad(op="member.load", rid=UNSENT, name=name, model=model, flags=dict(flags or {})),
            timeout=self.bounds.member_load_secs,
        )
        return result_of(MemberLoadResult, reply, "member.load")

    async def member_unload(self, name: str) -> None:
        await self._call(lambda: MemberUnload(op="member.unload", rid=UNSENT, name=name))

    # ---- contexts ---------------------------------------------------------------------------

    async def context_create(
        self, member: str, segments: Sequence[SegmentSpec | Mapping[str, Any]]
    ) -> ContextResult:
        parts = [part(SegmentSpec, segment, ("segments", i)) for i, segment in enumerate(segments)]
        reply = await self._call(
            lambda: ContextCreate(op="context.create", rid=UNSENT, member=member, segments=parts)
        )
        return result_of(ContextResult, reply, "context.create")

    async def context_edit(
        self, context: str, edits: Sequence[Edit | Mapping[str, Any]]
    ) -> ContextEditResult:
        """Apply ``edits`` (append, replace, remove) in order, all or nothing."""
        parts = [edit_op(edit, i) for i, edit in enumerate(edits)]
        reply = await self._call(
            lambda: ContextEdit(op="context.edit", rid=UNSENT, context=context, edits=parts)
        )
        return result_of(ContextEditResult, reply, "context.edit")

    async def context_fork(self, context: str, keep: int) -> ContextResult:
        """A new context holding the first ``keep`` segments of ``context``."""
        reply = await self._call(
            lambda: ContextFork(op="context.fork", rid=UNSENT, context=context, keep=keep)
        )
        return result_of(ContextResult, reply, "context.fork")

    async def context_get(self, context: str) -> ContextGetResult:
        reply = await self._call(lambda: ContextGet(op="context.get", rid=UNSENT, context=context))
        return result_of(ContextGetResult, reply, "context.get")

    async def context_drop(self, context: str) -> None:
        await self._call(lambda: ContextDrop(op="context.drop", rid=UNSENT, context=context))

    # ---- generation and the pool ------------------------------------------------------------

    def generate(
        self,
        context: str,
        max_new_tokens: int,
        *,
        constraint: Constraint | Mapping[str, Any] | None = None,
        logprobs: int = 0,
        temperature: float = 0.0,
        seed: int | None = None,
        stop: Sequence[str] = (),
        append: AppendOutput | Mapping[str, Any] | None = None,
        top_k: int = 0,
        top_p: float = 1.0,
        guard: Guard | Mapping[str, Any] | None = None,
    ) -> Generation:
        """A generation on ``context``: iterate it for progress and token frames and the final
        :class:`DoneFrame`, or await its :meth:`Generation.result`. ``append`` stores the output
        as an assistant segment of the context; without it the generation is a probe."""
        request = checked(
            lambda: Generate(
                op="generate",
                rid=UNSENT,
                context=context,
                max_new_tokens=max_new_tokens,
                constraint=part(Constraint, constraint, ("constraint",)) if constraint is not None else None,
                logprobs=logprobs,
                temperature=temperature,
                seed=seed,
                stop=list(stop),
                append=part(AppendOutput, append, ("append",)) if append is not None else None,
                top_k=top_k,
                top_p=top_p,
                guard=part(Guard, guard, ("guard",)) if guard is not None else None,
            )
        )
        return Generation(self, request)

    async def pool_status(self) -> PoolStatusResult:
        reply = await self._call(lambda: PoolStatus(op="pool.status", rid=UNSENT))
        return result_of(PoolStatusResult, reply, "pool.status")

    async def pool_stop(self) -> None:
        """Ask the pool to stop; it then closes every connection (see :meth:`wait_closed`)."""
        await self._call(lambda: PoolStop(op="pool.stop", rid=UNSENT))

    async def raw_request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send a control request exactly as given, unchecked, and return its ``ok`` reply's
        fields: for an op this client has no method for (a newer pool's), and for testing
        what a pool itself refuses. An ``error`` reply raises as every request's does."""
        return await self.exchange(lambda rid: {"op": op, "rid": rid, **fields}, op, self.bounds.control_secs)

    # ---- the exchange -----------------------------------------------------------------------

    async def _call(self, build: Callable[[], Request], *, timeout: float | None = None) -> dict[str, Any]:
        """Check the request ``build`` makes (a refusal raises before anything is sent), send
        it with the next rid and return its ``ok`` reply's fields."""
        request = checked(build)
        return await self.exchange(
            lambda rid: wire(request.model_copy(update={"rid": rid})),
            request.op,
            self.bounds.control_secs if timeout is None else timeout,
        )


class Generation:
    """The frames of one ``generate`` request, as an async iterator (and context manager).

    The request is sent when iteration starts. Iteration ends after the :class:`DoneFrame`
    (the last item); an ``error`` frame raises. Closing the generation early closes the whole
    connection, which is how the protocol cancels a generation.
    """

    def __init__(self, client: PoolClient, request: Generate) -> None:
        self._client = client
        self._request = request
        self._iterator: AsyncIterator[GenerationFrame] | None = None
        self.done: DoneFrame | None = None

    def __aiter__(self) -> AsyncIterator[GenerationFrame]:
        if self._iterator is None:
            self._iterator = self._client.generation_frames(self._request, self._finished)
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

    def _finished(self, done: DoneFrame) -> None:
        self.done = done


async def connect(
    socket_path: Path | str | None = None,
    *,
    bounds: ClientBounds,
    frames: FramesOption = "auto",
    client_name: str = f"caldrix-client {__version__}",
) -> PoolClient:
    """Connect to the pool on ``socket_path`` (default: the default socket) and shake hands,
    waiting at most ``bounds.control_secs`` for each.

    ``frames="auto"`` speaks CBOR first and, when the pool answers in JSON (its ``--frames
    json`` mode), reconnects in JSON."""
    path = Path(socket_path) if socket_path is not None else default_socket_path()
    mode: FrameMode = "cbor" if frames == "auto" else frames
    client = PoolClient(await open_stream(path, bounds), mode, path, bounds)
    try:
        await client.shake_hands(client_name)
    except ModeMismatch as mismatch:
        if frames != "auto":
            raise PoolUnavailable(
                f"the pool at {path} speaks {mismatch.pool_mode} frames, not {mode}; "
                f"connect with frames='{mismatch.pool_mode}'"
            ) from None
        client = PoolClient(await open_stream(path, bounds), mismatch.pool_mode, path, bounds)
        await client.shake_hands(client_name)
    return client

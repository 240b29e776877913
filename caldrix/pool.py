"""The pool's shared state and its operations, one method per protocol op.

Connections parse frames and stream replies; everything they ask for happens here, on the
members and contexts every connection shares. Every reply is one of the result models of
:mod:`caldrix.protocol.messages`, the ones the client reads. Engine work goes to the member's thread
(generations, loads) or to worker threads (rendering a context, which only tokenizes), never
onto the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any, Final

import anyio
import anyio.to_thread
from pydantic import ValidationError

from caldrix import __version__
from caldrix.contexts import ContextStore
from caldrix.engine_seam import GenerationParams, GuardLimits, ServingFlags
from caldrix.errors import BadRequest, DuplicateSegment, quoted
from caldrix.generation.templates import RenderedContext, render_context
from caldrix.members import CancellableSink, Members, MemoryPlan
from caldrix.protocol.messages import (
    ContextCreate,
    ContextDrop,
    ContextEdit,
    ContextEditResult,
    ContextFork,
    ContextGet,
    ContextResult,
    ControlRequest,
    ControlResult,
    DoneFrame,
    Generate,
    GenerationCounts,
    MemberList,
    MemberListResult,
    MemberLoad,
    MemberLoadResult,
    MemberUnload,
    PoolStatus,
    PoolStatusResult,
    PoolStop,
    PrefixStoreStats,
    SegmentCount,
    SegmentSpec,
    Timings,
    TokenLogprob,
)
from caldrix.protocol.parsing import bad_request_from

logger = logging.getLogger("caldrix.pool")

#: Concurrent generations served (the spec's ``pool.max_connections``).
MAX_CONNECTIONS: Final = 4


class Pool:
    """Members, contexts and the counters ``pool.status`` reports."""

    def __init__(self, plan: MemoryPlan, *, max_connections: int = MAX_CONNECTIONS) -> None:
        self.members = Members(plan, on_unload=self._member_unloading)
        self.contexts = ContextStore(self._render, self._window)
        self.generation_slots = anyio.CapacityLimiter(max_connections)
        self.started = time.monotonic()
        self.connections = 0
        self.stop_requested = anyio.Event()
        self._control_scopes: set[anyio.CancelScope] = set()
        self._control_cancelled = False

    def request_stop(self) -> None:
        self.stop_requested.set()

    @contextlib.contextmanager
    def control_scope(self) -> Iterator[anyio.CancelScope]:
        """A shielded scope for one control request: a client leaving does not cancel it, the
        pool stopping does (:meth:`cancel_control_requests`)."""
        scope = anyio.CancelScope(shield=True)
        if self._control_cancelled:
            scope.cancel()
        self._control_scopes.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._control_scopes.discard(scope)

    def cancel_control_requests(self) -> int:
        """Cancel every control request still running (a load that does not return), and any
        started from now on; returns how many were running."""
        self._control_cancelled = True
        running = list(self._control_scopes)
        for scope in running:
            scope.cancel()
        return len(running)

    async def handle(self, request: ControlRequest) -> ControlResult:
        """Run one control request (anything but ``generate``); returns its ok reply's fields,
        None for an op whose reply has none."""
        match request:
            case MemberList():
                members = [m.info() for m in self.members.all()]
                return MemberListResult(members=members, memory=self.members.memory())
            case MemberLoad():
                member = await self.members.load(request.name, request.model, _serving_flags(request.flags))
                return MemberLoadResult(member=member.info())
            case MemberUnload():
                await self.members.unload(request.name)
                return None
            case ContextCreate():
                self.members.get(request.member).ready_engine()
                context = await self.contexts.create(request.member, request.segments)
                return ContextResult(context=context.id, segments=context.counts(), tokens=context.tokens)
            case ContextEdit():
                context = await self.contexts.edit(request.context, request.edits)
                return ContextEditResult(segments=context.counts(), tokens=context.tokens)
            case ContextFork():
                context = await self.contexts.fork(request.context, request.keep)
                return ContextResult(context=context.id, segments=context.counts(), tokens=context.tokens)
            case ContextGet():
                return self.contexts.get(request.context).described()
            case ContextDrop():
                self.contexts.drop(request.context)
                return None
            case PoolStatus():
                return self.status()
            case PoolStop():
                return None  # the connection asks for the stop once this reply is sent
        raise BadRequest(f"{quoted(request.op)} is not a control op")

    def status(self) -> PoolStatusResult:
        members = self.members.all()
        return PoolStatusResult(
            version=__version__,
            pid=os.getpid(),
            uptime_s=round(time.monotonic() - self.started, 3),
            members=[m.info() for m in members],
            connections=self.connections,
            contexts=len(self.contexts),
            prefix_store={m.name: PrefixStoreStats.model_validate(m.prefix_store.stats()) for m in members},
            generations=self.generation_counts(),
        )

    def generation_counts(self) -> GenerationCounts:
        """Generations admitted (queued on a member or running) and waiting for admission
        under ``pool.max_connections``: an extra ``pool.status`` field."""
        slots = self.generation_slots
        return GenerationCounts(
            limit=int(slots.total_tokens),
            admitted=int(slots.borrowed_tokens),
            waiting=slots.statistics().tasks_waiting,
        )

    async def generate(self, request: Generate, sink: CancellableSink) -> DoneFrame:
        """Run one generation to its end; returns its ``done`` frame. Waits for one of the
        pool's generation slots, then in its member's queue."""
        context = self.contexts.get(request.context)
        member = self.members.get(context.member)
        engine = member.ready_engine()
        context.check_room(request.max_new_tokens, engine.n_ctx)
        if request.append is not None and context.index_of(request.append.id) is not None:
            raise DuplicateSegment(
                f"context {context.id} already holds a segment {quoted(request.append.id)}",
                segment=request.append.id,
            )
        params = GenerationParams(
            max_new_tokens=request.max_new_tokens,
            constraint=request.constraint.as_dict() if request.constraint is not None else None,
            temperature=request.temperature,
            seed=request.seed,
            stop=list(request.stop),
            logprobs=request.logprobs,
            top_k=request.top_k,
            top_p=request.top_p,
            guard=GuardLimits(**request.guard.model_dump()) if request.guard is not None else None,
        )
        arrived = time.perf_counter()
        async with self.generation_slots:
            waited_ms = (time.perf_counter() - arrived) * 1000.0
            result = await member.generate(
                context.rendered.prompt_tokens,
                params,
                sink,
                appended=request.append is not None,
                prompt_text=context.rendered.prompt_text,
            )
        segment: SegmentCount | None = None
        # A degenerate output is not kept: the context stays as it was, for the client to ask again.
        if request.append is not None and result.finish != "degenerate":
            output = SegmentSpec(
                id=request.append.id, role="assistant", text=result.text, pinned=request.append.pinned
            )
            context = await self.contexts.append(context.id, output)
            index = context.index_of(output.id)
            tokens = len(context.rendered.segment_tokens[index]) if index is not None else 0
            segment = SegmentCount(id=output.id, tokens=tokens)
        logprobs = None
        if result.logprobs is not None:
            logprobs = [TokenLogprob.model_validate(entry) for entry in result.logprobs]
        return DoneFrame(
            op="done",
            rid=request.rid,
            text=result.text,
            finish=result.finish,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            recomputed_from=result.recomputed_from,
            timings=Timings(
                queue_ms=round(result.queue_ms + waited_ms, 3),
                prefill_ms=round(result.prefill_ms, 3),
                decode_ms=round(result.decode_ms, 3),
            ),
            logprobs=logprobs,
            segment=segment,
            stop_string=result.stop_string,
            reason=result.reason,
        )

    async def _render(self, member_name: str, segments: Sequence[SegmentSpec]) -> RenderedContext:
        # Rendering only tokenizes, which engines allow from any thread, so a context change
        # does not wait behind a long generation on the member's own thread.
        engine = self.members.get(member_name).ready_engine()
        plain = [segment.model_dump() for segment in segments]
        return await anyio.to_thread.run_sync(render_context, engine, plain)

    def _window(self, member_name: str) -> int:
        return self.members.get(member_name).ready_engine().n_ctx

    def _member_unloading(self, name: str) -> None:
        dropped = self.contexts.drop_member(name)
        if dropped:
            logger.info("member %s unloading: dropped %d context(s)", name, dropped)


def _serving_flags(flags: dict[str, Any]) -> ServingFlags:
    try:
        return ServingFlags.model_validate(flags)
    except ValidationError as exc:
        error = bad_request_from(exc)
        field = f"flags.{error.details['field']}"
        raise BadRequest(
            error.message.replace(f"'{error.details['field']}'", f"{quoted(field)}", 1), field=field
        ) from exc

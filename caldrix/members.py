"""Members: loaded models, each with its own engine thread and FIFO queue.

A member owns one engine, and every call into that engine (opening it, generating, closing it)
runs on the member's own thread (``caldrix.engine_thread``), one at a time in the order
submitted: the single-stream loop (``--max-batch 1``). The event loop only waits for results.
Several members may be resident when their footprints, plus one context budget each, fit the
memory limit (:func:`caldrix.models.fit.check_fit`); a member whose footprint is unknown only
ever loads alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

import anyio

from caldrix.engine_seam import (
    Engine,
    GenerationCancelled,
    GenerationParams,
    GenerationResult,
    GenerationSink,
    ServedModel,
    ServingFlags,
    StreamingModel,
)
from caldrix.engine_thread import EngineThread
from caldrix.engines.loader import open_engine
from caldrix.errors import CaldrixError, InternalError, MemberExists, MemberNotFound, quoted
from caldrix.models.fit import check_fit, default_memory_limit, estimate_footprint, window_for
from caldrix.models.references import ResolvedModel, is_remote_reference, resolve_model
from caldrix.protocol.messages import MemberObject, MemberState, MemoryFigures, RemoteInfo
from caldrix.store.prefix_store import PrefixStore, default_context_budget

logger = logging.getLogger("caldrix.pool")


@dataclass(eq=False)
class Member:
    """One loaded model: its engine, its thread, its prefix store."""

    name: str
    reference: str
    flags: ServingFlags
    thread: EngineThread
    prefix_store: PrefixStore
    state: MemberState = "loading"
    path: Path | None = None
    engine: ServedModel | None = None
    footprint_bytes: int | None = None
    fit_footprint: int | None = None
    """The footprint the memory fit counts beside other members: unknown for a legacy GGML file
    (its header bounds the load against the limit, but ctransformers' scratch buffers are
    shared by every model of an architecture), or when it could not be estimated, so such a
    member stays alone both ways."""
    n_ctx: int = 0
    error: str | None = None
    unloading: bool = False
    opening: bool = False
    """Set once the engine is being opened: a failure from then on leaves a ``failed`` member."""

    def info(self) -> MemberObject:
        """The protocol's member object."""
        engine = self.engine
        return MemberObject(
            name=self.name,
            model=self.reference,
            path=str(self.path) if self.path is not None else "",
            state=self.state,
            footprint_bytes=self.footprint_bytes,
            n_ctx=engine.n_ctx if engine is not None else self.n_ctx,
            lane=engine.capabilities.lane if engine is not None else "cpu",
            threads=engine.threads if engine is not None else self.flags.threads,
            constraints=list(engine.capabilities.constraints) if engine is not None else [],
            queue=self.thread.pending,
            error=self.error or None,
            remote=RemoteInfo.model_validate(engine.describe())
            if isinstance(engine, StreamingModel)
            else None,
            flash_attention=True if engine is not None and engine.capabilities.flash_attention else None,
        )

    @property
    def remote(self) -> bool:
        """Whether the model runs on a server elsewhere (an ``openai+http(s)://`` reference)."""
        return is_remote_reference(self.reference)

    def ready_engine(self) -> ServedModel:
        if self.state != "ready" or self.engine is None or self.unloading:
            raise MemberNotFound(f"member {quoted(self.name)} is {self._state_words()}, not ready")
        return self.engine

    async def generate(
        self,
        prompt_tokens: Sequence[int],
        params: GenerationParams,
        sink: CancellableSink,
        *,
        appended: bool,
        prompt_text: str | None = None,
    ) -> GenerationResult:
        """Queue one generation on this member's thread and wait for its result. The result's
        ``queue_ms`` is the time it waited behind others. A remote member is sent the prompt
        (``prompt_text`` is its rendered text) and keeps no rows here."""
        engine = self.ready_engine()
        watched = _UnloadWatch(sink, self)
        submitted = time.perf_counter()

        def job() -> GenerationResult:
            if self.unloading:
                raise MemberNotFound(
                    f"member {quoted(self.name)} was unloaded before this generation started"
                )
            started = time.perf_counter()
            try:
                if isinstance(engine, StreamingModel):
                    result = engine.stream_generation(prompt_tokens, params, watched, prompt_text=prompt_text)
                else:
                    # The prefix store decides where the prefill starts, keeps the rows afterwards
                    # and learns this member's rates: the one place a local generation goes through.
                    local = cast(Engine, engine)  # every member that is not remote is a local engine
                    result = self.prefix_store.generate(
                        local, prompt_tokens, params, watched, appended=appended, defer=self.thread.defer
                    )
            except GenerationCancelled as cancelled:
                if self.unloading:
                    gone = f"member {quoted(self.name)} was unloaded during this generation"
                    raise MemberNotFound(gone) from None
                logger.info(
                    "member %s: generation cancelled after %d token(s) (its client left)",
                    self.name,
                    cancelled.partial.completion_tokens,
                )
                raise
            result.queue_ms = (started - submitted) * 1000.0
            return result

        return await self.thread.call(job, on_cancel=sink.cancel)

    def _state_words(self) -> str:
        return "unloading" if self.unloading else self.state


class CancellableSink(GenerationSink, Protocol):
    """A generation sink that can be told to stop from the event loop."""

    def cancel(self) -> None: ...


class _UnloadWatch:
    """A sink that also reports cancelled once its member starts unloading."""

    def __init__(self, sink: CancellableSink, member: Member) -> None:
        self._sink = sink
        self._member = member

    def progress(self, done: int, total: int) -> None:
        self._sink.progress(done, total)

    def token(self, text: str) -> None:
        self._sink.token(text)

    def cancelled(self) -> bool:
        return self._member.unloading or self._sink.cancelled()


@dataclass(frozen=True)
class MemoryPlan:
    """The memory limit the members share and the prefix-store budget each member gets."""

    limit: int
    context_budget: int

    @classmethod
    def from_flags(cls, memory_limit: int | None, context_budget: int | None) -> MemoryPlan:
        limit = memory_limit if memory_limit is not None else default_memory_limit()
        budget = context_budget if context_budget is not None else default_context_budget(limit)
        return cls(limit=limit, context_budget=budget)


class Members:
    """The pool's members by name: load (with the memory fit), unload, look up."""

    def __init__(self, plan: MemoryPlan, on_unload: Callable[[str], None] | None = None) -> None:
        self.plan = plan
        self._members: dict[str, Member] = {}
        self._load_lock = anyio.Lock()
        self._on_unload = on_unload

    def __len__(self) -> int:
        return len(self._members)

    def get(self, name: str) -> Member:
        member = self._members.get(name)
        if member is None:
            known = ", ".join(sorted(self._members)) or "none"
            raise MemberNotFound(f"no member named {quoted(name)} (loaded: {known})", member=name)
        return member

    def all(self) -> list[Member]:
        return list(self._members.values())

    def memory(self) -> MemoryFigures:
        """``member.list``'s memory figures: the limit, and what the members and their
        prefix stores use."""
        # A failed member holds no engine: what it would have taken is not in use.
        used = sum(
            (m.footprint_bytes or 0) + m.prefix_store.stats()["bytes"]
            for m in self._members.values()
            if m.state != "failed"
        )
        return MemoryFigures(limit=self.plan.limit, used=used)

    async def load(self, name: str, reference: str, flags: ServingFlags) -> Member:
        """Resolve, fit-check and open ``reference`` as member ``name``; loads run one at a time."""
        existing = self._members.get(name)
        if existing is not None and existing.state != "failed":
            raise MemberExists(
                f"a member named {quoted(name)} is already {existing.state}; unload it first", member=name
            )
        if existing is not None:
            await self._release(existing)
        member = Member(
            name=name,
            reference=reference,
            flags=flags,
            thread=EngineThread(name),
            prefix_store=PrefixStore(
                0 if is_remote_reference(reference) else self.plan.context_budget, member=name
            ),
        )
        self._members[name] = member
        try:
            # Resolving (a download, the precheck) needs no lock: a slow or stuck one must not
            # hold up another member's load. Only the fit and the open run one at a time.
            resolved = None if member.remote else await self._resolve(member)
            async with self._load_lock:
                await self._open(member, resolved)
        except BaseException as exc:
            await self._fail(member, exc)
            raise
        logger.info(
            "member %s ready: %s (%s, n_ctx %d, footprint %s bytes)",
            name,
            reference,
            member.path or "runs on its server",
            member.n_ctx,
            member.footprint_bytes,
        )
        return member

    async def _resolve(self, member: Member) -> ResolvedModel:
        logger.info("member %s: resolving %s", member.name, member.reference)
        # On the member's own thread, a daemon: if the pool stops while a read never returns,
        # the call is abandoned and the thread cannot keep the process from exiting.
        return await member.thread.call(lambda: resolve_model(member.reference))

    async def _open(self, member: Member, resolved: ResolvedModel | None) -> None:
        if resolved is None:
            await self._open_remote(member)
            return
        member.path = resolved.path
        member.n_ctx = window_for(resolved.info, member.flags.ctx)
        estimate = estimate_footprint(resolved.info, member.n_ctx, member.flags.batch)
        # Loads run one at a time, so every other resident member is ready by now. A remote
        # member holds nothing here, not even a share of the context budget.
        others = [m.fit_footprint for m in self._members.values() if m.state == "ready" and not m.remote]
        if resolved.info.is_legacy:
            # The header's figures bound what the load may take (refused beyond the limit), but
            # ctransformers' scratch buffers are its own, so a legacy member still loads alone.
            check_fit(None, others, self.plan.limit, self.plan.context_budget)
            check_fit(estimate, [], self.plan.limit, self.plan.context_budget)
        else:
            check_fit(estimate, others, self.plan.limit, self.plan.context_budget)
        member.footprint_bytes = estimate
        logger.info("member %s: opening %s", member.name, resolved.path)
        member.opening = True
        engine = await member.thread.call(lambda: _open_engine(resolved.path, member.flags))
        member.engine = engine
        member.n_ctx = engine.n_ctx
        member.footprint_bytes = engine.footprint_bytes or estimate
        member.fit_footprint = (
            member.footprint_bytes if estimate is not None and not resolved.info.is_legacy else None
        )
        member.state = "ready"

    async def _open_remote(self, member: Member) -> None:
        """Precheck the server and open the member on its thread (the checks are HTTP
        requests, kept off the event loop). It counts as footprint 0 against the limit."""
        from caldrix.engines.openai_remote import open_remote

        logger.info("member %s: asking %s", member.name, member.reference.partition("#")[0])
        model = await member.thread.call(lambda: open_remote(member.reference, member.flags))
        member.engine = model
        member.n_ctx = model.n_ctx
        member.footprint_bytes = 0
        member.fit_footprint = 0
        member.state = "ready"

    async def _fail(self, member: Member, exc: BaseException) -> None:
        """A refusal before the engine opened (not found, precheck, no fit) leaves no member;
        a failure while opening leaves it ``failed`` with its reason, until unloaded or
        loaded again."""
        if not member.opening or not isinstance(exc, Exception):
            if self._members.get(member.name) is member:
                del self._members[member.name]
            await member.thread.stop()
            return
        member.state = "failed"
        member.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        logger.error("member %s failed to load: %s", member.name, member.error)

    async def unload(self, name: str) -> None:
        """Cancel the member's queued and running generations, drop its contexts, close its
        engine on its thread and end the thread."""
        member = self.get(name)
        del self._members[name]
        await self._release(member)
        logger.info("member %s unloaded", name)

    async def unload_all(self) -> None:
        for name in list(self._members):
            with anyio.CancelScope(shield=True):
                await self.unload(name)

    async def _release(self, member: Member) -> None:
        member.unloading = True
        if self._on_unload is not None:
            self._on_unload(member.name)

        def close() -> None:
            member.prefix_store.clear()
            if member.engine is not None:
                member.engine.close()

        with anyio.CancelScope(shield=True):
            await member.thread.call(close)
            await member.thread.stop()
        member.engine = None


def _open_engine(path: Path, flags: ServingFlags) -> Engine:
    try:
        return open_engine(path, flags)
    except CaldrixError:
        raise
    except Exception as exc:
        raise InternalError(f"the engine could not open {path.name}: {exc}") from exc

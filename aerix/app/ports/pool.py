"""The pool port: the model pool as the application sees it, and the values that cross it.

``aerix.adapters.pool.client.CaldrixPool`` implements it (its members and its contexts) over
caldrix's client; the autostart adapter finds or starts the pool (``PoolStarter``). Token counts
are always the pool's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from aerix.domain.settings import PoolSettings

#: A segment as the pool takes it: ``{"id", "role", "text", "pinned"}`` (protocol "segment").
SegmentSpec = Mapping[str, Any]
#: A ``context.edit`` operation: ``{"op": "append", "segment": …}``, ``{"op": "replace", "id", …}``
#: or ``{"op": "remove", "id"}``, exactly as the protocol names them.
ContextEditOp = Mapping[str, Any]


@dataclass(frozen=True)
class SegmentCount:
    """The tokens one segment adds to the rendered prompt, role markers included (the pool's)."""

    id: str
    tokens: int


@dataclass(frozen=True)
class ContextCounts:
    """A context's per-segment counts and its total, as the pool reported them after a change."""

    context: str
    segments: tuple[SegmentCount, ...]
    tokens: int
    member: str | None = None

    def tokens_of(self, segment_id: str) -> int | None:
        return next((count.tokens for count in self.segments if count.id == segment_id), None)


@dataclass(frozen=True)
class MemberInfo:
    """A pool member as ``member.list`` / ``member.load`` describe it."""

    name: str
    model: str
    state: str
    n_ctx: int
    lane: str
    constraints: tuple[str, ...]
    threads: int | None = None
    footprint_bytes: int | None = None
    queue: int = 0


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token's log-probability and its top alternatives (when asked for)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class GenerationTimings:
    queue_ms: float = 0.0
    prefill_ms: float = 0.0
    decode_ms: float = 0.0


@dataclass(frozen=True)
class GenerationDone:
    """The figures of a generation's ``done`` frame."""

    text: str
    #: ``degenerate``: the pool's guard stopped it (``reason`` says what it saw); its output was
    #: not appended.
    finish: Literal["stop", "length", "constraint", "degenerate"]
    prompt_tokens: int
    completion_tokens: int
    recomputed_from: int
    timings: GenerationTimings
    logprobs: tuple[TokenLogprob, ...] | None = None
    #: The appended assistant segment and its token count (``append=`` generations only).
    segment: SegmentCount | None = None
    reason: str | None = None


@dataclass(frozen=True)
class SegmentAppend:
    """``append`` of a generate request: the id (and pinned flag) of the assistant segment."""

    id: str
    pinned: bool = False


#: Called with each piece of output text as it streams.
OnToken = Callable[[str], None]
#: Called with (rows done, rows total) while a long prompt is prefilled.
OnProgress = Callable[[int, int], None]


class PoolMembers(Protocol):
    """The pool's members: those it has, and loading or unloading one. Every method may raise
    :class:`aerix.errors.PoolError` (or a subclass); nothing from caldrix leaks past the adapter."""

    async def loaded(self) -> list[MemberInfo]: ...

    async def load(self, name: str, model: str, flags: Mapping[str, Any] | None = None) -> MemberInfo: ...

    async def unload(self, name: str) -> None: ...


class PoolContexts(Protocol):
    """Contexts in the pool, and generating in one. Raises as :class:`PoolMembers` does."""

    async def create(self, member: str, segments: Sequence[SegmentSpec]) -> ContextCounts: ...

    async def edit(self, context: str, edits: Sequence[ContextEditOp]) -> ContextCounts: ...

    async def fork(self, context: str, keep: int) -> ContextCounts: ...

    async def get(self, context: str) -> ContextCounts: ...

    async def drop(self, context: str) -> None: ...

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
        """One generation; ``constraint`` is the protocol's map (``{"json": schema}``,
        ``{"one_of": [...]}`` …); ``append`` stores the output as an assistant segment."""
        ...


class PoolPort(Protocol):
    """The model pool, as the application sees it: its members and its contexts."""

    @property
    def members(self) -> PoolMembers: ...

    @property
    def contexts(self) -> PoolContexts: ...

    async def aclose(self) -> None:
        """Close the connection (contexts live in the pool, not in the connection)."""
        ...


@dataclass
class OpenedPool:
    """A pool to talk to, and how it was found."""

    pool: PoolPort
    socket: Path
    pid: int
    started: bool

    async def aclose(self) -> None:
        await self.pool.aclose()


class PoolStarter(Protocol):
    """Finds the pool on the configured socket, or starts it (``aerix.adapters.pool.autostart``)."""

    async def open(self, settings: PoolSettings) -> OpenedPool: ...

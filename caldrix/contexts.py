"""Contexts: lists of segments that live in the pool, rendered on their member.

A context belongs to the pool, not to the connection that made it: any connection may edit,
fork, read or generate on it, until ``context.drop``, its member's unload, or the pool's end.
After every change the context is rendered again through its member's chat template, so the
per-segment token counts it reports are always current (rendering caches each segment's
tokens, so an append renders only the new part). Changes to one context run one at a time;
an edit list is applied in order to a copy and kept only if every edit applies.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio

from caldrix.errors import (
    BadRequest,
    ContextNotFound,
    ContextOverflow,
    DuplicateSegment,
    SegmentNotFound,
    quoted,
)
from caldrix.generation.templates import RenderedContext
from caldrix.limits import CONTEXT_CHARS_PER_TOKEN, CONTEXT_WINDOWS
from caldrix.protocol.messages import (
    AppendEdit,
    ContextGetResult,
    Edit,
    RemoveEdit,
    ReplaceEdit,
    SegmentCount,
    SegmentSpec,
    SegmentWithCount,
)

#: Renders segments on a member: ``render(member_name, segments)``.
Renderer = Callable[[str, Sequence[SegmentSpec]], Awaitable[RenderedContext]]
#: A member's window in tokens: ``window(member_name)``.
WindowOf = Callable[[str], int]


@dataclass(eq=False)
class Context:
    id: str
    member: str
    segments: list[SegmentSpec]
    rendered: RenderedContext
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def tokens(self) -> int:
        """The rendered length: every segment plus the generation prompt."""
        return self.rendered.tokens

    def counts(self) -> list[SegmentCount]:
        return [
            SegmentCount(id=s.id, tokens=len(t))
            for s, t in zip(self.segments, self.rendered.segment_tokens, strict=True)
        ]

    def described(self) -> ContextGetResult:
        """``context.get``'s reply: the member, each segment with its count, the total."""
        segments = [
            SegmentWithCount(id=s.id, role=s.role, text=s.text, pinned=s.pinned, tokens=len(tokens))
            for s, tokens in zip(self.segments, self.rendered.segment_tokens, strict=True)
        ]
        return ContextGetResult(member=self.member, segments=segments, tokens=self.tokens)

    def index_of(self, segment_id: str) -> int | None:
        return next((i for i, s in enumerate(self.segments) if s.id == segment_id), None)

    def check_room(self, max_new_tokens: int, n_ctx: int) -> None:
        """Refuse a generation whose prompt plus ``max_new_tokens`` exceeds the window."""
        if self.tokens + max_new_tokens > n_ctx:
            raise ContextOverflow(
                f"context {self.id} holds {self.tokens} tokens; with max_new_tokens {max_new_tokens} that is "
                f"{self.tokens + max_new_tokens}, over member {quoted(self.member)}s window of {n_ctx} — "
                "remove or shorten segments, or ask for fewer tokens",
                tokens=self.tokens,
                max_new_tokens=max_new_tokens,
                n_ctx=n_ctx,
            )


class ContextStore:
    """Every context of the pool, by id (``c1``, ``c2`` …)."""

    def __init__(self, render: Renderer, window: WindowOf) -> None:
        self._render = render
        self._window = window
        self._contexts: dict[str, Context] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._contexts)

    def get(self, context_id: str) -> Context:
        context = self._contexts.get(context_id)
        if context is None:
            raise ContextNotFound(
                f"no context {quoted(context_id)} (it may have been dropped, or its member unloaded)",
                context=context_id,
            )
        return context

    def find(self, context_id: str) -> Context | None:
        return self._contexts.get(context_id)

    async def create(self, member: str, segments: Sequence[SegmentSpec]) -> Context:
        _check_unique(segments)
        rendered = await self._bounded_render(member, segments)
        context = Context(id=f"c{next(self._ids)}", member=member, segments=list(segments), rendered=rendered)
        self._contexts[context.id] = context
        return context

    async def edit(self, context_id: str, edits: Sequence[Edit]) -> Context:
        """Apply ``edits`` in order; if any fails, the context is left as it was."""
        context = self.get(context_id)
        async with context.lock:
            segments = list(context.segments)
            for number, edit in enumerate(edits):
                _apply(segments, edit, number)
            await self._commit(context, segments)
        return context

    async def fork(self, context_id: str, keep: int) -> Context:
        """A new context on the same member holding the first ``keep`` segments."""
        source = self.get(context_id)
        if keep > len(source.segments):
            raise BadRequest(
                f"field 'keep': context {context_id} has only {len(source.segments)} segments, "
                f"cannot keep {keep}",
                field="keep",
            )
        return await self.create(source.member, source.segments[:keep])

    async def append(self, context_id: str, segment: SegmentSpec) -> Context:
        """Append one segment (a generation's output) to the context as it is now."""
        context = self.get(context_id)
        async with context.lock:
            segments = list(context.segments)
            _apply(segments, AppendEdit(op="append", segment=segment), 0)
            await self._commit(context, segments)
        return context

    def drop(self, context_id: str) -> None:
        self.get(context_id)
        del self._contexts[context_id]

    def drop_member(self, member: str) -> int:
        """Drop every context of ``member`` (it is unloading); returns how many."""
        doomed = [cid for cid, context in self._contexts.items() if context.member == member]
        for cid in doomed:
            del self._contexts[cid]
        return len(doomed)

    async def _commit(self, context: Context, segments: list[SegmentSpec]) -> None:
        rendered = await self._bounded_render(context.member, segments)
        if self._contexts.get(context.id) is not context:
            raise ContextNotFound(
                f"context {quoted(context.id)} was dropped while it was being changed", context=context.id
            )
        context.segments = segments
        context.rendered = rendered

    async def _bounded_render(self, member: str, segments: Sequence[SegmentSpec]) -> RenderedContext:
        """Render ``segments``, refused (``context_overflow``) past the size bound: a context
        holds at most :data:`CONTEXT_WINDOWS` of its member's windows. The text is measured
        first, so a huge one is refused without tokenizing it."""
        n_ctx = self._window(member)
        limit_tokens = CONTEXT_WINDOWS * n_ctx
        bound = f"{CONTEXT_WINDOWS} windows of member {quoted(member)}'s {n_ctx} tokens"
        chars = sum(len(segment.text) for segment in segments)
        limit_chars = limit_tokens * CONTEXT_CHARS_PER_TOKEN
        if chars > limit_chars:
            raise ContextOverflow(
                f"the context's text would be {chars:,} characters, over the bound of {limit_chars:,} "
                f"({bound}, at most {CONTEXT_CHARS_PER_TOKEN} characters a token) — "
                "remove or shorten segments",
                chars=chars,
                limit_chars=limit_chars,
                limit_tokens=limit_tokens,
                n_ctx=n_ctx,
            )
        rendered = await self._render(member, segments)
        if rendered.tokens > limit_tokens:
            raise ContextOverflow(
                f"the context would hold {rendered.tokens:,} tokens, over the bound of {limit_tokens:,} "
                f"({bound}) — remove or shorten segments",
                tokens=rendered.tokens,
                limit_tokens=limit_tokens,
                n_ctx=n_ctx,
            )
        return rendered


def _check_unique(segments: Sequence[SegmentSpec]) -> None:
    seen: set[str] = set()
    for segment in segments:
        if segment.id in seen:
            raise DuplicateSegment(
                f"segment id {quoted(segment.id)} appears twice; ids are unique within a context",
                segment=segment.id,
            )
        seen.add(segment.id)


def _apply(segments: list[SegmentSpec], edit: Edit, number: int) -> None:
    where = f"edit {number} ({edit.op})"
    if isinstance(edit, AppendEdit):
        if any(s.id == edit.segment.id for s in segments):
            raise DuplicateSegment(
                f"{where}: the context already holds a segment {quoted(edit.segment.id)}",
                segment=edit.segment.id,
                edit=number,
            )
        segments.append(edit.segment)
        return
    index = next((i for i, s in enumerate(segments) if s.id == edit.id), None)
    if index is None:
        raise SegmentNotFound(
            f"{where}: the context holds no segment {quoted(edit.id)}", segment=edit.id, edit=number
        )
    if isinstance(edit, RemoveEdit):
        del segments[index]
    elif isinstance(edit, ReplaceEdit):
        given = {"text": edit.text, "role": edit.role, "pinned": edit.pinned}
        changes = {key: value for key, value in given.items() if value is not None}
        segments[index] = segments[index].model_copy(update=changes)

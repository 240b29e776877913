"""The front's one code path: a :class:`ChatRequest` in, the reply's events out.

Every reply gets its own connection to the pool. Its prompt becomes a context
(``context.create``: the pool renders and counts it, off the member's engine thread, so counting
never waits behind a generation), is checked against the member's window, and is generated on
as a probe (the context is not changed, and it is dropped afterwards; the prefix store keeps
the prompt's rows all the same). Leaving the reply early closes the connection, which cancels
the generation in the pool; :mod:`caldrix.front.resend` does that once the HTTP client that
asked has gone and nobody asked the same again within the resend grace.

How a reply ends (docs/http-front.md, Stop reasons): the model's end of turn is ``end_turn``, or
``tool_use`` when it made calls; a stop sequence is ``stop_sequence``; the client's own
``max_tokens`` reached is ``max_tokens``. A reply the front or the pool cut short — the member's
output bound, the window, the degeneration guard, a constraint that could not go on — is
``end_turn`` with what was written: Claude Code treats ``max_tokens`` as a failed answer and asks
again, up to four times, which would turn one cut into five.

Every generation the front asks for carries the pool's degeneration guard (:data:`GUARD`): a
model that loops is stopped within a few repeats (``finish: "degenerate"``), not at its bound.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio

from caldrix.errors import CaldrixError, ContextOverflow, InternalError
from caldrix.front.chat import ChatRequest, Outcome, StopReason, Usage
from caldrix.front.errors import FrontError, from_pool, prompt_too_long
from caldrix.front.prompt import prompt_segments
from caldrix.front.reply import ReplyEvent, ReplyReader
from caldrix.front.settings import (
    MIN_ROOM_TOKENS,
    POOL_CONTROL_SECS,
    POOL_FRAME_GAP_SECS,
    POOL_LOAD_SECS,
    FrontSettings,
)
from caldrix.front.tool_grammar import tool_grammar
from caldrix.protocol import ClientBounds, PoolClient, TokenFrame, connect
from caldrix.protocol.messages import DoneFrame, Guard, MemberObject

logger = logging.getLogger("caldrix.front")

POOL_BOUNDS = ClientBounds(POOL_CONTROL_SECS, POOL_FRAME_GAP_SECS, POOL_LOAD_SECS)
#: The degeneration guard of every front generation: the pool's defaults (caldrix/limits.py).
GUARD = Guard()


class FrontService:
    """What both dialects ask of the pool: members, token counts, replies."""

    def __init__(self, settings: FrontSettings) -> None:
        self.settings = settings

    async def members(self) -> list[MemberObject]:
        async with self._connection() as client:
            return (await _pool(client.member_list())).members

    async def count_tokens(self, request: ChatRequest) -> int:
        """The pool's exact count of ``request``'s prompt (generation prompt included)."""
        async with self._connection() as client:
            member = await self._member(client, request.model)
            created = await _created(client, member, request, self.settings)
            await _pool(client.context_drop(created.context))
            return int(created.tokens)

    async def member(self, model: str) -> MemberObject:
        """The member a request for ``model`` runs on, checked to be loaded and ready."""
        async with self._connection() as client:
            return await self._member(client, model)

    @contextlib.asynccontextmanager
    async def reply(self, request: ChatRequest, member: MemberObject) -> AsyncIterator[Reply]:
        """The reply to ``request`` on ``member`` (:meth:`member`), prepared: its prompt counted
        and checked against the window (refusals raise :class:`FrontError` here, before anything
        is sent to the client). Its context is dropped on the way out, however the reply ends."""
        async with self._connection() as client:
            created = await _created(client, member, request, self.settings)
            try:
                yield self._prepared(client, member, request, created.context, int(created.tokens))
            finally:
                with anyio.CancelScope(shield=True):
                    await self._drop(client, created.context)

    def _prepared(
        self, client: PoolClient, member: MemberObject, request: ChatRequest, context: str, tokens: int
    ) -> Reply:
        maximum = member.n_ctx - MIN_ROOM_TOKENS
        if tokens > maximum:
            raise prompt_too_long(tokens, maximum)
        bound = self.settings.output_bound(member.name)
        room = member.n_ctx - tokens
        asked = request.max_tokens if request.max_tokens is not None else bound
        return Reply(
            client=client,
            member=member.name,
            context=context,
            request=request,
            prompt_tokens=tokens,
            max_new_tokens=max(1, min(asked, bound, room)),
            constraint=_constraint(request, member),
        )

    async def _member(self, client: PoolClient, model: str) -> MemberObject:
        members = {member.name: member for member in (await _pool(client.member_list())).members}
        name = self.settings.member_for(model, set(members))
        member = members.get(name)
        if member is None:
            loaded = ", ".join(sorted(members)) or "none"
            raise FrontError(
                404,
                f"model {model!r} runs on member {name!r}, which the pool has not loaded (loaded: {loaded})",
            )
        if member.state != "ready":
            raise FrontError(503, f"member {name!r} is {member.state}, not ready")
        return member

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[PoolClient]:
        client = await _pool(connect(self.settings.socket, bounds=POOL_BOUNDS, client_name="caldrix serve"))
        try:
            yield client
        finally:
            await client.aclose()

    async def _drop(self, client: PoolClient, context: str) -> None:
        """Drop ``context``, on a new connection when leaving a generation closed this one."""
        try:
            if client.closed:
                async with self._connection() as fresh:
                    await fresh.context_drop(context)
            else:
                await client.context_drop(context)
        except (CaldrixError, FrontError) as exc:
            logger.warning("could not drop context %s: %s", context, exc)


@dataclass
class Reply:
    """A prepared reply: iterate :meth:`events` for its pieces; :attr:`outcome` is set once
    they end."""

    client: PoolClient
    member: str
    context: str
    request: ChatRequest
    prompt_tokens: int
    max_new_tokens: int
    constraint: dict[str, Any] | None
    outcome: Outcome | None = None
    message_id: str = field(default_factory=lambda: "msg_" + secrets.token_hex(12))

    async def events(self) -> AsyncGenerator[ReplyEvent, None]:
        """The reply's thinking, text and calls as they settle; then :attr:`outcome`."""
        calls = bool(self.request.tools) and self.request.tool_choice.mode != "none"
        names = [tool.name for tool in self.request.tools]
        reader = ReplyReader(lambda: secrets.token_hex(12), calls=calls, names=names)
        sampling = self.request.sampling
        generation = self.client.generate(
            self.context,
            self.max_new_tokens,
            constraint=self.constraint,
            temperature=sampling.temperature or 0.0,
            seed=sampling.seed,
            stop=list(self.request.stop),
            top_k=sampling.top_k or 0,
            top_p=sampling.top_p if sampling.top_p is not None else 1.0,
            guard=GUARD,
        )
        async with generation:
            try:
                async for frame in generation:
                    if isinstance(frame, TokenFrame):
                        for event in reader.feed(frame.text):
                            yield event
            except CaldrixError as exc:
                raise from_pool(exc) from exc
        for event in reader.finish():
            yield event
        if generation.done is None:
            raise FrontError(500, "the pool ended the generation without a done frame")
        self.outcome = outcome = outcome_of(
            generation.done, reader, self.request.max_tokens, self.max_new_tokens
        )
        logger.info(
            "%s on %s: %d prompt tokens (%d resumed, %d computed), %d output tokens, %s%s",
            self.message_id,
            self.member,
            outcome.usage.prompt,
            outcome.usage.resumed,
            outcome.usage.computed,
            outcome.usage.output,
            outcome.stop_reason,
            f" (cut: {outcome.cut})" if outcome.cut else "",
        )


def outcome_of(done: DoneFrame, reader: ReplyReader, asked: int | None, allowed: int) -> Outcome:
    """How the reply ended, in Anthropic's stop reasons (see the module docstring)."""
    usage = Usage(
        computed=done.prompt_tokens - done.recomputed_from,
        resumed=done.recomputed_from,
        output=done.completion_tokens,
    )
    cut: str | None = None
    reason: StopReason = "end_turn"
    if done.finish == "length":
        if asked is not None and allowed >= asked:
            reason = "max_tokens"
        else:
            cut = f"the output bound of {allowed} tokens"
    elif done.finish != "stop":
        cut = _finish_words(done)
    elif done.stop_string is not None:
        return Outcome("stop_sequence", usage, stop_sequence=done.stop_string)
    if reader.calls and reason != "max_tokens":
        reason = "tool_use"
    if reader.cut_call and cut is None and reason != "max_tokens":
        cut = "a tool call that did not finish"
    return Outcome(reason, usage, cut=cut)


def _finish_words(done: DoneFrame) -> str:
    if done.finish == "constraint":
        return "the constraint allowed no continuation"
    if done.finish == "degenerate":
        return f"the degeneration guard: {done.reason}"
    return f"{done.finish}: {done.reason}" if done.reason else str(done.finish)


async def _created(
    client: PoolClient, member: MemberObject, request: ChatRequest, settings: FrontSettings
) -> Any:
    """``request``'s prompt as a context on ``member``; a prompt past what the pool will count
    is Anthropic's "prompt is too long"."""
    segments = prompt_segments(request, brief_tools=settings.tool_text_for(member.name) == "brief")
    if not segments:
        raise FrontError(400, "messages: the prompt is empty; send at least one message with text")
    try:
        return await client.context_create(member.name, segments)
    except ContextOverflow as exc:
        maximum = member.n_ctx - MIN_ROOM_TOKENS
        counted = exc.details.get("tokens")
        if isinstance(counted, int):
            raise prompt_too_long(counted, maximum) from exc
        raise prompt_too_long(int(exc.details.get("limit_tokens", 0)), maximum, more_than=True) from exc
    except CaldrixError as exc:
        raise from_pool(exc) from exc


async def _pool(call: Any) -> Any:
    """Await a pool call, its errors as the front's."""
    try:
        return await call
    except CaldrixError as exc:
        raise from_pool(exc) from exc
    except OSError as exc:
        raise from_pool(InternalError(str(exc))) from exc


def _constraint(request: ChatRequest, member: MemberObject) -> dict[str, Any] | None:
    """The reply's constraint: the tool grammar, or the JSON schema of ``response_format``;
    none where the member cannot take it (the reply is then read as the model wrote it)."""
    constraint: dict[str, Any]
    if request.json_schema is not None:
        wanted, constraint = "json", {"json": request.json_schema}
    else:
        grammar = tool_grammar(request.tools, request.tool_choice)
        if grammar is None:
            return None
        wanted, constraint = "lark", {"lark": grammar}
    if wanted not in member.constraints:
        logger.warning("member %s has no %s constraint: the reply is not constrained", member.name, wanted)
        return None
    return constraint

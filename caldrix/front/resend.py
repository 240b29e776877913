"""Generations that outlive their HTTP request for a short grace, so that a resend adopts them.

Claude Code gives up on a stream it finds too slow and sends the same body again
(docs/http-front.md, "A long prefill, and Claude Code's resend"). Were the first request's
disconnect to cancel its generation, the prompt would be resumed from the prefix store but the
answer decoded again from its first token, every time: a slow member never finishes one.

So a generation runs in a task of its own, not in the request's, and its reply's pieces are
kept as they come. A request *follows* a generation: it gets the pieces so far, then the rest,
then the outcome. A request whose pool request is the same as a kept generation's — the same
member, prompt segments, output bound asked, sampling, stops, tools and schema (:func:`pool_key`;
metadata and the HTTP bytes play no part) — follows that one rather than starting its own:

- while others follow it too: the two share one answer (the member would run two identical
  generations one after the other anyway, and the second, greedy, would say the same);
- when its last follower left before the end: the generation goes on for
  :attr:`FrontSettings.resend_grace_secs`; a follower that comes within it adopts it, and
  otherwise it is cancelled as before (the rows it computed stay in the prefix store);
- when it ended with no one following: its whole answer is kept for the same grace, and a
  resend gets it at once.

An answer a follower received to its end is forgotten: the next request with that body is a new
question. At most :data:`~caldrix.front.settings.MAX_KEPT_GENERATIONS` generations nobody
follows are kept; past that the oldest goes (cancelled, if it still runs).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import asdict, dataclass, field

import anyio
from anyio.abc import TaskGroup

from caldrix.front.chat import ChatRequest, Outcome
from caldrix.front.errors import FrontError
from caldrix.front.prompt import prompt_segments
from caldrix.front.reply import ReplyEvent
from caldrix.front.service import FrontService, Reply
from caldrix.front.settings import MAX_KEPT_GENERATIONS
from caldrix.protocol.messages import MemberObject

logger = logging.getLogger("caldrix.front")


def pool_key(request: ChatRequest, member: str) -> str:
    """What makes two requests one pool request: a hash of the member, the prompt's segments and
    everything the generation is asked with. The model's name (an alias of the member), the
    stream flag and the dialect are not part of it: they change how the answer is written, not
    what is generated."""
    asked = {
        "member": member,
        "segments": [segment.model_dump() for segment in prompt_segments(request)],
        "max_tokens": request.max_tokens,
        "stop": list(request.stop),
        "sampling": asdict(request.sampling),
        "tools": [asdict(tool) for tool in request.tools],
        "tool_choice": asdict(request.tool_choice),
        "json_schema": request.json_schema,
    }
    text = json.dumps(asked, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(eq=False)
class Generation:
    """One generation, run by :class:`Generations` in its own task: the pieces of its reply so
    far, and how it ended."""

    key: str
    number: int
    reply: Reply | None = None
    pieces: list[ReplyEvent] = field(default_factory=list)
    outcome: Outcome | None = None
    error: FrontError | None = None
    ended: bool = False
    followers: int = 0
    cancel: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    prepared: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)
    left: int = 0
    """Bumped each time the generation is left with no follower: a grace timer that finds it
    changed knows someone came back (or left again) since it started."""

    def name(self) -> str:
        return self.reply.message_id if self.reply is not None else f"generation {self.number}"

    def notify(self) -> None:
        waiting, self.changed = self.changed, anyio.Event()
        waiting.set()


class Follower:
    """One request's view of a generation: its pieces from the first, then its outcome."""

    def __init__(self, generations: Generations, generation: Generation, request: ChatRequest) -> None:
        self._generations = generations
        self.generation = generation
        self.request = request
        """This request's own (its model name is the one its answer carries)."""
        self.outcome: Outcome | None = None
        self._left = False

    @property
    def reply(self) -> Reply:
        assert self.generation.reply is not None, "followed before it was prepared"
        return self.generation.reply

    async def events(self) -> AsyncGenerator[ReplyEvent, None]:
        """The reply's pieces, those already made first; then :attr:`outcome` is set (or the
        generation's failure raised)."""
        generation = self.generation
        for index in itertools.count():
            while index >= len(generation.pieces) and not generation.ended:
                await generation.changed.wait()
            if index >= len(generation.pieces):
                break
            yield generation.pieces[index]
        if generation.error is not None:
            raise generation.error
        self.outcome = generation.outcome

    async def aclose(self) -> None:
        """Stop following (once): the generation goes on for the grace if nobody else follows."""
        if not self._left:
            self._left = True
            self._generations.leave(self.generation, delivered=self.outcome is not None)


class Generations:
    """The front's generations by :func:`pool_key`; run them with :meth:`running`."""

    def __init__(self, service: FrontService) -> None:
        self.service = service
        self.grace = service.settings.resend_grace_secs
        self._by_key: dict[str, Generation] = {}
        self._numbers = itertools.count(1)
        self._group: TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Generations]:
        """Generations run in this context's task group; leaving it cancels those still running."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield self
            finally:
                group.cancel_scope.cancel()
                self._group = None

    async def follow(self, request: ChatRequest) -> Follower:
        """A follower of the generation for ``request``: a kept one with the same pool request,
        else a new one. A request the front refuses (a prompt too long, no such member) raises
        :class:`FrontError` here, before anything is sent to the client."""
        member = await self.service.member(request.model)
        key = pool_key(request, member.name)
        generation = self._by_key.get(key)
        if generation is not None and self.grace > 0:
            adopted = generation.followers == 0
            generation.followers += 1
            if adopted:
                logger.info("%s: adopted by a request with the same body", generation.name())
        else:
            generation = Generation(key, next(self._numbers), followers=1)
            if self.grace > 0:
                self._by_key[key] = generation
            assert self._group is not None, "follow() outside running()"
            self._group.start_soon(self._run, generation, request, member)
        follower = Follower(self, generation, request)
        try:
            await generation.prepared.wait()
        except BaseException:  # the request itself was cancelled (its client left)
            await follower.aclose()
            raise
        if generation.reply is None:
            await follower.aclose()
            assert generation.error is not None
            raise generation.error
        return follower

    def leave(self, generation: Generation, *, delivered: bool) -> None:
        generation.followers -= 1
        if generation.followers > 0:
            return
        if delivered or self._by_key.get(generation.key) is not generation:
            self._forget(generation)
            if not generation.ended:
                logger.info("%s: cancelled, its client left", generation.name())
                generation.cancel.cancel()
            return
        if not generation.ended:
            logger.info(
                "%s: its client left; it goes on for %g s for a resend", generation.name(), self.grace
            )
        self._keep_for_grace(generation)

    def _keep_for_grace(self, generation: Generation) -> None:
        generation.left += 1
        assert self._group is not None
        self._group.start_soon(self._expire, generation, generation.left)
        kept = [kept for kept in self._by_key.values() if kept.followers == 0]
        for oldest in kept[: max(0, len(kept) - MAX_KEPT_GENERATIONS)]:
            logger.info("%s: dropped, %d others are kept", oldest.name(), MAX_KEPT_GENERATIONS)
            self._forget(oldest)
            oldest.cancel.cancel()

    async def _expire(self, generation: Generation, left: int) -> None:
        await anyio.sleep(self.grace)
        if (
            generation.followers > 0
            or generation.left != left
            or self._by_key.get(generation.key) is not generation
        ):
            return
        self._forget(generation)
        if generation.ended:
            logger.info(
                "%s: its answer dropped, nobody asked again within %g s", generation.name(), self.grace
            )
        else:
            logger.info("%s: cancelled, nobody asked again within %g s", generation.name(), self.grace)
            generation.cancel.cancel()

    def _forget(self, generation: Generation) -> None:
        if self._by_key.get(generation.key) is generation:
            del self._by_key[generation.key]

    async def _run(self, generation: Generation, request: ChatRequest, member: MemberObject) -> None:
        """Prepare the reply (count the prompt, check the window), then run it, keeping its
        pieces; cancelling :attr:`Generation.cancel` cancels it in the pool."""
        with generation.cancel:
            try:
                async with self.service.reply(request, member) as reply:
                    generation.reply = reply
                    generation.prepared.set()
                    async with contextlib.aclosing(reply.events()) as events:
                        async for piece in events:
                            generation.pieces.append(piece)
                            generation.notify()
                generation.outcome = reply.outcome
            except FrontError as error:
                generation.error = error
            except Exception:
                logger.exception("%s failed", generation.name())
                generation.error = FrontError(500, "the front failed; its log says why")
        if generation.outcome is None and generation.error is None:
            generation.error = FrontError(499, "the generation was cancelled: its client left")
        generation.ended = True
        generation.prepared.set()
        generation.notify()
        if generation.reply is None or generation.error is not None:
            self._forget(generation)  # a refusal or a failure is not an answer to keep
        elif generation.followers == 0 and self._by_key.get(generation.key) is generation:
            self._keep_for_grace(generation)

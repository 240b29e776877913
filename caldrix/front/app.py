"""The front's HTTP routes, on Starlette (docs/http-front.md, Routes).

``POST /v1/messages`` and ``/v1/messages/count_tokens`` (Anthropic), ``POST
/v1/chat/completions`` (OpenAI), ``GET /v1/models`` (one list both SDKs read), ``GET
/v1/models/{id}``, ``HEAD /`` and ``GET /``, and ``GET /health`` (whether the pool answers).
Query strings are ignored (Claude Code adds ``?beta=true``). Every request's body is read whole
first, bounded in size and in time, then written down when ``--log-requests`` asks; a chat
request is refused (an HTTP error in its dialect's shape) before anything streams, when its
prompt is too long or its body is wrong.
Once a stream has started, a failure is its dialect's error event.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from caldrix.front import anthropic_in, anthropic_out, openai_in, openai_out
from caldrix.front.chat import ChatRequest
from caldrix.front.errors import FrontError
from caldrix.front.fields import parse_body
from caldrix.front.request_log import RequestLog
from caldrix.front.resend import Follower, Generations
from caldrix.front.service import FrontService
from caldrix.front.settings import BODY_SECS, FrontSettings
from caldrix.front.wire import Event, Writer

logger = logging.getLogger("caldrix.front")

#: The route a probe asks whether the front can serve: answered without the API key, as
#: llama.cpp's server answers its own ``/health``.
HEALTH_PATH = "/health"


@dataclass(frozen=True)
class Dialect:
    """How one API reads a chat request and writes its reply and errors."""

    name: str
    read: Callable[[Any], ChatRequest]
    writer: Callable[[Follower, dict[str, Any]], Writer]
    error_body: Callable[[FrontError], dict[str, Any]]
    ping: Callable[[], ServerSentEvent] | None
    last_line: str | None


ANTHROPIC = Dialect(
    name="anthropic",
    read=anthropic_in.messages_request,
    writer=lambda follower, body: anthropic_out.AnthropicWriter(
        follower.reply.message_id, follower.request.model, follower.reply.prompt_tokens
    ),
    error_body=anthropic_out.error_body,
    ping=lambda: ServerSentEvent(event="ping", data=json.dumps({"type": "ping"})),
    last_line=None,
)
OPENAI = Dialect(
    name="openai",
    read=openai_in.chat_request,
    writer=lambda follower, body: openai_out.OpenAIWriter(
        follower.reply.message_id, follower.request.model, include_usage=openai_in.include_usage(body)
    ),
    error_body=openai_out.error_body,
    ping=None,  # a comment line: OpenAI's clients skip it
    last_line=openai_out.DONE,
)


def dialect_of(path: str) -> Dialect:
    return OPENAI if path.startswith("/v1/chat/") else ANTHROPIC


def error_response(error: FrontError, dialect: Dialect) -> JSONResponse:
    return JSONResponse(dialect.error_body(error), status_code=error.status)


class Front:
    """The routes over one :class:`FrontService`."""

    def __init__(self, settings: FrontSettings, service: FrontService, log: RequestLog | None) -> None:
        self.settings = settings
        self.service = service
        self.log = log
        self.generations = Generations(service)

    def app(self) -> Starlette:
        routes = [
            Route("/v1/messages", self._endpoint(self.messages), methods=["POST"]),
            Route("/v1/messages/count_tokens", self._endpoint(self.count_tokens), methods=["POST"]),
            Route("/v1/chat/completions", self._endpoint(self.chat_completions), methods=["POST"]),
            Route("/v1/models", self._endpoint(self.models), methods=["GET"]),
            Route("/v1/models/{model:path}", self._endpoint(self.model), methods=["GET"]),
            Route("/", self._endpoint(self.root), methods=["GET", "HEAD"]),
            Route(HEALTH_PATH, self._endpoint(self.health), methods=["GET", "HEAD"]),
        ]
        app = Starlette(
            routes=routes, exception_handlers={HTTPException: self._http_error}, lifespan=self._lifespan
        )
        app.add_middleware(KeyCheck, key=self.settings.api_key)
        return app

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        async with self.generations.running():
            yield

    # -- routes ---------------------------------------------------------------------------

    async def messages(self, request: Request) -> Response:
        return await self._chat(request, ANTHROPIC)

    async def chat_completions(self, request: Request) -> Response:
        return await self._chat(request, OPENAI)

    async def count_tokens(self, request: Request) -> Response:
        body = await self._body(request)
        tokens = await self.service.count_tokens(anthropic_in.messages_request(body, count_only=True))
        return JSONResponse({"input_tokens": tokens})

    async def models(self, request: Request) -> Response:
        await self._body(request)
        entries = [_model_entry(name) for name in await self._model_names()]
        return JSONResponse(
            {
                "object": "list",
                "data": entries,
                "has_more": False,
                "first_id": entries[0]["id"] if entries else None,
                "last_id": entries[-1]["id"] if entries else None,
            }
        )

    async def model(self, request: Request) -> Response:
        await self._body(request)
        name = request.path_params["model"]
        members = {member.name for member in await self.service.members()}
        if self.settings.member_for(name, members) not in members:
            raise FrontError(404, f"model {name!r} runs on no member the pool has loaded")
        return JSONResponse(_model_entry(name))

    async def root(self, request: Request) -> Response:
        await self._body(request)
        return JSONResponse({"caldrix": "serve", "routes": ["/v1/messages", "/v1/chat/completions"]})

    async def health(self, request: Request) -> Response:
        """200 and the pool's members (name and state) when the pool answers ``member.list``;
        503 and the reason when it does not. Its body is not read, nor written to the request
        log: a probe asks every few seconds."""
        try:
            members = await self.service.members()
        except FrontError as error:
            return JSONResponse({"status": "unavailable", "reason": error.message}, status_code=503)
        listed = [{"name": member.name, "state": member.state} for member in members]
        return JSONResponse({"status": "ok", "members": listed})

    # -- chat -----------------------------------------------------------------------------

    async def _chat(self, request: Request, dialect: Dialect) -> Response:
        body = await self._body(request)
        chat = dialect.read(body)
        follower = await self.generations.follow(chat)
        writer = dialect.writer(follower, body)
        if not chat.stream:
            async with contextlib.aclosing(follower):
                return JSONResponse(await _whole(request, follower, writer))
        return _OwnedStream(
            _stream(follower, writer, dialect),
            owner=follower,
            ping=self.settings.ping_secs,
            ping_message_factory=dialect.ping,
        )

    async def _model_names(self) -> list[str]:
        names = [member.name for member in await self.service.members()]
        aliases = [
            route.pattern for route in self.settings.routes if not any(c in route.pattern for c in "*?[")
        ]
        return names + [alias for alias in aliases if alias not in names]

    # -- the body and errors --------------------------------------------------------------

    async def _body(self, request: Request) -> Any:
        """The request's body as JSON (None when empty), read within the size and time bounds,
        and written down first when ``--log-requests`` asks."""
        limit = self.settings.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise FrontError(413, f"the body is {int(declared):,} bytes, over the limit of {limit:,}")
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(BODY_SECS) as waited:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise FrontError(413, f"the body is over the limit of {limit:,} bytes")
                chunks.append(chunk)
        if waited.cancel_called:
            raise FrontError(408, f"the body did not arrive within {BODY_SECS:g} s")
        raw = b"".join(chunks)
        if self.log is not None:
            await self.log.write(request.method, request.url.path, request.url.query, request.headers, raw)
        if not raw:
            return None
        return parse_body(raw)

    def _endpoint(
        self, handler: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            dialect = dialect_of(request.url.path)
            try:
                return await handler(request)
            except FrontError as error:
                return error_response(error, dialect)
            except Exception:
                logger.exception("%s %s failed", request.method, request.url.path)
                return error_response(FrontError(500, "the front failed; its log says why"), dialect)

        return endpoint

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        words = {
            404: f"no route {request.url.path}",
            405: f"{request.method} is not served on {request.url.path}",
        }
        error = FrontError(status, words.get(status, "the request was refused"))
        return error_response(error, dialect_of(request.url.path))


async def _whole(request: Request, follower: Follower, writer: Writer) -> dict[str, Any]:
    """Follow the reply to its end, unless the client leaves first (the generation then goes
    on for the resend grace, caldrix/front/resend.py)."""
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            await _disconnected(request)
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            async with contextlib.aclosing(follower.events()) as events:
                async for event in events:
                    writer.events(event)
        finally:
            group.cancel_scope.cancel()
    if follower.outcome is None:
        raise FrontError(499, "the client left before the reply ended")
    return writer.whole(follower.outcome)


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _stream(follower: Follower, writer: Writer, dialect: Dialect) -> AsyncIterator[ServerSentEvent]:
    for event in writer.opening():
        yield _sse(event)
    try:
        async with contextlib.aclosing(follower.events()) as events:
            async for piece in events:
                for event in writer.events(piece):
                    yield _sse(event)
        assert follower.outcome is not None
        for event in writer.closing(follower.outcome):
            yield _sse(event)
    except FrontError as error:
        for event in writer.failure(error):
            yield _sse(event)
    except Exception:
        logger.exception("a streamed reply failed")
        for event in writer.failure(FrontError(500, "the front failed; its log says why")):
            yield _sse(event)
    if dialect.last_line is not None:
        yield ServerSentEvent(data=dialect.last_line)


def _sse(event: Event) -> ServerSentEvent:
    name, data = event
    return ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=name)


def _model_entry(name: str) -> dict[str, Any]:
    """A model as both SDKs read it: Anthropic's ``type``/``display_name``/``created_at`` and
    OpenAI's ``object``/``created``/``owned_by``."""
    return {
        "type": "model",
        "id": name,
        "display_name": name,
        "created_at": "1970-01-01T00:00:00Z",
        "object": "model",
        "created": 0,
        "owned_by": "caldrix",
    }


class _OwnedStream(EventSourceResponse):
    """An SSE response that stops following its reply once it has been sent, or abandoned."""

    def __init__(self, *args: Any, owner: Follower, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._owner = owner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._owner.aclose()


class KeyCheck:
    """With ``--api-key``, every request must carry it, as ``x-api-key`` or ``Authorization:
    Bearer``; a request without it is 401 in its dialect's shape."""

    def __init__(self, app: ASGIApp, key: str | None) -> None:
        self.app = app
        self.key = key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or self.key is None
            or scope["path"] == HEALTH_PATH
            or self._carries_key(scope)
        ):
            await self.app(scope, receive, send)
            return
        error = FrontError(401, "a valid API key is required (x-api-key or Authorization: Bearer)")
        await error_response(error, dialect_of(scope["path"]))(scope, receive, send)

    def _carries_key(self, scope: Scope) -> bool:
        assert self.key is not None
        key = self.key.encode()
        headers = dict(scope["headers"])
        given = headers.get(b"x-api-key", b"")
        bearer = headers.get(b"authorization", b"")
        if bearer[:7].lower() == b"bearer ":
            bearer = bearer[7:].strip()
        return any(secrets.compare_digest(candidate, key) for candidate in (given, bearer) if candidate)

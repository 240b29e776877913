"""The front's HTTP server: uvicorn, on h11, with a deadline for each request's head.

uvicorn closes an idle keep-alive connection, but a connection that trickles the bytes of a
request head, one every few seconds, is never idle and never a request: enough of them would
take every connection the front serves (``--max-connections``; past it, requests are answered
503). Each connection here gets :data:`~caldrix.front.settings.REQUEST_HEAD_SECS` to finish
each request's head, from when it opened or its last response ended.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from caldrix.front.settings import REQUEST_HEAD_SECS, FrontSettings


class _TimelyH11(H11Protocol):
    """h11, closing a connection whose next request's head has not come in time."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def _arm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(REQUEST_HEAD_SECS, self._check_head, self.cycle)

    def _check_head(self, cycle_when_armed: Any) -> None:
        # A request whose head came has a new cycle; the same cycle means none came.
        if self.cycle is cycle_when_armed and not self.transport.is_closing():
            self.transport.close()


def run_server(app: ASGIApp, settings: FrontSettings) -> None:
    """Serve ``app`` until SIGINT or SIGTERM (uvicorn's own handlers end it in order)."""
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=_TimelyH11,
        lifespan="on",
        limit_concurrency=settings.max_connections,
        log_level="warning",
        server_header=False,
    )
    uvicorn.Server(config).run()

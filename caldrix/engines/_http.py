"""A small HTTP client for one server: JSON requests and a server-sent-event stream.

The standard library's :mod:`http.client` is enough for what a remote member asks of its
server, and it lets a stream be interrupted from another thread: shutting the socket down
makes the engine thread's blocked read return at once, which is how a generation whose
client left stops waiting on a long prefill.

Every failure is one of two exceptions: :class:`Unreachable` (nothing answered, or the
connection broke) and :class:`Refused` (the server answered with an error status). The remote
member turns them into caldrix errors that name the URL.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

#: How long to wait for a connection and for a reply to a short request (models, tokenize).
REQUEST_TIMEOUT_SECS: Final = 60.0
#: How long a stream may stay silent (a long prefill on the server) before it counts as dead;
#: the same as the protocol client's wait between frames.
STREAM_TIMEOUT_SECS: Final = 600.0
#: The most of an error reply's body kept for the one line that reports it.
ERROR_BODY_CHARS: Final = 200


class Unreachable(Exception):
    """Nothing answered, or the connection broke before a whole reply."""


class Refused(Exception):
    """The server answered with an error status."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Origin:
    """Where a server is: scheme, host, port and the path prefix of its API."""

    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def from_url(cls, url: str) -> Origin:
        split = urllib.parse.urlsplit(url)
        if split.scheme not in ("http", "https") or not split.hostname:
            raise ValueError(f"{url!r} is not an http:// or https:// address")
        port = split.port or (443 if split.scheme == "https" else 80)
        return cls(split.scheme, split.hostname, port, split.path.rstrip("/"))

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path}"


class HttpClient:
    """JSON over HTTP to one origin. Short requests reuse one keep-alive connection per
    thread (rendering tokenizes from several threads at once); each stream has its own."""

    def __init__(self, origin: Origin, headers: Mapping[str, str]) -> None:
        self.origin = origin
        self._headers = {"Accept": "application/json", **headers}
        self._local = threading.local()

    def get(self, path: str) -> Any:
        return self._request("GET", path, None)

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return self._request("POST", path, body)

    def stream(self, path: str, body: Mapping[str, Any]) -> EventStream:
        """POST ``body`` and return the reply's server-sent events."""
        connection = self._connect(STREAM_TIMEOUT_SECS)
        try:
            response = _send(connection, "POST", self.origin.path + path, body, self._headers)
        except BaseException:
            connection.close()
            raise
        return EventStream(connection, response)

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def _request(self, method: str, path: str, body: Mapping[str, Any] | None) -> Any:
        for attempt in (1, 2):
            connection = getattr(self._local, "connection", None)
            fresh = connection is None
            if connection is None:
                connection = self._connect(REQUEST_TIMEOUT_SECS)
                self._local.connection = connection
            try:
                response = _send(connection, method, self.origin.path + path, body, self._headers)
                return _json_reply(response)
            except Unreachable:
                connection.close()
                self._local.connection = None
                # A kept-alive connection the server has since closed: try once on a new one.
                if fresh or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.origin.scheme == "https":
            return http.client.HTTPSConnection(self.origin.host, self.origin.port, timeout=timeout)
        return http.client.HTTPConnection(self.origin.host, self.origin.port, timeout=timeout)


class EventStream:
    """The ``data:`` payloads of a server-sent-event reply, parsed as JSON, until ``[DONE]``."""

    def __init__(self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        self._connection = connection
        self._response = response
        self.finished = False
        """Whether the server ended the stream properly (``[DONE]``)."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            while True:
                line = self._response.readline()
                if not line:
                    return  # the server closed the connection (or interrupt() did)
                text = line.decode("utf-8", "replace").strip()
                if text.startswith("error:"):  # older llama.cpp servers: ``error: {json}``
                    yield {"error": _parsed(text[len("error:") :].strip())}
                    continue
                if not text.startswith("data:"):
                    continue  # comments (pings), event names, blank separators
                data = text[len("data:") :].strip()
                if data == "[DONE]":
                    self.finished = True
                    return
                try:
                    event = json.loads(data)
                except ValueError as exc:
                    raise Unreachable(f"the stream sent something that is not JSON: {data[:80]!r}") from exc
                if isinstance(event, dict):
                    yield event
        except (OSError, http.client.HTTPException) as exc:
            raise Unreachable(_reason(exc)) from exc

    def interrupt(self) -> None:
        """From any thread: make the blocked read return (the stream then ends)."""
        sock = self._connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._connection.close()


def _send(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    body: Mapping[str, Any] | None,
    headers: Mapping[str, str],
) -> http.client.HTTPResponse:
    payload = None if body is None else json.dumps(body).encode()
    sent = dict(headers)
    if payload is not None:
        sent["Content-Type"] = "application/json"
    try:
        connection.request(method, path or "/", body=payload, headers=sent)
        response = connection.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        raise Unreachable(_reason(exc)) from exc
    if response.status >= 400:
        try:
            text = response.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            text = ""
        raise Refused(response.status, _error_text(text))
    return response


def _json_reply(response: http.client.HTTPResponse) -> Any:
    try:
        data = response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise Unreachable(_reason(exc)) from exc
    try:
        return json.loads(data)
    except ValueError as exc:
        raise Refused(response.status, f"not JSON: {data[:80]!r}") from exc


def _parsed(data: str) -> Any:
    """``data`` as JSON if it is, else the text itself."""
    try:
        return json.loads(data)
    except ValueError:
        return data


def stream_error_text(error: object) -> str:
    """An error a server sent inside a stream that had begun (llama.cpp's server sends
    ``{"error": {"code": 400, "message": …}}`` when a request fails after its headers), as one
    line: its status, if it names one, and its message."""
    if isinstance(error, dict):
        code = error.get("code")
        message = error.get("message") or error.get("type") or json.dumps(error)
        status = f"{code}: " if isinstance(code, int) else ""
        line = f"{status}{message}"
    else:
        line = str(error)
    return " ".join(line.split())[:ERROR_BODY_CHARS] or "(no message)"


def _error_text(text: str) -> str:
    """An error reply's message: the ``detail`` / ``error.message`` of a JSON body if there is
    one, else the body itself, on one line."""
    message: Any = text
    with contextlib.suppress(ValueError):
        parsed = json.loads(text)
        if isinstance(parsed, dict):
            error = parsed.get("error")
            detail = parsed.get("detail")
            if isinstance(error, dict) and error.get("message"):
                message = error["message"]
            elif isinstance(error, str):
                message = error
            elif detail is not None:
                message = detail
    line = " ".join(str(message).split())
    return line[:ERROR_BODY_CHARS] or "(no body)"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"the host is not known ({exc.strerror})"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, http.client.IncompleteRead):
        return "the connection closed in the middle of the reply"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__

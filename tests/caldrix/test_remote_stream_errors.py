"""A remote member's server that fails a generation after its stream began says why.

llama.cpp's server answers ``200`` and starts the event stream before a request can fail (a
grammar it cannot parse, a prompt past its window); it then sends the error as an event and
closes. The member must pass on the server's own status and message, in one line, not "closed
the stream after 0 piece(s)". A real HTTP server on a loopback port plays that server here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from caldrix.engine_seam import GenerationParams
from caldrix.engines._http import EventStream, HttpClient, Origin
from caldrix.engines._remote_stream import RemoteGeneration
from caldrix.errors import BadRequest, InternalError

GRAMMAR_ERROR = {
    "code": 400,
    "message": "failed to parse grammar:\n  at line 1",
    "type": "invalid_request_error",
}
#: What each path's stream sends after ``200``, line by line, before the server closes it.
STREAMS = {
    "/grammar": [f"data: {json.dumps({'error': GRAMMAR_ERROR})}"],
    "/crash": [
        'data: {"choices": [{"text": "Hel", "finish_reason": null}]}',
        'data: {"error": {"code": 500, "message": "decode failed", "type": "server_error"}}',
    ],
    "/old": ['error: {"code": 500, "message": "slot unavailable"}'],
    "/silent": [],
}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for line in STREAMS[self.path]:
            self.wfile.write(f"{line}\n\n".encode())
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def origin() -> Iterator[Origin]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Origin("http", "127.0.0.1", server.server_address[1], "")
    server.shutdown()
    server.server_close()


class _Server:
    """The part of a remote member a generation talks to, streaming from one path."""

    def __init__(self, origin: Origin, path: str) -> None:
        self._client = HttpClient(origin, {})
        self._path = path
        self.url = origin.url

    def stream(self, body: dict[str, Any]) -> EventStream:
        return self._client.stream(self._path, body)

    def count_text(self, text: str) -> int:
        return len(text)


class _Sink:
    def __init__(self) -> None:
        self.text: list[str] = []

    def progress(self, done: int, total: int) -> None:
        pass

    def token(self, text: str) -> None:
        self.text.append(text)

    def cancelled(self) -> bool:
        return False


def _generate(origin: Origin, path: str) -> tuple[Exception, _Sink]:
    sink = _Sink()
    generation = RemoteGeneration(_Server(origin, path), [1, 2, 3], GenerationParams(max_new_tokens=8), sink)
    with pytest.raises((BadRequest, InternalError)) as raised:
        generation.run({"prompt": [1, 2, 3]})
    return raised.value, sink


def test_a_refused_grammar_says_the_servers_status_and_reason_in_one_line(origin: Origin) -> None:
    error, _ = _generate(origin, "/grammar")
    assert isinstance(error, BadRequest)  # the request's to fix, not the pool's
    assert str(error) == (
        f"the server at {origin.url} ended the stream with an error: 400: failed to parse grammar: at line 1"
    )


def test_an_error_after_some_text_is_the_servers_failure_with_its_reason(origin: Origin) -> None:
    error, sink = _generate(origin, "/crash")
    assert isinstance(error, InternalError)
    assert str(error).endswith("ended the stream with an error: 500: decode failed")
    assert sink.text == ["Hel"]


def test_the_older_error_line_of_llama_cpp_is_read_too(origin: Origin) -> None:
    error, _ = _generate(origin, "/old")
    assert isinstance(error, InternalError) and str(error).endswith("500: slot unavailable")


def test_a_stream_closed_without_a_word_still_says_it_closed(origin: Origin) -> None:
    error, _ = _generate(origin, "/silent")
    assert isinstance(error, InternalError)
    assert "closed the stream after 0 piece(s) of text" in str(error)

"""Hostile HTTP input never ends the front or the pool, and never stops another client's reply.

Oversized bodies, bodies that are not UTF-8 or nest past any parser, lone surrogates, request
heads that trickle in, garbage that is not HTTP, hundreds of connections at once, a wrong API
key: each is refused (or dropped) on its own, while a streamed reply on another connection
carries on to its end and the front and the pool keep answering.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlparse

import anthropic
import pytest

from tests.caldrix.front_harness import FrontProcess, launch_front, scripted_front, start_scripted
from tests.caldrix.pool_harness import PoolProcess

pytestmark = pytest.mark.e2e

LIMIT = 200_000
#: A long answer that never repeats itself (a loop would be stopped by the pool's guard).
LONG = " ".join(f"still here {n}" for n in range(250))
SCRIPT = [
    {"text": LONG, "when": "MARK-long"},
    {"text": "After the storm.", "when": "MARK-after"},
    {"text": "Keyed answer.", "when": "MARK-keyed"},
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PoolProcess, FrontProcess]]:
    front_args = ("--max-body-bytes", str(LIMIT), "--max-connections", "32")
    with scripted_front(tmp_path_factory.mktemp("front"), SCRIPT, *front_args) as served:
        yield served


def sdk(front: FrontProcess, key: str = "x") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=front.url, api_key=key, max_retries=0, timeout=300)


def raw(front: FrontProcess) -> socket.socket:
    address = urlparse(front.url)
    return socket.create_connection((address.hostname, address.port), timeout=30)


def post_raw(front: FrontProcess, body: bytes) -> tuple[int, dict[str, object]]:
    with front.client() as http:
        answer = http.post("/v1/messages", content=body, headers={"content-type": "application/json"})
    return answer.status_code, answer.json()


def wait_until_served(front: FrontProcess, secs: float = 60.0) -> None:
    """Until the front has seen closed connections go (past --max-connections it answers 503)."""
    deadline = time.monotonic() + secs
    with front.client() as http:
        while http.head("/").status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.2)


def still_serving(pool: PoolProcess, front: FrontProcess) -> None:
    assert pool.process.poll() is None and front.process.poll() is None
    with front.client() as http:
        assert http.head("/").status_code == 200
        counted = http.post(
            "/v1/messages/count_tokens", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        )
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 0


def test_an_oversized_body_is_413_and_nothing_else_notices(served: tuple[PoolProcess, FrontProcess]) -> None:
    pool, front = served
    status, body = post_raw(front, b"x" * (LIMIT + 1))
    assert status == 413 and body["error"] == {  # type: ignore[comparison-overlap]
        "type": "request_too_large",
        "message": f"the body is {LIMIT + 1:,} bytes, over the limit of {LIMIT:,}",
    }

    def chunks() -> Iterator[bytes]:
        for _ in range(LIMIT // 10_000 + 2):
            yield b" " * 10_000

    with front.client() as http:  # no Content-Length: the limit holds as the body is read
        answer = http.post("/v1/messages", content=chunks())
    assert answer.status_code == 413
    still_serving(pool, front)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"model": "\xff\xfe"}', "the body is not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "the body is not JSON"),
        (b'"just a string"', "the body must be a JSON object, not a string"),
        (b"", "the body must be a JSON object, not null"),
    ],
)
def test_a_body_no_parser_takes_is_400(
    served: tuple[PoolProcess, FrontProcess], body: bytes, words: str
) -> None:
    pool, front = served
    status, answer = post_raw(front, body)
    assert status == 400 and str(answer["error"]["message"]).startswith(words)  # type: ignore[index]
    still_serving(pool, front)


def test_lone_surrogates_in_the_text_are_a_400(served: tuple[PoolProcess, FrontProcess]) -> None:
    pool, front = served
    body = b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "a\\ud800b"}]}'
    status, answer = post_raw(front, body)
    assert status == 400 and "surrogate" in str(answer["error"]["message"])  # type: ignore[index]
    still_serving(pool, front)


def test_abuse_does_not_stop_another_clients_stream(served: tuple[PoolProcess, FrontProcess]) -> None:
    """A stream runs while other connections trickle request heads, send garbage, hold bodies
    half sent and open by the hundred; it ends whole, and the front and pool go on."""
    pool, front = served
    pieces: list[str] = []
    started = threading.Event()
    finished = threading.Event()

    def stream() -> None:
        with sdk(front).messages.stream(
            model="m", max_tokens=2000, messages=[{"role": "user", "content": "MARK-long go"}]
        ) as replies:
            for text in replies.text_stream:
                pieces.append(text)
                started.set()
                time.sleep(0.002)  # a reader slower than the writer
        finished.set()

    reader = threading.Thread(target=stream)
    reader.start()
    assert started.wait(timeout=300), "the stream never started"
    abusers: list[socket.socket] = []
    try:
        trickler = raw(front)
        trickler.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")  # a head that never ends
        abusers.append(trickler)
        half = raw(front)
        half.sendall(b'POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"model"')
        abusers.append(half)
        garbage = raw(front)
        garbage.sendall(b"\x00\x01GARBAGE \xff\r\n\r\n")
        abusers.append(garbage)
        for _ in range(200):
            try:
                abusers.append(raw(front))
            except OSError:
                break
        reader.join(timeout=600)
    finally:
        for connection in abusers:
            connection.close()
    assert finished.is_set() and "".join(pieces).strip() == LONG
    wait_until_served(front)
    answer = sdk(front).messages.create(
        model="m", max_tokens=20, messages=[{"role": "user", "content": "MARK-after calm"}]
    )
    assert answer.content[0].text == "After the storm."  # type: ignore[union-attr]
    still_serving(pool, front)


def test_a_trickled_request_head_is_dropped(served: tuple[PoolProcess, FrontProcess]) -> None:
    _, front = served
    connection = raw(front)
    try:
        connection.sendall(b"GET / HTTP/1.1\r\n")
        closed = False
        for byte in b"Host: example\r\nX-Slow: " + b"a" * 200:
            try:
                connection.sendall(bytes([byte]))
                if connection.recv(1, socket.MSG_DONTWAIT) == b"":
                    closed = True
                    break
            except BlockingIOError:
                pass
            except OSError:
                closed = True
                break
            time.sleep(0.5)
    finally:
        connection.close()
    assert closed, "the front kept a connection whose request head never ended"


def test_a_front_with_a_key_serves_only_requests_that_carry_it(
    served: tuple[PoolProcess, FrontProcess],
) -> None:
    pool, _ = served
    keyed = launch_front(pool.log_path.parent, pool.socket_path, env={"CALDRIX_SERVE_API_KEY": "s3cret"})
    try:
        with pytest.raises(anthropic.AuthenticationError) as refused:
            sdk(keyed, "wrong").messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
        assert refused.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
        with keyed.client(authorization="Bearer s3cret") as http:
            answer = http.post(
                "/v1/messages",
                json={
                    "model": "m",
                    "max_tokens": 20,
                    "messages": [{"role": "user", "content": "MARK-keyed"}],
                },
            )
        assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "Keyed answer."
        with keyed.client() as http:
            assert http.post("/v1/messages/count_tokens", content=b"{}").status_code == 401
    finally:
        keyed.stop()


def test_the_front_refuses_a_public_address_without_a_key(served: tuple[PoolProcess, FrontProcess]) -> None:
    import subprocess
    import sys

    pool, _ = served
    done = subprocess.run(
        [sys.executable, "-m", "caldrix", "serve", "--socket", str(pool.socket_path), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in __import__("os").environ.items() if k != "CALDRIX_SERVE_API_KEY"},
    )
    assert done.returncode == 64
    assert done.stderr.strip().splitlines()[-1].startswith("caldrix: --host 0.0.0.0 reaches this machine")


def test_a_pool_that_is_gone_is_an_error_the_front_survives(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("gone")
    pool = start_scripted(folder, ["never said"])
    front = launch_front(folder, pool.socket_path)
    try:
        pool.stop()
        with pytest.raises(anthropic.APIStatusError) as refused:
            sdk(front).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        assert refused.value.status_code == 503
        assert json.dumps(refused.value.body).count("the caldrix pool is not available") == 1
        assert front.process.poll() is None
    finally:
        front.stop()

"""The degeneration guard through the real daemon on the scripted engine: a ``generate`` that asks
for it ends ``degenerate`` with its reason as soon as a span repeats (long periods too), appends
nothing, and one that does not ask runs as before."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from caldrix import limits
from caldrix.errors import BadRequest
from caldrix.protocol import DoneFrame, connect
from tests.caldrix.pool_harness import CLIENT_BOUNDS, PoolProcess, start_scripted_pool

pytestmark = pytest.mark.e2e

#: Some 150 tokens of varied lines, written over and over.
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")
PARAGRAPH = "".join(f"Step {word} opens {word}.txt and counts its words.\n" for word in WORDS)
SCRIPT = [*[PARAGRAPH * 8] * 4, "A short answer."]
WINDOW = 4096


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolProcess]:
    process = start_scripted_pool(tmp_path_factory.mktemp("guard"), SCRIPT, WINDOW, "cbor")
    try:
        yield process
    finally:
        process.stop()


async def _generate(
    socket: Path, max_new_tokens: int, guard: dict[str, int] | None = None
) -> tuple[DoneFrame, list[str]]:
    """One generation with ``append``; the done frame and the context's segment ids after it."""
    async with await connect(socket, bounds=CLIENT_BOUNDS) as client:
        created = await client.context_create("main", [{"id": "u", "role": "user", "text": "Go."}])
        generation = client.generate(created.context, max_new_tokens, append={"id": "a"}, guard=guard)
        done = await generation.result()
        context = await client.context_get(created.context)
        await client.context_drop(created.context)
    return done, [segment.id for segment in context.segments]


def test_a_long_period_is_stopped_on_its_fourth_repeat_and_not_appended(pool: PoolProcess) -> None:
    guard = {"long_run_tokens": 0}
    done, segments = anyio.run(lambda: _generate(pool.socket_path, 2048, guard=guard))
    assert done.finish == "degenerate"
    match = re.fullmatch(r"the same (\d+)-token span repeated 4 times", done.reason or "")
    assert match is not None, done.reason
    period = int(match.group(1))
    assert 100 <= period <= limits.DEGENERATE_SPAN_MAX_TOKENS
    assert done.completion_tokens == 4 * period  # stopped on the token that completed the fourth
    assert done.text.startswith(PARAGRAPH * 3) and len(done.text) < len(PARAGRAPH) * 5
    assert done.segment is None and segments == ["u"]


def test_by_default_a_long_period_stops_at_the_long_run(pool: PoolProcess) -> None:
    done, segments = anyio.run(lambda: _generate(pool.socket_path, 2048, guard={}))
    assert done.finish == "degenerate"
    match = re.fullmatch(r"the same (\d+)-token span repeated (\d) times", done.reason or "")
    assert match is not None, done.reason
    period = int(match.group(1))
    assert done.completion_tokens == max(limits.DEGENERATE_LONG_RUN_TOKENS, 2 * period)
    assert done.segment is None and segments == ["u"]


def test_a_shorter_span_limit_lets_the_long_period_run(pool: PoolProcess) -> None:
    done, segments = anyio.run(lambda: _generate(pool.socket_path, 400, guard={"span_max_tokens": 64}))
    assert (done.finish, done.reason, done.completion_tokens) == ("length", None, 400)
    assert segments == ["u", "a"]


def test_without_a_guard_the_generation_runs_to_its_bound(pool: PoolProcess) -> None:
    done, segments = anyio.run(lambda: _generate(pool.socket_path, 700))
    assert (done.finish, done.reason, done.completion_tokens) == ("length", None, 700)
    assert segments == ["u", "a"]
    short, _ = anyio.run(lambda: _generate(pool.socket_path, 64, guard={}))
    assert (short.finish, short.text) == ("stop", "A short answer.")


def test_a_bad_guard_is_one_line_naming_the_field(pool: PoolProcess) -> None:
    with pytest.raises(BadRequest, match=r"^field 'guard\.span_max_tokens': .*1024"):
        anyio.run(lambda: _generate(pool.socket_path, 8, guard={"span_max_tokens": 5000}))

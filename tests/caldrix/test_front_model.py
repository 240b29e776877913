"""The front on the real embedded model (smollm2-135m through llama.cpp).

A short streamed answer through Anthropic's SDK ends within its bound; and with the scripted
engine computing every row on the real weights (``--script-prefill``), a long prefill shows
what a client sees meanwhile: ``ping`` events while its reply is queued or prefilling, and
``count_tokens`` answered while the member is busy with that generation.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import anthropic
import anyio
import pytest

from caldrix.protocol import connect
from tests.caldrix.front_harness import FrontProcess, launch_front, start_scripted
from tests.caldrix.pool_harness import CLIENT_BOUNDS, DEFAULT_MODEL, PoolProcess, start_pool

pytestmark = [pytest.mark.model, pytest.mark.e2e]


def test_a_short_streamed_answer_on_the_real_model_ends_within_its_bound(tmp_path: Path) -> None:
    pool = start_pool(tmp_path, "--load", DEFAULT_MODEL, "--idle-timeout", "0")
    front = launch_front(tmp_path, pool.socket_path, "--max-output-tokens", "48")
    try:
        client = anthropic.Anthropic(base_url=front.url, api_key="x", max_retries=0, timeout=600)
        with client.messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=32000,
            system="You are terse.",
            messages=[{"role": "user", "content": "Say hello in three words."}],
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
    finally:
        front.stop()
        pool.stop()
    assert text.strip() and final.content[0].text == text.strip()  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"  # the model's own end, or the member's bound: never max_tokens
    assert 0 < final.usage.output_tokens <= 48


@pytest.fixture
def prefilling(tmp_path: Path) -> Iterator[tuple[PoolProcess, FrontProcess]]:
    pool = start_scripted(
        tmp_path,
        [{"text": "First done.", "when": "MARK-first"}, {"text": "Second done.", "when": "MARK-second"}],
        # One thread: OpenMP's spinning threads crawl on a busy shared machine.
        extra=["--script-prefill", "--context-budget", "0", "--threads", "1"],
    )
    front = launch_front(tmp_path, pool.socket_path, "--ping-interval", "0.2")
    try:
        yield pool, front
    finally:
        front.stop()
        pool.stop()


def stream_events(front: FrontProcess, text: str, events: list[tuple[str, dict[str, object]]]) -> None:
    body = {"model": "m", "max_tokens": 16, "stream": True, "messages": [{"role": "user", "content": text}]}
    with front.client() as http, http.stream("POST", "/v1/messages", json=body) as answer:
        name = ""
        for line in answer.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))


async def member_queue(pool: PoolProcess) -> int:
    client = await connect(pool.socket_path, bounds=CLIENT_BOUNDS)
    try:
        return (await client.pool_status()).members[0].queue
    finally:
        await client.aclose()


def test_pings_flow_and_counting_does_not_wait_while_a_long_prompt_prefills(
    prefilling: tuple[PoolProcess, FrontProcess],
) -> None:
    pool, front = prefilling
    long_text = "The quick brown fox jumps over the lazy dog. " * 120  # about 1,200 tokens of real prefill
    first: list[tuple[str, dict[str, object]]] = []
    second: list[tuple[str, dict[str, object]]] = []
    runs = [
        threading.Thread(target=stream_events, args=(front, "MARK-first " + long_text, first)),
        threading.Thread(target=stream_events, args=(front, "MARK-second " + long_text[:400], second)),
    ]
    runs[0].start()
    while not first:  # message_start comes at once, before the prefill
        runs[0].join(timeout=0.1)
    runs[1].start()
    while not second:
        runs[1].join(timeout=0.1)

    busy_before = anyio.run(member_queue, pool)
    with front.client() as http:
        counted = http.post(
            "/v1/messages/count_tokens",
            json={"model": "m", "messages": [{"role": "user", "content": long_text}]},
        )
    busy_after = anyio.run(member_queue, pool)
    for run in runs:
        run.join(timeout=900)

    assert counted.status_code == 200 and counted.json()["input_tokens"] > 1_000
    # The count was answered while both generations were on the member (one running, one queued).
    assert busy_before == 2 and busy_after >= 1
    for events, answer in ((first, "First done."), (second, "Second done.")):
        names = [name for name, _ in events]
        assert names[0] == "message_start" and names[-1] == "message_stop"
        before_content = names[: names.index("content_block_start")]
        assert "ping" in before_content, names  # queued or prefilling, the client hears from the front
        texts = [data["delta"]["text"] for name, data in events if name == "content_block_delta"]  # type: ignore[index]
        assert "".join(texts) == answer

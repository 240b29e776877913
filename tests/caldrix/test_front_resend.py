"""A resend adopts the generation its first request left (caldrix/front/resend.py).

One scripted pool; a front with a long resend grace (nothing here expires it) and one with a
grace of a second. The scripted engine gives each completion to one generation only: a resend
that started a generation of its own would get an empty answer, so getting the whole answer
shows the pool generated it once.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import anthropic
import openai
import pytest

from caldrix.front import anthropic_in
from caldrix.front.resend import pool_key
from caldrix.front.settings import MAX_KEPT_GENERATIONS, MAX_RESEND_GRACE_SECS
from tests.caldrix.front_harness import FrontProcess, launch_front, scripted_front
from tests.caldrix.pool_harness import PoolProcess

pytestmark = pytest.mark.e2e


def words(marker: str, count: int = 400) -> str:
    return " ".join(f"{marker}{n}" for n in range(count))


SCRIPT = [
    {"text": words("cut"), "when": "MARK-cut"},
    {"text": words("other"), "when": "MARK-other"},
    {"text": "The other question's answer.", "when": "MARK-different"},
    {"text": words("json"), "when": "MARK-json"},
    {"text": words("shared"), "when": "MARK-shared"},
    {"text": words("late"), "when": "MARK-late"},
    {"text": "A second take.", "when": "MARK-late"},
    *({"text": words(f"keep{n}x", 50), "when": f"MARK-keep{n} "} for n in range(MAX_KEPT_GENERATIONS + 1)),
    {"text": "Asked anew.", "when": "MARK-keep0 "},
]

#: Long enough that no test here outlives it, however loaded the machine.
LONG_GRACE = "3600"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[PoolProcess, FrontProcess, FrontProcess]]:
    folder = tmp_path_factory.mktemp("resend")
    with scripted_front(folder, SCRIPT, "--resend-grace", LONG_GRACE) as (pool, front):
        brief = launch_front(folder, pool.socket_path, "--resend-grace", "1")
        try:
            yield pool, front, brief
        finally:
            brief.stop()


def anthropic_client(front: FrontProcess) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=front.url, api_key="x", max_retries=0, timeout=300)


def ask(text: str) -> list[anthropic.types.MessageParam]:
    return [{"role": "user", "content": text}]


def leave_after_first_text(client: anthropic.Anthropic, text: str, **extra: object) -> str:
    """Stream ``text``'s answer and leave after its first piece, as a client that gives up."""
    with client.messages.stream(model="main", max_tokens=2000, messages=ask(text), **extra) as stream:  # type: ignore[arg-type]
        for piece in stream.text_stream:
            return piece
    raise AssertionError("the stream had no text")


def streamed_text(client: anthropic.Anthropic, text: str, **extra: object) -> anthropic.types.Message:
    with client.messages.stream(model="main", max_tokens=2000, messages=ask(text), **extra) as stream:  # type: ignore[arg-type]
        return stream.get_final_message()


def text_of(message: anthropic.types.Message) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


def test_a_resend_of_a_cut_stream_gets_the_whole_answer_generated_once(
    served: tuple[PoolProcess, FrontProcess, FrontProcess],
) -> None:
    pool, front, _ = served
    client = anthropic_client(front)
    first = leave_after_first_text(client, "MARK-cut go", metadata={"user_id": "first"})
    # Claude Code's resend: the same body, its metadata changed.
    again = streamed_text(client, "MARK-cut go", metadata={"user_id": "second"})
    assert first.strip() and words("cut").startswith(first.strip())
    assert text_of(again) == words("cut")
    assert again.stop_reason == "end_turn"
    assert again.usage.output_tokens > 400
    assert "generation cancelled" not in pool.log()
    assert "adopted by a request with the same body" in wait_for(front, "adopted by")


def test_a_different_body_after_a_disconnect_does_not_adopt(
    served: tuple[PoolProcess, FrontProcess, FrontProcess],
) -> None:
    _, front, _ = served
    client = anthropic_client(front)
    leave_after_first_text(client, "MARK-other go")
    adopted = front.log().count("adopted by")
    answer = client.messages.create(model="main", max_tokens=2000, messages=ask("MARK-different go"))
    assert text_of(answer) == "The other question's answer."
    assert front.log().count("adopted by") == adopted
    # The generation left behind is still there for its own resend.
    assert text_of(streamed_text(client, "MARK-other go")) == words("other")


def test_an_openai_stream_cut_and_asked_again_whole_gets_the_whole_answer(
    served: tuple[PoolProcess, FrontProcess, FrontProcess],
) -> None:
    _, front, _ = served
    client = openai.OpenAI(base_url=front.url + "/v1", api_key="x", max_retries=0, timeout=300)
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "user", "content": "MARK-json go"}
    ]
    stream = client.chat.completions.create(model="main", max_tokens=2000, messages=messages, stream=True)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    stream.close()
    whole = client.chat.completions.create(model="main", max_tokens=2000, messages=messages)
    assert whole.choices[0].message.content == words("json")
    assert whole.choices[0].finish_reason == "stop"


def test_two_clients_asking_the_same_at_once_share_one_answer(
    served: tuple[PoolProcess, FrontProcess, FrontProcess],
) -> None:
    _, front, _ = served
    client = anthropic_client(front)
    with client.messages.stream(model="main", max_tokens=2000, messages=ask("MARK-shared go")) as first:
        pieces = iter(first.text_stream)
        opening = next(pieces)
        second = streamed_text(client, "MARK-shared go")
        rest = "".join(pieces)
    assert opening + rest == words("shared")
    assert text_of(second) == words("shared")


def test_after_the_grace_a_resend_is_a_new_generation(
    served: tuple[PoolProcess, FrontProcess, FrontProcess],
) -> None:
    _, _, brief = served
    client = anthropic_client(brief)
    leave_after_first_text(client, "MARK-late go")
    # Gone either way: cancelled while it ran, or its finished answer dropped.
    wait_for(brief, "nobody asked again within 1 s")
    again = client.messages.create(model="main", max_tokens=2000, messages=ask("MARK-late go"))
    assert text_of(again) == "A second take."


def test_past_the_most_kept_the_oldest_left_generation_goes(
    served: tuple[PoolProcess, FrontProcess, FrontProcess],
) -> None:
    _, front, _ = served
    client = anthropic_client(front)
    for n in range(MAX_KEPT_GENERATIONS + 1):
        leave_after_first_text(client, f"MARK-keep{n} go")
    wait_for(front, f"dropped, {MAX_KEPT_GENERATIONS} others are kept")
    newest = MAX_KEPT_GENERATIONS
    kept = streamed_text(client, f"MARK-keep{newest} go")
    assert text_of(kept) == words(f"keep{newest}x", 50)
    assert text_of(streamed_text(client, "MARK-keep0 go")) == "Asked anew."


def wait_for(front: FrontProcess, words: str, secs: float = 120.0) -> str:
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        found = [line for line in front.log().splitlines() if words in line]
        if found:
            return found[-1]
        time.sleep(0.2)
    raise AssertionError(f"the front never said {words!r}:\n{front.log()}")


@pytest.mark.parametrize("grace", ["-1", "nan", "3601"])
def test_a_bad_resend_grace_is_one_line(grace: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "caldrix", "serve", "--resend-grace", grace],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr.strip()) == (
        64,
        f"caldrix: --resend-grace must be from 0 to {MAX_RESEND_GRACE_SECS:g} seconds",
    )


def test_the_pool_key_is_the_pool_request_not_the_bytes() -> None:
    def system(nonce: int) -> list[dict[str, str]]:
        header = f"x-anthropic-billing-header: cc_version=1; nonce={nonce}"
        return [{"type": "text", "text": header}, {"type": "text", "text": "Be brief."}]

    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "stream": True,
        "metadata": {"user_id": "one"},
        "system": system(1),
        "messages": [{"role": "user", "content": "hi"}],
    }
    key = pool_key(anthropic_in.messages_request(body), "main")
    resent = {**body, "stream": False, "metadata": {"user_id": "two"}, "model": "claude-opus-4"}
    assert pool_key(anthropic_in.messages_request({**resent, "system": system(2)}), "main") == key
    for changed in ({"temperature": 0.7}, {"max_tokens": 101}, {"stop_sequences": ["."]}):
        assert pool_key(anthropic_in.messages_request({**body, **changed}), "main") != key
    assert pool_key(anthropic_in.messages_request(body), "other") != key

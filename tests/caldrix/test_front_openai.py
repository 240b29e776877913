"""OpenAI's Python SDK as a client of ``caldrix serve``'s ``/v1/chat/completions``, on a
scripted member: the same front, the same code path as Anthropic's API, another dialect."""

from __future__ import annotations

import json
from collections.abc import Iterator

import jsonschema
import openai
import pytest

from tests.caldrix.front_harness import FrontProcess, scripted_front
from tests.caldrix.pool_harness import PoolProcess

pytestmark = pytest.mark.e2e

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "sure": {"type": "boolean"}},
    "required": ["answer", "sure"],
    "additionalProperties": False,
}


def call(name: str, arguments: object) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call>'


SCRIPT = [
    {"text": "Hello from caldrix.", "when": "MARK-plain"},
    {"text": "Streamed hello.", "when": "MARK-stream"},
    {"text": call("get_weather", {"city": "Paris", "unit": "c"}), "when": "MARK-tool"},
    {
        "text": "Checking.\n" + call("get_weather", {"city": "Lima", "unit": "kelvin"}),
        "when": "MARK-streamtool",
    },
    {"text": "The answer is 4, I am sure.", "when": "MARK-json"},
    {"text": "Read the history.", "when": "MARK-history"},
    {"text": "Once. " + "Again and again. " * 400, "when": "MARK-loop"},
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PoolProcess, FrontProcess]]:
    with scripted_front(tmp_path_factory.mktemp("front"), SCRIPT) as served:
        yield served


@pytest.fixture
def client(served: tuple[PoolProcess, FrontProcess]) -> openai.OpenAI:
    return openai.OpenAI(base_url=served[1].url + "/v1", api_key="x", max_retries=0, timeout=300)


def test_a_completion_is_answered_with_usage(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "system", "content": "Be kind."}, {"role": "user", "content": "MARK-plain hi"}],
    )
    choice = completion.choices[0]
    assert choice.message.content == "Hello from caldrix." and choice.finish_reason == "stop"
    assert completion.object == "chat.completion" and completion.model == "gpt-4o"
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    assert (
        completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


def test_a_looping_completion_is_stopped_by_the_guard_as_stop(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="gpt-4o", max_tokens=8000, messages=[{"role": "user", "content": "MARK-loop go"}]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and (choice.message.content or "").startswith(
        "Once. Again and again."
    )
    assert completion.usage is not None and completion.usage.completion_tokens < 128


def test_a_stream_arrives_as_chunks_then_usage(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "MARK-stream hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "Streamed hello."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_a_tool_call_is_a_tool_calls_message(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "MARK-tool weather?"}], tools=[WEATHER]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert len(calls) == 1 and calls[0].function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris", "unit": "c"}  # type: ignore[union-attr]
    assert calls[0].id.startswith("call_")


def test_a_streamed_tool_call_matches_its_schema(client: openai.OpenAI) -> None:
    """The script's unit is not in the enum: the grammar holds the call to the schema."""
    stream = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "MARK-streamtool weather?"}],
        tools=[WEATHER],
        tool_choice="required",
        stream=True,
    )
    chunks = [chunk for chunk in stream if chunk.choices]
    deltas = [call for chunk in chunks for call in chunk.choices[0].delta.tool_calls or []]
    assert len(deltas) == 1 and deltas[0].function is not None
    arguments = json.loads(deltas[0].function.arguments or "")
    jsonschema.validate(arguments, WEATHER["function"]["parameters"])  # type: ignore[index]
    assert not "".join(chunk.choices[0].delta.content or "" for chunk in chunks)  # required: no text first
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_response_format_holds_the_answer_to_its_schema(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "MARK-json what is 2+2?"}],
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER}},
    )
    content = completion.choices[0].message.content
    assert content is not None
    jsonschema.validate(json.loads(content), ANSWER)


def test_history_with_tool_calls_and_results_is_read(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(
        model="m",
        tools=[WEATHER],
        messages=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo", "unit": "c"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
            {"role": "user", "content": "MARK-history and now?"},
        ],
    )
    assert completion.choices[0].message.content == "Read the history."


def test_errors_come_in_openais_shape(
    client: openai.OpenAI, served: tuple[PoolProcess, FrontProcess]
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], temperature=5)
    assert refused.value.body["message"] == "temperature: must be from 0 to 2, not 5.0"  # type: ignore[index]
    with served[1].client() as http:
        answer = http.post("/v1/chat/completions", content=b"\xff\xfe{}")
        missing = http.get("/v1/chat/nothing")
    assert answer.status_code == 400 and answer.json()["error"]["message"] == "the body is not UTF-8 (byte 0)"
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"


def test_the_models_list_reads_in_both_sdks(
    client: openai.OpenAI, served: tuple[PoolProcess, FrontProcess]
) -> None:
    import anthropic

    assert [model.id for model in client.models.list()] == ["main"]
    assert [model.id for model in anthropic.Anthropic(base_url=served[1].url, api_key="x").models.list()] == [
        "main"
    ]

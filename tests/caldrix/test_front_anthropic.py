"""Anthropic's Python SDK as a client of ``caldrix serve``, on a scripted member.

One pool and one front serve the module; each test's prompt carries its own marker, and the
script's answers are taken by the prompt that holds their ``when`` text, so the tests do not
depend on their order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import anthropic
import jsonschema
import pytest

from tests.caldrix.front_harness import FrontProcess, launch_front, scripted_front
from tests.caldrix.pool_harness import PoolProcess

pytestmark = pytest.mark.e2e

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"],
        "additionalProperties": False,
    },
}
TIME = {
    "name": "get_time",
    "description": "The time in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def call(name: str, arguments: object) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call>'


#: A call as small models write it given Claude Code's prompt: no tag, in a fence, laid out.
FENCED_CALL = (
    '```json\n{\n  "name": "NAME",\n  "arguments": {\n    "city": "Paris",\n    "days": 2\n  }\n}\n```'
)

SCRIPT = [
    {"text": "Plain answer one.", "when": "MARK-plain"},
    {"text": "Streamed answer two.", "when": "MARK-stream"},
    {"text": "Let me look.\n" + call("get_weather", {"city": "Paris", "days": 2}), "when": "MARK-tool"},
    {
        "text": "I will not call anything.\n" + call("get_weather", {"city": "Oslo", "days": 1}),
        "when": "MARK-any",
    },
    {"text": call("get_weather", {"city": 12, "days": "many", "extra": True}), "when": "MARK-schema"},
    {"text": call("get_weather", {"city": "Rome", "days": 3}), "when": "MARK-named"},
    {"text": "Words and " + call("get_time", {"city": "Lima"}), "when": "MARK-none"},
    {"text": "one two STOP three", "when": "MARK-stopseq"},
    {"text": "alpha beta gamma delta epsilon zeta eta theta", "when": "MARK-maxtok"},
    {"text": "alpha beta gamma delta epsilon zeta eta theta", "when": "MARK-bound"},
    {"text": "<think>Weighing it.</think>The answer is four.", "when": "MARK-think"},
    {"text": " ".join(f"word{n}" for n in range(3000)), "when": "MARK-leave"},
    {"text": "Here is the answer. " + "The loop goes on and on. " * 400, "when": "MARK-loop"},
    {"text": "After the history.", "when": "MARK-history"},
    {"text": FENCED_CALL.replace("NAME", "get_weather"), "when": "MARK-fenced"},
    {"text": FENCED_CALL.replace("NAME", "stop_task"), "when": "MARK-unknown"},
    {"text": "The main agent's answer.", "when": "MARK-main-agent"},
    {"text": "The subagent's answer.", "when": "MARK-subagent"},
]


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[PoolProcess, FrontProcess, FrontProcess]]:
    folder = tmp_path_factory.mktemp("front")
    with scripted_front(folder, SCRIPT, "--model", "claude-*-nomember=absent", "--resend-grace", "0") as (
        pool,
        front,
    ):
        bounded = launch_front(folder, pool.socket_path, "--max-output-tokens", "4")
        try:
            yield pool, front, bounded
        finally:
            bounded.stop()


@pytest.fixture
def client(served: tuple[PoolProcess, FrontProcess, FrontProcess]) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=served[1].url, api_key="x", max_retries=0, timeout=300)


def ask(text: str) -> list[anthropic.types.MessageParam]:
    return [{"role": "user", "content": text}]


def test_a_message_is_answered_whole_with_the_pools_usage(client: anthropic.Anthropic) -> None:
    counted = client.messages.count_tokens(model="claude-sonnet-4-5", messages=ask("MARK-plain hello"))
    message = client.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, messages=ask("MARK-plain hello")
    )
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "Plain answer one."  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn" and message.role == "assistant"
    assert message.model == "claude-sonnet-4-5"
    usage = message.usage
    assert usage.input_tokens + (usage.cache_read_input_tokens or 0) == counted.input_tokens > 0
    assert usage.output_tokens > 0


def test_a_streamed_message_arrives_as_deltas(client: anthropic.Anthropic) -> None:
    with client.messages.stream(model="claude-x", max_tokens=64, messages=ask("MARK-stream hi")) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == "Streamed answer two."
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 0 and final.usage.input_tokens > 0


def test_a_tool_call_streams_as_a_tool_use_block(client: anthropic.Anthropic) -> None:
    with client.messages.stream(
        model="claude-x", max_tokens=200, tools=[WEATHER], messages=ask("MARK-tool weather in Paris?")
    ) as stream:
        final = stream.get_final_message()
    assert [block.type for block in final.content] == ["text", "tool_use"]
    assert final.content[0].text == "Let me look."  # type: ignore[union-attr]
    use = final.content[1]
    assert use.type == "tool_use" and use.name == "get_weather"
    assert use.input == {"city": "Paris", "days": 2} and use.id.startswith("toolu_")
    assert final.stop_reason == "tool_use"


def test_a_reply_that_opens_with_an_untagged_call_of_a_tool_is_that_call(client: anthropic.Anthropic) -> None:
    with client.messages.stream(
        model="claude-x", max_tokens=200, tools=[WEATHER, TIME], messages=ask("MARK-fenced weather?")
    ) as stream:
        final = stream.get_final_message()
    assert [block.type for block in final.content] == ["tool_use"]
    use = final.content[0]
    assert use.type == "tool_use" and use.name == "get_weather" and use.input == {"city": "Paris", "days": 2}
    assert final.stop_reason == "tool_use"


def test_an_untagged_call_of_no_tool_stays_text(client: anthropic.Anthropic) -> None:
    message = client.messages.create(
        model="claude-x", max_tokens=200, tools=[WEATHER, TIME], messages=ask("MARK-unknown weather?")
    )
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == FENCED_CALL.replace("NAME", "stop_task")  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"


def test_any_forces_a_call_with_no_text_first(client: anthropic.Anthropic) -> None:
    message = client.messages.create(
        model="claude-x",
        max_tokens=200,
        tools=[WEATHER, TIME],
        tool_choice={"type": "any"},
        messages=ask("MARK-any weather in Oslo?"),
    )
    assert [block.type for block in message.content] == ["tool_use"]
    assert message.stop_reason == "tool_use"


def test_a_call_always_matches_its_input_schema(client: anthropic.Anthropic) -> None:
    """The script writes an input of the wrong types with an extra field: the grammar holds."""
    message = client.messages.create(
        model="claude-x", max_tokens=200, tools=[WEATHER], messages=ask("MARK-schema weather?")
    )
    uses = [block for block in message.content if block.type == "tool_use"]
    assert len(uses) == 1 and uses[0].name == "get_weather"
    jsonschema.validate(uses[0].input, WEATHER["input_schema"])


def test_a_named_tool_is_the_one_called(client: anthropic.Anthropic) -> None:
    message = client.messages.create(
        model="claude-x",
        max_tokens=200,
        tools=[TIME, WEATHER],
        tool_choice={"type": "tool", "name": "get_weather"},
        messages=ask("MARK-named what now?"),
    )
    assert [(block.type, getattr(block, "name", None)) for block in message.content] == [
        ("tool_use", "get_weather")
    ]


def test_none_leaves_a_call_tag_as_text(client: anthropic.Anthropic) -> None:
    message = client.messages.create(
        model="claude-x",
        max_tokens=200,
        tools=[TIME],
        tool_choice={"type": "none"},
        messages=ask("MARK-none the time?"),
    )
    assert [block.type for block in message.content] == ["text"]
    assert message.stop_reason == "end_turn"
    assert "<tool_call>" in message.content[0].text  # type: ignore[union-attr]


def test_a_stop_sequence_ends_the_text_and_is_named(client: anthropic.Anthropic) -> None:
    message = client.messages.create(
        model="claude-x", max_tokens=64, stop_sequences=["STOP"], messages=ask("MARK-stopseq count")
    )
    assert message.stop_reason == "stop_sequence" and message.stop_sequence == "STOP"
    assert message.content[0].text == "one two "  # type: ignore[union-attr]


def test_the_clients_max_tokens_is_max_tokens(client: anthropic.Anthropic) -> None:
    message = client.messages.create(model="claude-x", max_tokens=3, messages=ask("MARK-maxtok letters"))
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 3


def test_the_members_bound_ends_the_turn_not_the_request(
    served: tuple[PoolProcess, FrontProcess, FrontProcess],
) -> None:
    """--max-output-tokens 4 under a client's 32,000 (Claude Code's figure): end_turn, so Claude
    Code shows what came instead of asking again."""
    bounded = anthropic.Anthropic(base_url=served[2].url, api_key="x", max_retries=0, timeout=300)
    message = bounded.messages.create(model="claude-x", max_tokens=32000, messages=ask("MARK-bound letters"))
    assert message.stop_reason == "end_turn" and message.usage.output_tokens == 4
    assert "cut: the output bound of 4 tokens" in served[2].log()


def test_a_looping_reply_is_stopped_by_the_guard_and_ends_the_turn(
    served: tuple[PoolProcess, FrontProcess, FrontProcess], client: anthropic.Anthropic
) -> None:
    """A model that loops under Claude Code's max_tokens of 32,000 is stopped by the pool's
    guard within a few repeats, and the message ends end_turn (which Claude Code shows and goes
    on from), with the guard's reason in the front's log."""
    with client.messages.stream(model="claude-x", max_tokens=32000, messages=ask("MARK-loop go")) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert message.stop_reason == "end_turn"
    assert text.startswith("Here is the answer. The loop goes on and on.")
    assert message.usage.output_tokens < 128
    assert "cut: the degeneration guard: the same 7-token span repeated" in served[1].log()


def test_a_leading_think_section_is_a_thinking_block(client: anthropic.Anthropic) -> None:
    with client.messages.stream(model="claude-x", max_tokens=64, messages=ask("MARK-think 2+2")) as stream:
        final = stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "text"]
    assert final.content[0].thinking == "Weighing it."  # type: ignore[union-attr]
    assert final.content[1].text == "The answer is four."  # type: ignore[union-attr]


def test_history_with_tool_use_results_and_thinking_is_read(client: anthropic.Anthropic) -> None:
    messages: list[anthropic.types.MessageParam] = [
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hidden", "signature": "s"},
                {"type": "redacted_thinking", "data": "xyz"},
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Oslo", "days": 1},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "rain"}],
                },
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True},
                {"type": "text", "text": "MARK-history go on"},
            ],
        },
    ]
    message = client.messages.create(
        model="claude-x",
        max_tokens=64,
        system=[{"type": "text", "text": "Be brief."}],
        tools=[WEATHER],
        messages=messages,
    )
    assert message.content[0].text == "After the history."  # type: ignore[union-attr]


def test_count_tokens_is_the_pools_exact_count(client: anthropic.Anthropic) -> None:
    plain = client.messages.count_tokens(model="claude-x", messages=ask("MARK-count a"))
    tooled = client.messages.count_tokens(model="claude-x", messages=ask("MARK-count a"), tools=[WEATHER])
    longer = client.messages.count_tokens(model="claude-x", messages=ask("MARK-count a a a a"))
    assert 0 < plain.input_tokens < longer.input_tokens < tooled.input_tokens


def test_a_subagent_resumes_the_main_agents_tools_though_its_system_text_differs(
    client: anthropic.Anthropic,
) -> None:
    """The tools come before the system text, so two agents that list the same tools (Claude
    Code's main agent and its subagent) share those rows, however their system prompts differ."""
    main = "You are the main agent of MARK-main-agent."
    sub = "You are a subagent, started for MARK-subagent."
    with_tools = client.messages.count_tokens(
        model="claude-x", system=main, tools=[WEATHER, TIME], messages=ask("go")
    )
    without = client.messages.count_tokens(model="claude-x", system=main, messages=ask("go"))
    tools_rows = with_tools.input_tokens - without.input_tokens
    client.messages.create(
        model="claude-x", max_tokens=32, system=main, tools=[WEATHER, TIME], messages=ask("go")
    )
    answer = client.messages.create(
        model="claude-x", max_tokens=32, system=sub, tools=[WEATHER, TIME], messages=ask("look")
    )
    assert answer.content[0].text == "The subagent's answer."  # type: ignore[union-attr]
    assert tools_rows > 100 and (answer.usage.cache_read_input_tokens or 0) >= tools_rows - 3


def test_a_body_that_is_not_json_is_400(served: tuple[PoolProcess, FrontProcess, FrontProcess]) -> None:
    with served[1].client() as http:
        answer = http.post(
            "/v1/messages",
            content=b'{"model": "x", "max_tokens":',
            headers={"content-type": "application/json"},
        )
    assert answer.status_code == 400
    body = answer.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("the body is not JSON")


def test_a_field_of_the_wrong_type_is_named(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="claude-x", max_tokens="many", messages=ask("hi"))  # type: ignore[arg-type]
    assert refused.value.body["error"]["message"] == "max_tokens: must be an integer, not a string"  # type: ignore[index]
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(
            model="claude-x",
            max_tokens=10,
            messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}],  # type: ignore[list-item]
        )
    assert "messages.0.content.0.text: must be a string" in str(refused.value)
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="claude-x", max_tokens=10, messages=[{"role": "robot", "content": "hi"}])  # type: ignore[list-item]
    assert "messages.0.role" in str(refused.value)


def test_unknown_fields_and_block_types_are_not_refused(client: anthropic.Anthropic) -> None:
    counted = client.messages.count_tokens(
        model="claude-x",
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                    },
                    {"type": "text", "text": "MARK-count what is it?"},
                ],
            }
        ],
        extra_body={
            "context_management": {"edits": []},
            "output_config": {"effort": "low"},
            "invented": [1, 2],
        },
    )
    assert counted.input_tokens > 0


def test_a_model_routed_to_a_missing_member_is_404(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as refused:
        client.messages.create(model="claude-opus-nomember", max_tokens=10, messages=ask("hi"))
    assert "member 'absent'" in str(refused.value) and "loaded: main" in str(refused.value)


def test_a_prompt_over_the_window_is_anthropics_prompt_too_long(client: anthropic.Anthropic) -> None:
    long = "MARK-overflow " + "word " * 40_000
    counted = client.messages.count_tokens(model="claude-x", messages=ask(long))
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="claude-x", max_tokens=10, messages=ask(long))
    assert refused.value.body["error"]["message"] == (  # type: ignore[index]
        f"prompt is too long: {counted.input_tokens} tokens > {32768 - 256} maximum"
    )


def test_a_prompt_past_what_the_pool_counts_is_still_prompt_too_long(client: anthropic.Anthropic) -> None:
    huge = "MARK-huge " + "x" * (4 * 32768 * 8 + 10)
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="claude-x", max_tokens=10, messages=ask(huge))
    assert refused.value.body["error"]["message"] == (  # type: ignore[index]
        f"prompt is too long: more than {4 * 32768} tokens > {32768 - 256} maximum"
    )


def test_leaving_a_stream_cancels_its_generation_at_once_with_no_resend_grace(
    served: tuple[PoolProcess, FrontProcess, FrontProcess], client: anthropic.Anthropic
) -> None:
    pool = served[0]
    with client.messages.stream(model="claude-x", max_tokens=2000, messages=ask("MARK-leave go")) as stream:
        for _ in stream.text_stream:
            break  # leave after the first piece of text
    cancelled = wait_for_line(pool, "generation cancelled after")
    tokens = int(cancelled.split("generation cancelled after ")[1].split()[0])
    assert tokens < 2000


def wait_for_line(pool: PoolProcess, words: str, secs: float = 60.0) -> str:
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        for line in pool.log().splitlines():
            if words in line:
                return line
        time.sleep(0.2)
    raise AssertionError(f"the pool never said {words!r}:\n{pool.log()}")

"""The front's pure parts: reading a reply as it streams, the prompt's segments, the tool
grammar (compiled and run by llguidance on the embedded model's vocabulary), the body readers,
model routing, the stop reasons, the request log."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import anyio
import pytest
from llguidance import LLMatcher

from caldrix.engines._llama import LlamaVocabulary
from caldrix.front.anthropic_in import messages_request
from caldrix.front.chat import ChatRequest, Tool, ToolChoice, Turn
from caldrix.front.errors import FrontError
from caldrix.front.fields import parse_body
from caldrix.front.openai_in import chat_request
from caldrix.front.prompt import prompt_segments
from caldrix.front.reply import CallMade, ReplyEvent, ReplyReader, TextPiece, ThinkingPiece
from caldrix.front.request_log import RequestLog
from caldrix.front.service import outcome_of
from caldrix.front.settings import FrontSettings, ModelRoute
from caldrix.front.tool_grammar import ANY_OBJECT, tool_grammar, usable_schema
from caldrix.front.tool_text import (
    BRIEF_DESCRIPTION_CHARS,
    brief_description,
    brief_schema,
    call_text,
    tools_section,
)
from caldrix.protocol.messages import DoneFrame, Timings
from tests.default_model import default_model_path

WRITE = Tool(
    "Write",
    "Write a file.",
    {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
        "additionalProperties": False,
    },
)
READ = Tool(
    "Read",
    "Read a file.",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)


def read_all(
    pieces: list[str], *, calls: bool = True, names: tuple[str, ...] = ("Read", "Write")
) -> tuple[list[ReplyEvent], ReplyReader]:
    numbers = itertools.count(1)
    reader = ReplyReader(lambda: f"id{next(numbers)}", calls=calls, names=names)
    events = [event for piece in pieces for event in reader.feed(piece)]
    return events + reader.finish(), reader


def characters(text: str) -> list[str]:
    return list(text)


# -- reading a reply --------------------------------------------------------------------------


def test_text_then_a_call_whole_however_the_pieces_fall() -> None:
    reply = "Let me write it.\n" + call_text("Write", {"file_path": "a.txt", "content": "hi\n"})
    for pieces in ([reply], characters(reply), [reply[:20], reply[20:23], reply[23:]]):
        events, reader = read_all(pieces)
        text = "".join(e.text for e in events if isinstance(e, TextPiece))
        calls = [e.call for e in events if isinstance(e, CallMade)]
        assert text == "Let me write it."
        assert [(c.name, c.input, c.id) for c in calls] == [
            ("Write", {"file_path": "a.txt", "content": "hi\n"}, "id1")
        ]
        assert reader.calls == 1 and not reader.cut_call


def test_text_is_held_back_only_while_it_could_be_a_call_tag() -> None:
    reader = ReplyReader(lambda: "x")
    assert reader.feed("Hello <tool") == [TextPiece("Hello")]
    assert reader.feed("box> and") == [TextPiece(" <toolbox> and")]
    assert reader.finish() == []


def test_two_calls_and_a_cut_third() -> None:
    reply = call_text("Read", {"file_path": "a"}) + "\n" + call_text("Read", {"file_path": "b"})
    events, reader = read_all(characters(reply + '\n<tool_call>\n{"name": "Read", "argu'))
    assert [e.call.input for e in events if isinstance(e, CallMade)] == [
        {"file_path": "a"},
        {"file_path": "b"},
    ]
    assert not [e for e in events if isinstance(e, TextPiece)]
    assert reader.cut_call and reader.calls == 2


def test_a_leading_think_section_is_thinking() -> None:
    events, _ = read_all(characters("<think>step one\nstep two</think>\n\nThe answer."))
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingPiece))
    text = "".join(e.text for e in events if isinstance(e, TextPiece))
    assert (thinking, text) == ("step one\nstep two", "The answer.")


def test_a_tag_that_is_no_call_stays_text_and_calls_off_reads_none() -> None:
    events, reader = read_all(["Look: <tool_call>not json</tool_call> done"])
    assert (
        "".join(e.text for e in events if isinstance(e, TextPiece))
        == "Look: <tool_call>not json</tool_call> done"
    )
    assert reader.calls == 0
    reply = "Words " + call_text("Read", {"file_path": "a"})
    events, reader = read_all([reply], calls=False)
    assert events == [TextPiece(reply)] and reader.calls == 0


def test_arguments_written_as_json_text_are_read_as_the_object() -> None:
    events, _ = read_all(
        ['<tool_call>\n{"name": "Read", "arguments": "{\\"file_path\\": \\"a\\"}"}\n</tool_call>']
    )
    assert [e.call.input for e in events if isinstance(e, CallMade)] == [{"file_path": "a"}]


#: How Qwen2.5-Coder-1.5B wrote its calls given Claude Code's prompt: untagged, fenced, laid out.
FENCED_READ = '```json\n{\n  "name": "Read",\n  "arguments": {\n    "file_path": "a.py"\n  }\n}\n```'


def test_a_reply_that_opens_with_an_untagged_call_is_that_call() -> None:
    bare = '{"name": "Read", "arguments": {"file_path": "a.py"}}'
    for reply in (FENCED_READ, bare, "\n " + FENCED_READ, FENCED_READ.replace("```json", "```")):
        for pieces in ([reply], characters(reply)):
            events, reader = read_all(pieces)
            assert [(e.call.name, e.call.input) for e in events if isinstance(e, CallMade)] == [
                ("Read", {"file_path": "a.py"})
            ], reply
            assert not [e for e in events if isinstance(e, TextPiece)] and reader.calls == 1
    events, _ = read_all([FENCED_READ + "\nThen I will edit it."])
    assert [type(e) for e in events] == [CallMade, TextPiece] and events[1] == TextPiece(
        "Then I will edit it."
    )


def test_an_untagged_opening_of_no_tool_or_in_prose_stays_text() -> None:
    for reply in (
        FENCED_READ.replace('"Read"', '"TaskStop"'),
        "Here it is: " + FENCED_READ,
        '```json\n{"name": "Ann", "age": 3}\n```',
    ):
        events, reader = read_all(characters(reply))
        assert "".join(e.text for e in events if isinstance(e, TextPiece)) == reply and reader.calls == 0
    events, reader = read_all([FENCED_READ], names=())
    assert events == [TextPiece(FENCED_READ)] and reader.calls == 0
    events, reader = read_all([FENCED_READ], calls=False)
    assert events == [TextPiece(FENCED_READ)] and reader.calls == 0


def test_text_is_held_at_the_opening_only_while_it_could_be_an_untagged_call() -> None:
    reader = ReplyReader(lambda: "x", names=["Read"])
    assert reader.feed("```") == [] and reader.feed('json\n{\n  "na') == []
    reader = ReplyReader(lambda: "x", names=["Read"])
    assert reader.feed("```py") == [TextPiece("```py")]
    assert reader.feed("thon\nprint(1)\n") == [TextPiece("thon\nprint(1)")]


def test_an_untagged_call_cut_before_its_end_is_dropped() -> None:
    events, reader = read_all(characters(FENCED_READ[:40]))
    assert events == [] and reader.cut_call and reader.calls == 0


# -- the prompt -------------------------------------------------------------------------------


def claude_code_like(messages: list[dict[str, object]], nonce: str) -> dict[str, object]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "system": [
            {
                "type": "text",
                "text": f"x-anthropic-billing-header: cc_version=2.1.332.{nonce}; cc_entrypoint=cli;",
            },
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
        ],
        "tools": [{"name": "Write", "description": "Write a file.", "input_schema": WRITE.schema}],
        "messages": messages,
        "thinking": {"type": "adaptive"},
        "metadata": {"user_id": "u"},
    }


def test_the_billing_header_is_dropped_so_the_prompt_starts_the_same() -> None:
    first = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                {"type": "text", "text": "Create hello.txt"},
            ],
        },
        {"role": "system", "content": "# Environment\ncwd: /w"},
    ]
    call = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Write",
        "input": {"file_path": "/w/hello.txt", "content": "hi"},
    }
    second = [
        *first,
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
    ]
    one = prompt_segments(messages_request(claude_code_like(first, "a1b")))
    two = prompt_segments(messages_request(claude_code_like(second, "9f0")))
    assert "x-anthropic-billing-header" not in one[0].text
    assert one[0].text.endswith("\n\nYou are Claude Code.")
    assert one[0].text.startswith("# Tools") and '"name": "Write"' in one[0].text
    assert [s.role for s in one] == ["system", "user"]  # the system entry is user text, joined
    assert one[1].text.endswith("Create hello.txt\n\n# Environment\ncwd: /w")
    assert two[: len(one)] == one  # the second request starts exactly as the first
    assert [s.role for s in two] == ["system", "user", "assistant", "user"]
    assert two[2].text == call_text("Write", {"file_path": "/w/hello.txt", "content": "hi"})
    assert two[3].text == "<tool_response>\nok\n</tool_response>"


def test_agents_with_their_own_system_text_share_the_tools_they_list_alike() -> None:
    """Claude Code's subagent has a system prompt of its own and most of the main agent's tools:
    its system segment starts with the main agent's up to the first tool they do not share."""
    main = ChatRequest("m", "You are the main agent.", (Turn("user", "go"),), None, tools=(READ, BASH, WRITE))
    sub = ChatRequest("m", "You are a subagent.", (Turn("user", "look"),), None, tools=(READ, WRITE))
    main_system, sub_system = prompt_segments(main)[0].text, prompt_segments(sub)[0].text
    shared = next(n for n, (a, b) in enumerate(zip(main_system, sub_system, strict=False)) if a != b)
    read_line = tools_section((READ,)).split("\n<tools>\n", 1)[1].split("\n", 1)[0]
    assert main_system[:shared].endswith(read_line + '\n{"name": "')  # they part at Bash / Write


def test_the_same_conversation_renders_the_same_in_both_dialects() -> None:
    anthropic_body = {
        "model": "m",
        "max_tokens": 9,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "again"},
        ],
    }
    openai_body = {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, *anthropic_body["messages"]],
    }  # type: ignore[list-item]
    assert prompt_segments(messages_request(anthropic_body)) == prompt_segments(chat_request(openai_body))


def test_a_request_without_system_or_tools_has_no_system_segment() -> None:
    request = ChatRequest(model="m", system="", turns=(Turn("user", "a"), Turn("user", "b")), max_tokens=5)
    assert [(s.role, s.text) for s in prompt_segments(request)] == [("user", "a\n\nb")]


# -- the grammar ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    import llama_cpp.llama_cpp as native

    params = native.llama_model_default_params()
    params.vocab_only = True
    model = native.llama_model_load_from_file(str(default_model_path()).encode(), params)
    yield LlamaVocabulary(native.llama_model_get_vocab(model)).lltokenizer()
    native.llama_model_free(model)


def consumed(tokenizer, grammar: str, text: str) -> LLMatcher:  # type: ignore[no-untyped-def]
    matcher = LLMatcher(tokenizer, LLMatcher.grammar_from_lark(grammar), log_level=0)
    tokens = tokenizer.tokenize_str(text)
    matcher.try_consume_tokens(tokens)
    return matcher


def accepts(tokenizer, grammar: str, text: str) -> bool:  # type: ignore[no-untyped-def]
    matcher = LLMatcher(tokenizer, LLMatcher.grammar_from_lark(grammar), log_level=0)
    tokens = tokenizer.tokenize_str(text)
    return matcher.try_consume_tokens(tokens) == len(tokens) and matcher.is_accepting()


def test_auto_allows_text_then_calls_that_match_their_schema(tokenizer) -> None:  # type: ignore[no-untyped-def]
    grammar = tool_grammar([WRITE, READ], ToolChoice("auto"))
    assert grammar is not None
    assert LLMatcher.validate_grammar(LLMatcher.grammar_from_lark(grammar), tokenizer) == ""
    good = call_text("Write", {"file_path": "a", "content": "b"})
    assert accepts(tokenizer, grammar, "Just text, no call.")
    assert accepts(tokenizer, grammar, "Some text.\n" + good)
    assert accepts(tokenizer, grammar, good + "\n" + call_text("Read", {"file_path": "x"}))
    assert not accepts(tokenizer, grammar, good + " and more text")
    assert not accepts(tokenizer, grammar, call_text("Write", {"file_path": "a"}))  # content is required
    assert not accepts(tokenizer, grammar, call_text("Delete", {"file_path": "a"}))  # no such tool
    # Once the tag is written, the call is forced: the name's opening comes by itself.
    matcher = consumed(tokenizer, grammar, "Ok.\n<tool_call>")
    assert tokenizer.decode_str(matcher.compute_ff_tokens()) == '\n{"name": "'


def test_auto_takes_an_opening_untagged_call_of_a_tool_and_forces_the_rest(tokenizer) -> None:  # type: ignore[no-untyped-def]
    grammar = tool_grammar([WRITE, READ], ToolChoice("auto"))
    assert grammar is not None
    assert accepts(tokenizer, grammar, FENCED_READ)
    assert accepts(tokenizer, grammar, '{"name": "Read", "arguments": {"file_path": "a.py"}}')
    assert not accepts(tokenizer, grammar, FENCED_READ + "\nMore text.")  # the call ends the reply
    assert not accepts(tokenizer, grammar, FENCED_READ.replace("file_path", "path"))  # not Read's input
    assert not accepts(tokenizer, grammar, '```json\n{"name": "Write", "arguments": {"file_path": "a"}}\n```')
    # A name that is no tool's, or an opening after prose, leaves the text free.
    assert accepts(tokenizer, grammar, FENCED_READ.replace('"Read"', '"TaskStop"').replace("file_path", "x"))
    assert accepts(tokenizer, grammar, "Look: " + FENCED_READ.replace("file_path", "x"))
    forced = tool_grammar([WRITE, READ], ToolChoice("any"))
    assert forced is not None and not accepts(tokenizer, forced, FENCED_READ)


def test_any_and_tool_start_with_the_call_and_parallel_off_allows_one(tokenizer) -> None:  # type: ignore[no-untyped-def]
    forced = tool_grammar([WRITE, READ], ToolChoice("any"))
    named = tool_grammar([WRITE, READ], ToolChoice("tool", name="Read"))
    single = tool_grammar([READ], ToolChoice("auto", parallel=False))
    assert forced is not None and named is not None and single is not None
    read = call_text("Read", {"file_path": "x"})
    assert not accepts(tokenizer, forced, "Text first.\n" + read)
    assert accepts(tokenizer, forced, read)
    assert tokenizer.decode_str(consumed(tokenizer, forced, "").compute_ff_tokens()).startswith("<tool_call>")
    assert not accepts(tokenizer, named, call_text("Write", {"file_path": "a", "content": "b"}))
    assert accepts(tokenizer, named, read)
    assert accepts(tokenizer, single, read) and not accepts(tokenizer, single, read + "\n" + read)
    assert tool_grammar([WRITE], ToolChoice("none")) is None and tool_grammar([], ToolChoice("any")) is None


def test_a_schema_llguidance_cannot_compile_becomes_any_object() -> None:
    broken = Tool("Odd", "", {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}})
    assert usable_schema(broken)["type"] == ANY_OBJECT["type"] and "properties" not in usable_schema(broken)
    assert usable_schema(WRITE)["properties"] == WRITE.schema["properties"]


# -- the body readers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"max_tokens": 5, "messages": []}, "model: is required"),
        (
            {"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]},
            "max_tokens: must be at least 1, not 0",
        ),
        (
            {"model": "m", "max_tokens": True, "messages": []},
            "max_tokens: must be an integer, not true or false",
        ),
        ({"model": "m", "max_tokens": 5, "messages": "hi"}, "messages: must be an array, not a string"),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": [{"type": "tool_result", "content": 5}]}],
            },
            "messages.0.content.0.content: must be an array, not an integer",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}],
                "tool_choice": {"type": "tool", "name": "Nope"},
            },
            "tool_choice.name: must name one of the request's tools, not 'Nope'",
        ),
        (
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}],
                "temperature": 1.5,
            },
            "temperature: must be from 0 to 1, not 1.5",
        ),
        (
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "top_k": -1},
            "top_k: must be 0 or more, not -1",
        ),
    ],
)
def test_a_wrong_field_is_named(body: dict[str, object], message: str) -> None:
    with pytest.raises(FrontError) as refused:
        messages_request(body)
    assert refused.value.status == 400 and refused.value.message == message


def test_parse_body_names_a_lone_surrogate_in_a_key_or_a_value() -> None:
    with pytest.raises(FrontError, match=r"messages\.0\.content: holds a lone surrogate"):
        parse_body(b'{"messages": [{"content": "a\\udc00"}]}')
    with pytest.raises(FrontError, match="lone surrogate"):
        parse_body(b'{"\\ud800": 1}')
    assert parse_body(b'{"ok": "\\u00e9\\ud83d\\ude00"}') == {"ok": "é😀"}


def test_openai_required_and_named_and_json_object() -> None:
    base = {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    }
    assert chat_request({**base, "tool_choice": "required"}).tool_choice == ToolChoice("any")
    assert (
        chat_request(
            {**base, "tool_choice": {"type": "function", "function": {"name": "f"}}}
        ).tool_choice.name
        == "f"
    )
    assert chat_request({**base, "parallel_tool_calls": False}).tool_choice.parallel is False
    assert chat_request({**base, "response_format": {"type": "json_object"}}).json_schema == {
        "type": "object"
    }
    assert chat_request({**base, "max_tokens": 7}).max_tokens == 7


# -- routing, stop reasons, the log ------------------------------------------------------------


def test_model_routing_first_route_then_member_name_then_default() -> None:
    settings = FrontSettings(routes=(ModelRoute("claude-*haiku*", "decision"), ModelRoute("big", "member2")))
    members = {"main", "decision", "member2"}
    assert settings.member_for("claude-3-5-haiku-latest", members) == "decision"
    assert settings.member_for("big", members) == "member2"
    assert settings.member_for("member2", members) == "member2"
    assert settings.member_for("claude-opus-4", members) == "main"
    assert FrontSettings(default_member="decision").member_for("gpt-4o", members) == "decision"


def done(
    finish: str, *, stop_string: str | None = None, completion: int = 5, reason: str | None = None
) -> DoneFrame:
    return DoneFrame(
        op="done",
        rid=1,
        text="",
        finish=finish,
        prompt_tokens=100,
        completion_tokens=completion,  # type: ignore[arg-type]
        recomputed_from=90,
        timings=Timings(queue_ms=0, prefill_ms=0, decode_ms=0),
        stop_string=stop_string,
        reason=reason,
    )


def test_stop_reasons() -> None:
    plain, calls = ReplyReader(lambda: "x"), ReplyReader(lambda: "x")
    calls.feed(call_text("Read", {"file_path": "a"}))
    assert outcome_of(done("stop"), plain, 64, 64).stop_reason == "end_turn"
    assert outcome_of(done("stop"), calls, 64, 64).stop_reason == "tool_use"
    assert outcome_of(done("stop", stop_string="##"), plain, 64, 64).stop_sequence == "##"
    assert outcome_of(done("length"), plain, 5, 5).stop_reason == "max_tokens"  # the client's own bound
    bounded = outcome_of(done("length"), plain, 32000, 2048)  # the member's bound: end the turn
    assert bounded.stop_reason == "end_turn" and bounded.cut == "the output bound of 2048 tokens"
    constrained = outcome_of(done("constraint"), plain, 64, 64)
    assert constrained.stop_reason == "end_turn" and constrained.cut is not None
    looped = outcome_of(
        done("degenerate", reason="the same 7-token span repeated 9 times"), plain, 32000, 2048
    )
    assert looped.stop_reason == "end_turn"
    assert looped.cut == "the degeneration guard: the same 7-token span repeated 9 times"
    # A call finished before the loop showed still stands.
    assert outcome_of(done("degenerate", reason="a loop"), calls, 32000, 2048).stop_reason == "tool_use"
    usage = outcome_of(done("stop"), plain, 64, 64).usage
    assert (usage.computed, usage.resumed, usage.output) == (10, 90, 5)


def test_the_request_log_numbers_on_and_never_writes_credentials(tmp_path: Path) -> None:
    (tmp_path / "000007-POST-v1_messages.json").write_text("{}")
    log = RequestLog(tmp_path)
    headers = {"x-api-key": "secret", "authorization": "Bearer secret", "anthropic-version": "2023-06-01"}
    written = anyio.run(log.write, "POST", "/v1/messages", "beta=true", headers, b'{"model": "m"}')
    assert written.name == "000008-POST-v1_messages.json"
    record = json.loads(written.read_text())
    assert record["headers"] == {"anthropic-version": "2023-06-01"} and record["body"] == {"model": "m"}
    assert "secret" not in written.read_text()
    odd = anyio.run(log.write, "GET", "/v1/models/../\x00" + "x" * 500, "", {}, b"")
    assert odd.parent == tmp_path and odd.name.startswith("000009-GET-v1_models_.._") and len(odd.name) < 120


# -- --tool-text brief ------------------------------------------------------------------------

BASH = Tool(
    "Bash",
    "Executes a bash command and returns its output.\n\n- IMPORTANT: avoid cat and head.\n- Quote paths.",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "description": "The call.",
        "properties": {
            "command": {"type": "string", "description": "The command to run."},
            "description": {"type": "string", "description": "What it does, in 5-10 words."},
            "env": {
                "type": "array",
                "items": {"type": "object", "description": "One variable.", "properties": {"name": {}}},
            },
            "mode": {"anyOf": [{"type": "string", "description": "a name"}, {"type": "integer"}]},
            "timeout": {"type": "integer", "exclusiveMinimum": 0, "maximum": 9007199254740991},
            "line": {"type": "integer", "minimum": -9007199254740991, "maximum": 600000},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
)


def test_brief_keeps_the_first_paragraph_and_the_shape_not_the_prose() -> None:
    assert brief_description(BASH.description) == "Executes a bash command and returns its output."
    assert brief_schema(BASH.schema) == {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "description": {"type": "string"},  # a parameter named description stays
            "env": {"type": "array", "items": {"type": "object", "properties": {"name": {}}}},
            "mode": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            # zod's safe-integer bounds say only "an integer"; real bounds stay
            "timeout": {"type": "integer", "exclusiveMinimum": 0},
            "line": {"type": "integer", "maximum": 600000},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},  # a schema stays
        },
        "required": ["command"],
    }
    full, brief = tools_section([BASH]), tools_section([BASH], brief=True)
    assert "IMPORTANT" in full and "IMPORTANT" not in brief and len(brief) < len(full)
    # The grammar holds a call to the schema as sent, whatever the prompt shows.
    assert usable_schema(BASH)["properties"] == BASH.schema["properties"]


def test_a_long_first_paragraph_is_cut_at_a_sentence_else_at_a_word() -> None:
    sentences = "Lists agents you can message. " * 20
    cut = brief_description(sentences)
    assert cut.endswith("message.") and len(cut) <= BRIEF_DESCRIPTION_CHARS
    words = "word " * 100
    cut = brief_description(words)
    assert cut.endswith("word…") and len(cut) <= BRIEF_DESCRIPTION_CHARS + 1


def test_brief_tools_shorten_only_the_tools_section() -> None:
    request = ChatRequest("m", "Be brief.", (Turn("user", "hi"),), None, tools=(BASH,))
    full, brief = prompt_segments(request), prompt_segments(request, brief_tools=True)
    assert full[0].text.endswith("\n\nBe brief.") and brief[0].text.endswith("\n\nBe brief.")
    assert len(brief[0].text) < len(full[0].text) and full[1:] == brief[1:]
    settings = FrontSettings(member_tool_text={"small": "brief"})
    assert (settings.tool_text_for("small"), settings.tool_text_for("main")) == ("brief", "full")

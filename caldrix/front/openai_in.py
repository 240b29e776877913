"""OpenAI's Chat Completions request (``POST /v1/chat/completions``) as a :class:`ChatRequest`.

``messages`` with roles ``system`` and ``developer`` (the leading ones are the system text),
``user``, ``assistant`` (text, and ``tool_calls`` whose ``arguments`` are JSON text) and
``tool`` (a result); content as a string or parts (``text`` parts are read, images and audio
are a placeholder line); ``tools`` of type ``function``; ``tool_choice`` ``none``, ``auto``,
``required`` or a named function; ``parallel_tool_calls``; ``max_completion_tokens`` (or the
older ``max_tokens``); ``stop``; ``temperature`` (0 to 2), ``top_p``, ``seed``;
``response_format`` ``text``, ``json_object`` or ``json_schema``. Other fields are ignored.
"""

from __future__ import annotations

import json
from typing import Any, Final

from caldrix.front.chat import ChatRequest, ChoiceMode, Sampling, Tool, ToolChoice, Turn
from caldrix.front.errors import bad_field
from caldrix.front.fields import in_range, json_object, of_kind, optional, required, text_parts, where
from caldrix.front.tool_text import assistant_text, result_text

UNSEEN: Final = "[{kind} omitted: this model reads text only]"
ROLES: Final = ("system", "developer", "user", "assistant", "tool")


def chat_request(raw: Any) -> ChatRequest:
    body = json_object(raw)
    model = required(body, "model", str)
    messages = required(body, "messages", list)
    if not messages:
        raise bad_field("messages", "must hold at least one message")
    turns = [_turn(message, where("messages", i)) for i, message in enumerate(messages)]
    system_parts = []
    while turns and turns[0].role == "system":
        system_parts.append(turns.pop(0).text)
    max_tokens = optional(body, "max_completion_tokens", int)
    if max_tokens is None:
        max_tokens = optional(body, "max_tokens", int)
    in_range(max_tokens, "max_completion_tokens", lambda n: n >= 1, "be at least 1")
    tools = tuple(_tools(optional(body, "tools", list) or []))
    parallel = optional(body, "parallel_tool_calls", bool)
    return ChatRequest(
        model=model,
        system="\n\n".join(system_parts),
        turns=tuple(turns),
        max_tokens=max_tokens,
        stream=bool(optional(body, "stream", bool)),
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools, parallel is not False),
        stop=_stop(body.get("stop")),
        sampling=Sampling(
            temperature=in_range(
                optional(body, "temperature", float), "temperature", lambda t: 0 <= t <= 2, "be from 0 to 2"
            ),
            top_p=in_range(
                optional(body, "top_p", float), "top_p", lambda p: 0 < p <= 1, "be above 0 and at most 1"
            ),
            seed=in_range(
                optional(body, "seed", int), "seed", lambda s: 0 <= s < 2**64, "be from 0 to 2**64 - 1"
            ),
        ),
        json_schema=_response_format(body.get("response_format")),
    )


def include_usage(raw: dict[str, Any]) -> bool:
    """Whether a stream ends with a usage chunk (``stream_options.include_usage``)."""
    options = raw.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _turn(raw: Any, path: str) -> Turn:
    message = of_kind(raw, dict, path)
    role = required(message, "role", str, path)
    if role not in ROLES:
        raise bad_field(where(path, "role"), f"must be one of {', '.join(ROLES)}, not {role!r}")
    text = text_parts(
        message.get("content"), where(path, "content"), lambda part, kind: UNSEEN.format(kind=kind)
    )
    if role == "tool":
        return Turn("user", result_text(text))
    if role == "assistant":
        calls = []
        for i, raw_call in enumerate(optional(message, "tool_calls", list, path) or []):
            call_path = where(where(path, "tool_calls"), i)
            function = required(of_kind(raw_call, dict, call_path), "function", dict, call_path)
            name = required(function, "name", str, where(call_path, "function"))
            arguments = required(function, "arguments", str, where(call_path, "function"))
            try:
                calls.append((name, json.loads(arguments) if arguments.strip() else {}))
            except ValueError:
                raise bad_field(where(call_path, "function.arguments"), "must be JSON text") from None
        return Turn("assistant", assistant_text(text, calls))
    return Turn("system" if role in ("system", "developer") else "user", text)


def _tools(raw: list[Any]) -> list[Tool]:
    tools = []
    for i, item in enumerate(raw):
        path = where("tools", i)
        tool = of_kind(item, dict, path)
        if tool.get("type", "function") != "function":
            continue
        function = required(tool, "function", dict, path)
        function_path = where(path, "function")
        tools.append(
            Tool(
                name=required(function, "name", str, function_path),
                description=optional(function, "description", str, function_path) or "",
                schema=optional(function, "parameters", dict, function_path) or {"type": "object"},
            )
        )
    return tools


def _tool_choice(raw: Any, tools: tuple[Tool, ...], parallel: bool) -> ToolChoice:
    if raw is None or raw == "auto":
        return ToolChoice("auto", parallel=parallel)
    modes: dict[str, ChoiceMode] = {"none": "none", "required": "any"}
    if isinstance(raw, str):
        if raw not in modes:
            raise bad_field("tool_choice", f"must be none, auto, required or a function, not {raw!r}")
        return ToolChoice(modes[raw], parallel=parallel)
    choice = of_kind(raw, dict, "tool_choice")
    function = required(choice, "function", dict, "tool_choice")
    name = required(function, "name", str, "tool_choice.function")
    if name not in {tool.name for tool in tools}:
        raise bad_field("tool_choice.function.name", f"must name one of the request's tools, not {name!r}")
    return ToolChoice("tool", name=name, parallel=parallel)


def _stop(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    return tuple(of_kind(value, str, where("stop", i)) for i, value in enumerate(of_kind(raw, list, "stop")))


def _response_format(raw: Any) -> dict[str, Any] | bool | None:
    if raw is None:
        return None
    format_ = of_kind(raw, dict, "response_format")
    kind = required(format_, "type", str, "response_format")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = required(format_, "json_schema", dict, "response_format")
        schema = spec.get("schema", True)
        if not isinstance(schema, dict | bool):
            raise bad_field("response_format.json_schema.schema", "must be a JSON Schema object")
        return schema
    raise bad_field("response_format.type", f"must be text, json_object or json_schema, not {kind!r}")

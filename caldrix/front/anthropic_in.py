"""Anthropic's Messages request (``POST /v1/messages``, ``/count_tokens``) as a :class:`ChatRequest`.

Read as Claude Code sends it: ``system`` as a string or text blocks, with per-request header
blocks (:data:`~caldrix.front.settings.HEADER_BLOCK_PREFIXES`) dropped so the prompt starts the
same on every request; ``messages`` whose content is a string or blocks — ``text``,
``tool_use``, ``tool_result`` (a string or blocks, ``is_error``), ``thinking`` and
``redacted_thinking`` (dropped: a model reads its own reasoning once), images and other media
(a placeholder line: the members read text) — and ``role: "system"`` entries; ``tools`` with
``input_schema`` (a server tool, which has none, is left out); ``tool_choice``; the sampling
fields. Every other field (``thinking``, ``metadata``, ``context_management``,
``output_config``, ``cache_control`` …) is ignored.
"""

from __future__ import annotations

from typing import Any, Final, cast

from caldrix.front.chat import ChatRequest, ChoiceMode, Role, Sampling, Tool, ToolChoice, Turn
from caldrix.front.errors import bad_field
from caldrix.front.fields import in_range, json_object, of_kind, optional, required, text_parts, where
from caldrix.front.settings import HEADER_BLOCK_PREFIXES
from caldrix.front.tool_text import assistant_text, result_text

#: Block types dropped from the prompt.
DROPPED_BLOCKS: Final = frozenset({"thinking", "redacted_thinking"})
#: What the model reads in place of a block it cannot see (an image, a PDF …).
UNSEEN: Final = "[{kind} omitted: this model reads text only]"
CHOICES: Final = ("auto", "any", "tool", "none")


def messages_request(raw: Any, *, count_only: bool = False) -> ChatRequest:
    """The body of ``POST /v1/messages`` (``count_only``: of ``/count_tokens``, which has no
    ``max_tokens``)."""
    body = json_object(raw)
    model = required(body, "model", str)
    max_tokens = None if count_only else required(body, "max_tokens", int)
    in_range(max_tokens, "max_tokens", lambda n: n >= 1, "be at least 1")
    messages = required(body, "messages", list)
    if not messages and not count_only:
        raise bad_field("messages", "must hold at least one message")
    tools = tuple(_tools(optional(body, "tools", list) or []))
    return ChatRequest(
        model=model,
        system=_system(body.get("system")),
        turns=tuple(_turn(message, where("messages", i)) for i, message in enumerate(messages)),
        max_tokens=max_tokens,
        stream=bool(optional(body, "stream", bool)),
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        stop=tuple(_strings(optional(body, "stop_sequences", list) or [], "stop_sequences")),
        sampling=Sampling(
            temperature=in_range(
                optional(body, "temperature", float), "temperature", _unit, "be from 0 to 1"
            ),
            top_p=in_range(
                optional(body, "top_p", float), "top_p", _positive_unit, "be above 0 and at most 1"
            ),
            top_k=in_range(optional(body, "top_k", int), "top_k", lambda k: k >= 0, "be 0 or more"),
        ),
    )


def _unit(value: float) -> bool:
    return 0.0 <= value <= 1.0


def _positive_unit(value: float) -> bool:
    return 0.0 < value <= 1.0


def _system(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    blocks = of_kind(value, list, "system")
    texts = []
    for i, block in enumerate(blocks):
        path = where("system", i)
        block = of_kind(block, dict, path)
        text = required(block, "text", str, path)
        if not text.startswith(HEADER_BLOCK_PREFIXES):
            texts.append(text)
    return "\n\n".join(texts)


def _turn(raw: Any, path: str) -> Turn:
    message = of_kind(raw, dict, path)
    role = required(message, "role", str, path)
    if role not in ("user", "assistant", "system"):
        raise bad_field(where(path, "role"), f"must be user, assistant or system, not {role!r}")
    content = message.get("content")
    content_path = where(path, "content")
    if isinstance(content, str):
        return Turn(cast(Role, role), content)
    blocks = of_kind(content, list, content_path)
    if role == "assistant":
        return Turn("assistant", _assistant(blocks, content_path))
    return Turn(cast(Role, role), "\n\n".join(_user_parts(blocks, content_path)))


def _assistant(blocks: list[Any], path: str) -> str:
    texts: list[str] = []
    calls: list[tuple[str, Any]] = []
    for i, raw in enumerate(blocks):
        block_path = where(path, i)
        block = of_kind(raw, dict, block_path)
        kind = required(block, "type", str, block_path)
        if kind == "text":
            texts.append(required(block, "text", str, block_path))
        elif kind == "tool_use":
            calls.append(
                (required(block, "name", str, block_path), required(block, "input", dict, block_path))
            )
        elif kind not in DROPPED_BLOCKS:
            texts.append(UNSEEN.format(kind=kind))
    return assistant_text("\n\n".join(texts), calls)


def _user_parts(blocks: list[Any], path: str) -> list[str]:
    parts: list[str] = []
    for i, raw in enumerate(blocks):
        block_path = where(path, i)
        block = of_kind(raw, dict, block_path)
        kind = required(block, "type", str, block_path)
        if kind == "text":
            parts.append(required(block, "text", str, block_path))
        elif kind == "tool_result":
            is_error = bool(optional(block, "is_error", bool))
            content = text_parts(block.get("content"), where(block_path, "content"), _unseen)
            parts.append(result_text(content, is_error=is_error))
        elif kind not in DROPPED_BLOCKS:
            parts.append(_unseen(block, kind))
    return parts


def _unseen(block: dict[str, Any], kind: str) -> str:
    """A document with a text source is its text; anything else a placeholder."""
    source = block.get("source")
    if kind == "document" and isinstance(source, dict) and source.get("type") == "text":
        return str(source.get("data", ""))
    return UNSEEN.format(kind=kind)


def _tools(raw: list[Any]) -> list[Tool]:
    tools = []
    for i, item in enumerate(raw):
        path = where("tools", i)
        tool = of_kind(item, dict, path)
        name = required(tool, "name", str, path)
        schema = optional(tool, "input_schema", dict, path)
        if schema is None:
            continue  # a server tool (web search …): nothing here can run it
        tools.append(
            Tool(name=name, description=optional(tool, "description", str, path) or "", schema=schema)
        )
    return tools


def _tool_choice(raw: Any, tools: tuple[Tool, ...]) -> ToolChoice:
    if raw is None:
        return ToolChoice()
    choice = of_kind(raw, dict, "tool_choice")
    mode = required(choice, "type", str, "tool_choice")
    if mode not in CHOICES:
        raise bad_field("tool_choice.type", f"must be one of {', '.join(CHOICES)}, not {mode!r}")
    name = optional(choice, "name", str, "tool_choice")
    if mode == "tool" and (name is None or name not in {tool.name for tool in tools}):
        raise bad_field("tool_choice.name", f"must name one of the request's tools, not {name!r}")
    parallel = not optional(choice, "disable_parallel_tool_use", bool, "tool_choice")
    return ToolChoice(mode=cast(ChoiceMode, mode), name=name, parallel=parallel)


def _strings(values: list[Any], path: str) -> list[str]:
    return [of_kind(value, str, where(path, i)) for i, value in enumerate(values)]

"""A reply in OpenAI's words: ``chat.completion.chunk`` events, or one ``chat.completion``.

The stop reasons map as OpenAI names them (``tool_use`` → ``tool_calls``, ``max_tokens`` →
``length``, the rest ``stop``); usage counts the prompt whole and the rows the pool resumed as
``prompt_tokens_details.cached_tokens``. Thinking goes out as ``reasoning_content``, the field
OpenAI-compatible servers use for it. A stream ends with ``data: [DONE]``.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

from caldrix.front.chat import Outcome, StopReason, ToolCall
from caldrix.front.errors import FrontError
from caldrix.front.reply import CallMade, ReplyEvent, ThinkingPiece
from caldrix.front.wire import Event

FINISH: Final[dict[StopReason, str]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}
#: The stream's last line.
DONE: Final = "[DONE]"


def error_body(error: FrontError) -> dict[str, Any]:
    return {"error": {"message": error.message, "type": error.error_type, "param": error.param, "code": None}}


def usage_of(outcome: Outcome) -> dict[str, Any]:
    usage = outcome.usage
    return {
        "prompt_tokens": usage.prompt,
        "completion_tokens": usage.output,
        "total_tokens": usage.prompt + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.resumed},
    }


def call_id(call: ToolCall) -> str:
    return f"call_{call.id}"


class OpenAIWriter:
    """Writes one reply; :meth:`events` for a stream, :meth:`completion` for the whole."""

    def __init__(self, message_id: str, model: str, *, include_usage: bool = False) -> None:
        self.id = "chatcmpl-" + message_id.removeprefix("msg_")
        self.model = model
        self.created = int(time.time())
        self.include_usage = include_usage
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCall] = []

    def opening(self) -> list[Event]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def events(self, event: ReplyEvent) -> list[Event]:
        if isinstance(event, CallMade):
            index = len(self._calls)
            self._calls.append(event.call)
            return [self._chunk({"tool_calls": [{"index": index, **_call(event.call)}]})]
        if isinstance(event, ThinkingPiece):
            self._reasoning.append(event.text)
            return [self._chunk({"reasoning_content": event.text})]
        self._text.append(event.text)
        return [self._chunk({"content": event.text})]

    def closing(self, outcome: Outcome) -> list[Event]:
        chunks = [self._chunk({}, finish=FINISH[outcome.stop_reason])]
        if self.include_usage:
            chunks.append(
                (None, {**self._shell("chat.completion.chunk"), "choices": [], "usage": usage_of(outcome)})
            )
        return chunks

    @staticmethod
    def failure(error: FrontError) -> list[Event]:
        return [(None, error_body(error))]

    def whole(self, outcome: Outcome) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) or None}
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._calls:
            message["tool_calls"] = [_call(call) for call in self._calls]
        choice = {"index": 0, "message": message, "finish_reason": FINISH[outcome.stop_reason]}
        return {**self._shell("chat.completion"), "choices": [choice], "usage": usage_of(outcome)}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> Event:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return (None, {**self._shell("chat.completion.chunk"), "choices": [choice]})

    def _shell(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}


def _call(call: ToolCall) -> dict[str, Any]:
    arguments = json.dumps(call.input, ensure_ascii=False)
    return {"id": call_id(call), "type": "function", "function": {"name": call.name, "arguments": arguments}}

"""A reply in Anthropic's words: the SSE events of a streamed message, or the message whole.

Streamed: ``message_start`` at once (the prompt's count as its input tokens so far), then for
each block ``content_block_start``, its deltas (``text_delta``, ``thinking_delta`` and an empty
``signature_delta``, or one ``input_json_delta`` holding a call's whole input) and
``content_block_stop``; then ``message_delta`` with the stop reason and the pool's usage, and
``message_stop``. An error after the stream started is an ``error`` event.
"""

from __future__ import annotations

import json
from typing import Any

from caldrix.front.chat import Outcome, ToolCall
from caldrix.front.errors import FrontError
from caldrix.front.reply import CallMade, ReplyEvent, ThinkingPiece
from caldrix.front.wire import Event


def error_body(error: FrontError) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error.error_type, "message": error.message}}


def usage_of(outcome: Outcome) -> dict[str, int]:
    """Anthropic's usage from the pool's figures: the rows computed are the input tokens, the
    rows resumed (prefix store or live rows) are read from the cache, nothing is counted as
    written to it, and the output is the tokens decoded."""
    return {
        "input_tokens": outcome.usage.computed,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": outcome.usage.resumed,
        "output_tokens": outcome.usage.output,
    }


def tool_use_id(call: ToolCall) -> str:
    return f"toolu_{call.id}"


class AnthropicWriter:
    """Writes one reply; :meth:`events` for a stream, :meth:`message` for the whole."""

    def __init__(self, message_id: str, model: str, prompt_tokens: int) -> None:
        self.message_id = message_id
        self.model = model
        self.prompt_tokens = prompt_tokens
        self._content: list[dict[str, Any]] = []
        self._open: int | None = None
        """The index of the block that is open (text or thinking, while its deltas come)."""

    # -- streamed -------------------------------------------------------------------------

    def opening(self) -> list[Event]:
        usage = {
            "input_tokens": self.prompt_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 0,
        }
        message = {**self._shell(), "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
        return [("message_start", {"type": "message_start", "message": message})]

    def events(self, event: ReplyEvent) -> list[Event]:
        if isinstance(event, CallMade):
            events = self._close()
            block = {"type": "tool_use", "id": tool_use_id(event.call), "name": event.call.name, "input": {}}
            index = self._start(block, events)
            self._content[index]["input"] = event.call.input
            partial = json.dumps(event.call.input, ensure_ascii=False)
            events.append(_delta(index, {"type": "input_json_delta", "partial_json": partial}))
            return events + self._close()
        kind = "thinking" if isinstance(event, ThinkingPiece) else "text"
        events = []
        if self._open is None or self._content[self._open]["type"] != kind:
            events += self._close()
            empty = {"type": "thinking", "thinking": "", "signature": ""} if kind == "thinking" else None
            self._start(empty or {"type": "text", "text": ""}, events)
        index = len(self._content) - 1
        self._content[index][kind] += event.text
        events.append(_delta(index, {"type": f"{kind}_delta", kind: event.text}))
        return events

    def closing(self, outcome: Outcome) -> list[Event]:
        delta = {"stop_reason": outcome.stop_reason, "stop_sequence": outcome.stop_sequence}
        return [
            *self._close(),
            ("message_delta", {"type": "message_delta", "delta": delta, "usage": usage_of(outcome)}),
            ("message_stop", {"type": "message_stop"}),
        ]

    @staticmethod
    def failure(error: FrontError) -> list[Event]:
        return [("error", error_body(error))]

    # -- whole ----------------------------------------------------------------------------

    def whole(self, outcome: Outcome) -> dict[str, Any]:
        """The non-streamed message, after every event went through :meth:`events`."""
        return {
            **self._shell(),
            "content": self._content,
            "stop_reason": outcome.stop_reason,
            "stop_sequence": outcome.stop_sequence,
            "usage": usage_of(outcome),
        }

    def _shell(self) -> dict[str, Any]:
        return {"id": self.message_id, "type": "message", "role": "assistant", "model": self.model}

    def _start(self, block: dict[str, Any], events: list[Event]) -> int:
        index = len(self._content)
        self._content.append(dict(block))
        self._open = index
        start = {"type": "content_block_start", "index": index, "content_block": block}
        events.append(("content_block_start", start))
        return index

    def _close(self) -> list[Event]:
        index, self._open = self._open, None
        if index is None:
            return []
        events: list[Event] = []
        if self._content[index]["type"] == "thinking":
            events.append(_delta(index, {"type": "signature_delta", "signature": ""}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        return events


def _delta(index: int, delta: dict[str, Any]) -> Event:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})

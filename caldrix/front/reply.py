"""Reading the model's reply as it streams: thinking, text, and tool calls.

The pool streams text; this splits it into what both dialects send: a leading ``<think>…</think>``
as thinking, then text, then each ``<tool_call>…</tool_call>`` as one whole call. Text is passed
on as it comes, except what could still turn out to be the start of a call tag and the
whitespace before it (the newline that precedes a call is the call's, not the text's). A call is
passed on only once its closing tag has come: its input is then whole JSON, so a client never
sees half an input, and a reply cut off inside a call (by a bound or a guard) drops that call
rather than sending input that does not parse.

A reply that opens with a call written without the tag (``{"name": "<a tool's name>", …}``,
bare or in a ```` ```json ```` fence, as small models write them and the grammar allows) is that
call. It is held until the reply ends; what follows the call, past its closing fence, is text.

Under the tool grammar every call parses; without it (``tool_choice`` none, or a member that
has no ``lark`` constraint) a tag whose body is not a call stays text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Final, Literal

from caldrix.front.chat import ToolCall
from caldrix.front.tool_text import CALL_CLOSE, CALL_OPEN, FENCE, UNTAGGED_FENCES, UNTAGGED_KEYS

THINK_OPEN: Final = "<think>"
THINK_CLOSE: Final = "</think>"


@dataclass(frozen=True)
class TextPiece:
    text: str


@dataclass(frozen=True)
class ThinkingPiece:
    text: str


@dataclass(frozen=True)
class CallMade:
    call: ToolCall


ReplyEvent = TextPiece | ThinkingPiece | CallMade
_Mode = Literal["start", "thinking", "text", "call", "untagged"]


class ReplyReader:
    """Feed it the reply's pieces in order, then :meth:`finish`; each returns the events that
    are settled. ``new_id`` names each call; with ``calls`` False (``tool_choice`` none) a call
    tag is text like any other. ``names`` are the tools' names: an untagged opening call must
    name one of them."""

    def __init__(self, new_id: Callable[[], str], *, calls: bool = True, names: Collection[str] = ()) -> None:
        self._new_id = new_id
        self._calls_allowed = calls
        self._names = names if calls else ()
        self._buffer = ""
        self._mode: _Mode = "start"
        self._text_started = False
        self._gap = ""
        """The whitespace before a call tag, given back if the tag turns out to be no call."""
        self.calls = 0
        self.cut_call = False
        """Whether the reply ended inside a call (the call was dropped)."""

    def feed(self, piece: str) -> list[ReplyEvent]:
        self._buffer += piece
        events: list[ReplyEvent] = []
        while self._step(events):
            pass
        return events

    def finish(self) -> list[ReplyEvent]:
        """The reply has ended: pass on what was held back."""
        events: list[ReplyEvent] = []
        while self._step(events):
            pass
        rest, self._buffer = self._buffer, ""
        if self._mode == "thinking" and rest:
            events.append(ThinkingPiece(rest))
        elif self._mode in ("start", "text"):
            self._text(events, rest.rstrip())
        elif self._mode == "call":
            self.cut_call = True
        elif self._mode == "untagged":
            self._untagged_call(events, rest)
        return events

    # -- one step: True when it consumed something and another may follow ------------------

    def _step(self, events: list[ReplyEvent]) -> bool:
        if self._mode == "start":
            return self._opening()
        if self._mode == "thinking":
            return self._thinking(events)
        if self._mode == "text":
            return self._text_until_call(events)
        if self._mode == "untagged":
            return False  # read whole when the reply ends
        return self._call(events)

    def _opening(self) -> bool:
        head = self._buffer.lstrip()
        if head.startswith(THINK_OPEN):
            self._buffer = head[len(THINK_OPEN) :]
            self._mode = "thinking"
            return True
        if head and THINK_OPEN.startswith(head):
            return False  # may still become <think>
        opens_call = untagged_call_opening(head, self._names)
        if opens_call is None:
            return False
        self._mode = "untagged" if opens_call else "text"
        return bool(self._buffer)

    def _thinking(self, events: list[ReplyEvent]) -> bool:
        end = self._buffer.find(THINK_CLOSE)
        if end >= 0:
            if end:
                events.append(ThinkingPiece(self._buffer[:end]))
            self._buffer = self._buffer[end + len(THINK_CLOSE) :].lstrip()
            self._mode = "text"
            return True
        ready = len(self._buffer) - _partial_tag(self._buffer, THINK_CLOSE)
        if ready > 0:
            events.append(ThinkingPiece(self._buffer[:ready]))
            self._buffer = self._buffer[ready:]
        return False

    def _text_until_call(self, events: list[ReplyEvent]) -> bool:
        if not self._calls_allowed:
            self._text(events, self._buffer)
            self._buffer = ""
            return False
        start = self._buffer.find(CALL_OPEN)
        if start >= 0:
            before = self._buffer[:start].rstrip()
            self._text(events, before)
            self._gap = self._buffer[len(before) : start]
            self._buffer = self._buffer[start + len(CALL_OPEN) :]
            self._mode = "call"
            return True
        held = _partial_tag(self._buffer, CALL_OPEN)
        ready = self._buffer[: len(self._buffer) - held]
        settled = ready.rstrip()
        self._text(events, settled)
        self._buffer = self._buffer[len(settled) :]
        return False

    def _call(self, events: list[ReplyEvent]) -> bool:
        end = self._buffer.find(CALL_CLOSE)
        if end < 0:
            return False
        body = self._buffer[:end]
        self._buffer = self._buffer[end + len(CALL_CLOSE) :]
        self._mode = "text"
        call = _parsed_call(body, self._new_id)
        if call is None:
            self._text(events, f"{self._gap}{CALL_OPEN}{body}{CALL_CLOSE}")
        else:
            self.calls += 1
            events.append(CallMade(call))
        return True

    def _untagged_call(self, events: list[ReplyEvent], reply: str) -> None:
        """The whole reply, which opens with an untagged call: the call, then any text after it.
        A call that does not parse whole was cut, and is dropped as a cut tagged call is."""
        body = reply.lstrip()
        fenced = body.startswith(FENCE)
        if fenced:
            body = body.split("\n", 1)[1].lstrip()
        try:
            value, end = json.JSONDecoder().raw_decode(body)
        except ValueError:
            self.cut_call = True
            return
        rest = body[end:].lstrip()
        if fenced and rest.startswith(FENCE):
            rest = rest[len(FENCE) :]
        call = _call_of(value, self._new_id)
        if call is None:
            self._text(events, reply.strip())
            return
        self.calls += 1
        events.append(CallMade(call))
        self._text(events, rest.strip())

    def _text(self, events: list[ReplyEvent], text: str) -> None:
        if not self._text_started:
            text = text.lstrip()
        if text:
            self._text_started = True
            events.append(TextPiece(text))


def _partial_tag(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that ``tag`` starts with (shorter than it)."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


def untagged_call_opening(head: str, names: Collection[str]) -> bool | None:
    """Whether a reply opening with ``head`` opens with an untagged call of one of ``names``
    (an optional fence, then ``{"name": "<name>"``); None while that is not known yet."""
    if not names:
        return False
    rest = head.lstrip()
    for opening in UNTAGGED_FENCES:
        if rest.startswith(opening):
            rest = rest[len(opening) :]
            break
        if opening.startswith(rest):
            return None
    for key in UNTAGGED_KEYS:
        rest = rest.lstrip()
        if not rest.startswith(key):
            return None if key.startswith(rest) else False
        rest = rest[len(key) :]
    rest = rest.lstrip()
    quoted = [json.dumps(name) for name in names]
    if any(rest.startswith(name) for name in quoted):
        return True
    return None if any(name.startswith(rest) for name in quoted) else False


def _parsed_call(body: str, new_id: Callable[[], str]) -> ToolCall | None:
    """``{"name": …, "arguments": {…}}`` as a call; None when it is not one."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return _call_of(value, new_id)


def _call_of(value: object, new_id: Callable[[], str]) -> ToolCall | None:
    """A decoded ``{"name": …, "arguments": {…}}`` as a call; None when it is not one.
    Arguments given as a JSON string (as some models write them) are read as the object they
    spell."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(id=new_id(), name=value["name"], input=arguments)

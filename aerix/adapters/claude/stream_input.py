"""``--input-format stream-json``: Claude Code's stdin protocol, as the Claude Agent SDK speaks it.

stdin holds one JSON object a line:

- ``{"type": "user", "message": {"role": "user", "content": …}}``: a prompt. ``content`` is a
  string or a list of blocks whose ``text`` blocks are joined; each prompt is one request of the
  session.
- ``{"type": "control_request", "request_id": ID, "request": {"subtype": …}}``: answered on
  stdout with ``{"type": "control_response", "response": {"subtype": "success", "request_id":
  ID, "response": {…}}}``, or ``"subtype": "error"`` with an ``error`` line for a request aerix
  cannot carry out (and for any subtype it does not know).
- ``keep_alive``, ``control_response`` and ``control_cancel_request`` lines need nothing.

A line that is not JSON, or a type no one knows, is one stderr note; the lines after it are still
read. The end of stdin ends the input: the prompts already read still run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from aerix.app.ports.stream import BadLine, ControlRequest, StreamItem, UserPrompt

#: Line types that ask nothing of aerix.
_QUIET_TYPES = frozenset({"keep_alive", "control_response", "control_cancel_request"})


def parse_line(number: int, line: str) -> StreamItem | None:
    """One stdin line as what it asks for; None for a blank line or one that needs nothing."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return BadLine(number, f"not JSON ({exc.msg}, column {exc.colno})")
    if not isinstance(value, dict):
        return BadLine(number, "not a JSON object")
    kind = value.get("type")
    if kind in _QUIET_TYPES:
        return None
    if kind == "control_request":
        request = value.get("request")
        request_id = value.get("request_id")
        if not isinstance(request, dict) or not isinstance(request_id, str):
            return BadLine(number, "a control_request needs a request_id and a request object")
        return ControlRequest(request_id, str(request.get("subtype", "")), request)
    if kind == "user":
        return _user_prompt(number, value)
    return BadLine(number, f"unknown line type {kind!r}; stream-json input takes user and control_request")


def _user_prompt(number: int, value: dict[str, Any]) -> StreamItem:
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return UserPrompt(content)
    if not isinstance(content, list):
        return BadLine(number, "a user line needs message.content, a string or a list of blocks")
    texts: list[str] = []
    left_out: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        else:
            left_out.append(str(block.get("type")) if isinstance(block, dict) else type(block).__name__)
    return UserPrompt("\n".join(texts), tuple(left_out))


def read_items(source: TextIO) -> Iterator[StreamItem]:
    """Every item of ``source``, line by line, until its end (blocking: run it off the loop).
    Lines are decoded one at a time, so a line that is not UTF-8 is one ``BadLine``."""
    binary = getattr(source, "buffer", None)
    lines: Iterator[str | bytes] = iter(binary if binary is not None else source)
    for number, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError:
                yield BadLine(number, "not UTF-8 text")
                continue
        item = parse_line(number, line)
        if item is not None:
            yield item

"""Reading a JSON body's fields, each refusal a 400 that names the field (``messages.2.content``).

Both dialects read their bodies with these: a field of the wrong type or out of range is one
line naming it; a field the front does not know is ignored, as Anthropic's and OpenAI's
clients expect of a server that is older than they are.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from caldrix.front.errors import FrontError, bad_field

T = TypeVar("T")

_KINDS: dict[type, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "an array",
    dict: "an object",
}


def where(path: str, key: str | int) -> str:
    return f"{path}.{key}" if path else str(key)


def of_kind(value: Any, kind: type[T], path: str) -> T:
    """``value`` if it is of ``kind`` (an integer counts as a number; a boolean is neither)."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # type: ignore[return-value]
    if isinstance(value, bool) and kind is not bool:
        raise bad_field(path, f"must be {_KINDS[kind]}, not {_name(value)}")
    if not isinstance(value, kind):
        raise bad_field(path, f"must be {_KINDS[kind]}, not {_name(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise bad_field(path, "must be a finite number")
    return value


def required(body: dict[str, Any], key: str, kind: type[T], path: str = "") -> T:
    if key not in body or body[key] is None:
        raise bad_field(where(path, key), "is required")
    return of_kind(body[key], kind, where(path, key))


def optional(body: dict[str, Any], key: str, kind: type[T], path: str = "") -> T | None:
    value = body.get(key)
    return None if value is None else of_kind(value, kind, where(path, key))


def in_range(value: T | None, path: str, check: Callable[[T], bool], words: str) -> T | None:
    """``value`` (None passes) if ``check`` holds, else 400 saying it ``words``."""
    if value is not None and not check(value):
        raise bad_field(path, f"must {words}, not {value!r}")
    return value


def parse_body(raw: bytes) -> Any:
    """A request body as JSON: UTF-8, JSON, nested no deeper than the parser goes, and text
    that is text (JSON can spell a lone surrogate, ``"\\ud800"``, which is not)."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FrontError(400, f"the body is not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise FrontError(
            400, f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise FrontError(400, "the body is not JSON this front reads: it nests too deep") from None
    surrogate = _surrogate_at(body)
    if surrogate is not None:
        raise bad_field(surrogate, "holds a lone surrogate (\\ud800 … \\udfff), which is not text")
    return body


def _surrogate_at(body: Any) -> str | None:
    """The path of the first key or text in ``body`` that holds a lone surrogate."""
    pending: list[tuple[str, Any]] = [("", body)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if not _is_text(value):
                return path or "the body"
        elif isinstance(value, dict):
            for key, item in value.items():
                if not _is_text(key):
                    return where(path, key.encode("utf-8", "backslashreplace").decode())
                pending.append((where(path, key), item))
        elif isinstance(value, list):
            pending.extend((where(path, i), item) for i, item in enumerate(value))
    return None


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_parts(content: Any, path: str, other: Callable[[dict[str, Any], str], str]) -> str:
    """Content given as a string, or as parts of which ``text`` ones are read and every other
    one is ``other(part, its type)``; the parts joined by a blank line."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for i, raw in enumerate(of_kind(content, list, path)):
        part_path = where(path, i)
        part = of_kind(raw, dict, part_path)
        kind = required(part, "type", str, part_path)
        parts.append(required(part, "text", str, part_path) if kind == "text" else other(part, kind))
    return "\n\n".join(parts)


def json_object(body: Any) -> dict[str, Any]:
    """The parsed body, which must be one JSON object."""
    if not isinstance(body, dict):
        raise FrontError(400, f"the body must be a JSON object, not {_name(body)}")
    return body


def _name(value: Any) -> str:
    if value is None:
        return "null"
    for kind, words in _KINDS.items():
        if isinstance(value, kind) and not (isinstance(value, bool) and kind is int):
            return words
    return type(value).__name__

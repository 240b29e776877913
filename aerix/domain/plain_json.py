"""Plain data as compact JSON text, fast (the transcript's lines)."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import PydanticSerializationError, to_json


def plain_json(value: Any) -> str:
    """Float-free plain data (dicts with str keys, lists, str, int, bool, None) as compact JSON,
    non-ASCII kept: the text ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``
    writes, from pydantic-core's encoder at about a third of the cost. Floats are the caller's
    to keep out: the two write some differently (``1e-07`` against ``1e-7``). Text pydantic-core
    refuses (a lone surrogate) goes through ``json.dumps``."""
    try:
        return to_json(value).decode()
    except PydanticSerializationError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

"""The front matter of skill and agent files: a ``---`` block of simple YAML at the top.

Only what these files use is understood (there is no YAML library among our dependencies):
``key: value`` scalars (quoted or not, integers, true/false), inline lists ``[a, b]``, block lists
(``- item`` lines), and ``|`` / ``>`` block text. Anything else is kept as its raw string.
"""

from __future__ import annotations

import re
from typing import Any

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")


class FrontMatterError(ValueError):
    """The front matter block is not closed or a line is not ``key: value``."""


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(fields, body). A file without a ``---`` first line has no fields."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    try:
        end = next(index for index, line in enumerate(lines[1:], start=1) if line.strip() == "---")
    except StopIteration:
        raise FrontMatterError("the front matter's closing '---' is missing") from None
    body = "\n".join(lines[end + 1 :]).strip("\n")
    return _parse_block(lines[1:end]), body


def _parse_block(lines: list[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY.match(line)
        if match is None:
            raise FrontMatterError(f"expected 'key: value', found {line.strip()!r}")
        key, raw = match.group(1), match.group(2).strip()
        nested: list[str] = []
        while index < len(lines) and (lines[index].startswith((" ", "\t")) or not lines[index].strip()):
            nested.append(lines[index])
            index += 1
        fields[key] = _value(raw, nested)
    return fields


def _value(raw: str, nested: list[str]) -> Any:
    if raw in ("|", ">", "|-", ">-"):
        texts = [line.strip() for line in nested]
        joined = "\n".join(texts) if raw.startswith("|") else " ".join(t for t in texts if t)
        return joined.strip()
    if not raw and any(line.strip().startswith("- ") for line in nested):
        return [_scalar(line.strip()[2:]) for line in nested if line.strip().startswith("- ")]
    if raw.startswith("[") and raw.endswith("]"):
        return [_scalar(item) for item in raw[1:-1].split(",") if item.strip()]
    if nested:  # a plain scalar folded over several lines
        raw = " ".join([raw, *(line.strip() for line in nested if line.strip())]).strip()
    return _scalar(raw)


def _scalar(raw: str) -> Any:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    if re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    if raw.lower() in ("null", "~", ""):
        return None
    return raw

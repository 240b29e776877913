"""What a Claude Code transcript record holds, as the importer reads it: its content blocks (a
string is one text block), their text, and a response's usage in aerix's terms."""

from __future__ import annotations

import json
from typing import Any

from aerix.adapters.claude.claude_read import ClaudeLine

_PROMPT_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def content_blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return []


def flatten_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content_blocks(content):
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            parts.append(f"[{block.get('type', 'block')}]")
    return "\n".join(parts) if parts else json.dumps(content, ensure_ascii=False)


def response_usages(lines: list[ClaudeLine]) -> dict[str, dict[str, Any]]:
    """Each response's usage, by message.id: from its line with the most output tokens (the
    lines of a response repeat its usage, the output count growing as it streams)."""
    usages: dict[str, dict[str, Any]] = {}
    for line in lines:
        message = (line.record or {}).get("message")
        if not isinstance(message, dict) or not isinstance(message.get("id"), str):
            continue
        usage = message.get("usage")
        if isinstance(usage, dict):
            best = usages.get(message["id"])
            if best is None or _count(usage, "output_tokens") >= _count(best, "output_tokens"):
                usages[message["id"]] = usage
    return usages


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


def to_usage(usage: Any, model: str | None) -> dict[str, Any] | None:
    """Claude's usage as aerix's: all prompt tokens, the cache reads as the reused prefix."""
    if not isinstance(usage, dict):
        return None
    return {
        "prompt_tokens": sum(_count(usage, key) for key in _PROMPT_USAGE_KEYS),
        "completion_tokens": _count(usage, "output_tokens"),
        "recomputed_from": _count(usage, "cache_read_input_tokens"),
        "cache_creation_tokens": _count(usage, "cache_creation_input_tokens"),
        "member": model,
    }

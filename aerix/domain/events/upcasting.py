"""Reading older lines: ``upcast()`` rewrites a line written with an older ``v``, one version at
a time, by the functions in ``UPCASTERS``, so the rest of aerix only ever sees the current
shape."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aerix.domain.events.base import SCHEMA_VERSION


def _v1_to_v2(line: dict[str, Any]) -> dict[str, Any]:
    """Draft v1 wrote ``time`` as Unix seconds and usage as ``prompt``/``completion``."""
    if isinstance(line.get("time"), int | float):
        line["time"] = datetime.fromtimestamp(line["time"], UTC).isoformat()
    usage = line.get("usage")
    if isinstance(usage, dict):
        for old, new in (("prompt", "prompt_tokens"), ("completion", "completion_tokens")):
            if old in usage:
                usage[new] = usage.pop(old)
    line["v"] = 2
    return line


UPCASTERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}
"""``UPCASTERS[n]`` turns a version-n line into a version n+1 line (a dict, changed in place)."""


class UnknownSchemaVersion(ValueError):
    """A line's ``v`` is newer than SCHEMA_VERSION (or not a version at all)."""

    def __init__(self, version: object) -> None:
        super().__init__(f"schema version {version!r}")
        self.version = version


def upcast(line: dict[str, Any]) -> dict[str, Any]:
    """Bring a decoded line to SCHEMA_VERSION (a line without ``v`` is version 1)."""
    version = line.get("v", 1)
    if version == SCHEMA_VERSION:
        return line
    if not isinstance(version, int) or version > SCHEMA_VERSION or version < 1:
        raise UnknownSchemaVersion(version)
    while version < SCHEMA_VERSION:
        line = UPCASTERS[version](line)
        version += 1
    return line

"""The wall clock, read here only: the domain never reads it, the use cases are handed it."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)

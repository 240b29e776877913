"""What every session event shares: the schema version written, the session id's pattern, the
small vocabularies (agent kinds, routes, outcomes, verdicts) and ``EventBase``, the fields every
line carries."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 2
"""The version this aerix writes. History: 1 was the development draft (see UPCASTERS)."""

SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
"""A session id is a file name: letters, digits, ``.``, ``_`` and ``-``."""

AgentKind = Literal["root", "implementer", "verifier"]
Route = Literal["answer", "edit", "investigate", "plan"]
#: The routes by name, for settings that name them.
ROUTE_NAMES: tuple[str, ...] = get_args(Route)
AgentOutcome = Literal["done", "failed", "killed", "budget"]
Verdict = Literal["pass", "fail"]


class StrictModel(BaseModel):
    """Frozen, and no field beyond those declared: every event and every part of one."""

    # Each model builds its validator when first used, not at import: a request records a
    # handful of the event types and reads none of its log back (``union.event_adapter``).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class EventBase(StrictModel):
    """Fields every line carries, in this order."""

    type: str
    seq: int = Field(ge=1, description="Position in the session, from 1, without gaps.")
    time: datetime = Field(description="When the event happened (ISO 8601 with offset).")
    v: int = Field(default=SCHEMA_VERSION, description="Schema version the line was written with.")

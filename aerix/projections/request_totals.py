"""A request's running totals, folded from its events as they are recorded: the pool's usage
(tokens, generations, reused tokens, time), the paths its write and edit calls and its agents
touched, and the root's pieces with their outcomes.

Fed live by the session's writer from the request's first event on; fed a whole log, it totals
every request in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from aerix.domain import events as ev
from aerix.domain.segments import ROOT_AGENT
from aerix.domain.usage import RequestUsage
from aerix.projections.base import Handlers, Projection


@dataclass
class RequestTotals(Projection):
    usage: RequestUsage = field(default_factory=RequestUsage)
    touched: list[str] = field(default_factory=list)
    #: The root's ``agent`` calls, ``(piece id, outcome)`` each, in order; not a call that
    #: repeated another and was not run (its twin's piece is the one that ran).
    pieces: list[tuple[str, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    def _message(self, record: ev.Message) -> None:
        is_piece = record.tool == "agent" and record.agent == ROOT_AGENT and record.unchanged_since is None
        if record.role == "tool" and is_piece:
            self.pieces.append((f"{record.agent}.{record.call}", record.outcome))
        if record.usage is not None:
            self.usage = self.usage.plus(record.usage)
        for call in record.calls:
            path = call.input.get("path")
            if call.tool in ("write", "edit") and isinstance(path, str):
                self.touched.append(path)

    def _agent_end(self, record: ev.AgentEnd) -> None:
        self.touched.extend(record.files_touched)

    HANDLERS: ClassVar[Handlers] = {ev.Message: _message, ev.AgentEnd: _agent_end}

"""One session's entry of ``index.json``, folded from its log.

The index file is nothing but these entries; rebuilding it means folding every log again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from aerix.domain import events as ev
from aerix.projections.base import Handlers, Projection

TITLE_MAX_CHARS = 80
"""A session's title is the first line of its first prompt, cut to this many characters."""


def title_of(prompt: str) -> str:
    first = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    return first if len(first) <= TITLE_MAX_CHARS else first[: TITLE_MAX_CHARS - 1] + "…"


@dataclass
class IndexEntry(Projection):
    """What ``aerix sessions list`` shows of one session."""

    id: str = ""
    project: str = ""
    created: datetime | None = None
    updated: datetime | None = None
    title: str = ""
    model: str = ""
    profile: str | None = None
    tags: list[str] = field(default_factory=list)
    state: str = "empty"
    requests: int = 0
    events: int = 0
    agents: int = 0
    turns: int = 0
    tool_calls: int = 0
    imported: bool = False
    #: The session this one was copied from (``--fork-session``), if it is a fork.
    forked_from: str | None = None

    def __post_init__(self) -> None:
        super().__init__()

    @property
    def listed_title(self) -> str:
        """The title as a list shows it: a fork (``--fork-session``) names its original first,
        since it has the original's first prompt and so its title."""
        shown = self.title or "(no prompt)"
        return f"fork of {self.forked_from[:8]}: {shown}" if self.forked_from else shown

    def _any(self, event: ev.EventBase) -> None:
        self.events += 1
        self.updated = event.time

    def _start(self, event: ev.SessionStart) -> None:
        self._any(event)
        if self.requests == 0:
            self.id, self.project, self.model = event.session, event.project, event.model
            self.created, self.profile = event.time, event.profile
            self.title = title_of(event.prompt)
            self.imported = event.imported_from is not None
        self.tags = sorted(set(self.tags) | set(event.tags))
        self.forked_from = self.forked_from or event.resumed_from
        self.requests += 1
        self.state = "imported" if self.imported else "open"

    def _spawn(self, event: ev.AgentSpawn) -> None:
        self._any(event)
        self.agents += 1

    def _message(self, event: ev.Message) -> None:
        self.events += 1  # _any, inlined: most events are messages and segments
        self.updated = event.time
        if event.role == "assistant" and event.parse_error is None:
            self.turns += 1
            self.tool_calls += len(event.calls)

    def _segment(self, event: ev.Segment) -> None:
        self.events += 1
        self.updated = event.time
        if not self.title and event.kind == "prompt":
            self.title = title_of(event.text)

    def _end(self, event: ev.SessionEnd) -> None:
        self._any(event)
        self.state = event.outcome

    # Every event counts and moves ``updated``; these also fold their own facts.
    HANDLERS: ClassVar[Handlers] = {
        **dict.fromkeys(ev.EVENT_TYPES, _any),
        ev.SessionStart: _start,
        ev.AgentSpawn: _spawn,
        ev.Message: _message,
        ev.Segment: _segment,
        ev.SessionEnd: _end,
    }

    def to_json(self) -> dict[str, Any]:
        """The entry as stored in index.json; ``seq`` is the position, so it can be continued."""
        data = asdict(self)
        for name in ("created", "updated"):
            data[name] = data[name].isoformat() if data[name] is not None else None
        return {**data, "seq": self.position}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexEntry:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        for name in ("created", "updated"):
            if isinstance(known.get(name), str):
                known[name] = datetime.fromisoformat(known[name])
        entry = cls(**known)
        entry.position = int(data.get("seq", 0))
        return entry

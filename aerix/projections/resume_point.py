"""What resuming a session needs, folded from its events: the root's context and plan, the first
``session.start``, how many requests it has, and the profile commit it read last.

``--resume`` and ``--continue`` fold a log read from disk; a session held open across requests
keeps one as a view of its writer, so the next request starts from it without reading the log
back. Both are this one fold, so both give the same ``ResumeState``. Subagents are not resumed:
only the root's events (and those of no agent) reach its contexts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import ClassVar

from aerix.domain import events as ev
from aerix.domain.segments import ROOT_AGENT
from aerix.projections.base import Handlers, Projection
from aerix.projections.contexts import AgentContext, Contexts


@dataclass(frozen=True)
class ResumeState:
    """What ``--resume``/``--continue`` need: the root's context and plan, the first start, and
    the profile commit the session read last (its latest request's that recorded one)."""

    session: str
    project: str
    start: ev.SessionStart
    requests: int
    root: AgentContext
    plan: str | None
    last_seq: int
    profile: str | None = None
    profile_commit: str | None = None


class ResumePoint(Projection):
    """The fold behind ``ResumeState``; its position is the last event it took."""

    def __init__(self) -> None:
        super().__init__()
        self.contexts = Contexts()
        self.first: ev.SessionStart | None = None
        self.requests = 0
        self.read: ev.SessionStart | None = None  # the last start that recorded a profile commit

    def feed(self, events: Iterable[ev.EventBase]) -> None:
        """A log's events, in bulk (a resume reads the whole log): the root's go to its contexts
        in one pass."""
        new = [event for event in events if event.seq > self.position]
        self.contexts.feed(event for event in new if ev.agent_of(event) in (None, ROOT_AGENT))
        super().feed(new)

    def take(self, event: ev.EventBase) -> None:
        if event.seq > self.position and ev.agent_of(event) in (None, ROOT_AGENT):
            self.contexts.take(event)
        super().take(event)

    def _start(self, record: ev.SessionStart) -> None:
        self.first = self.first or record
        self.requests += 1
        if record.profile_commit is not None:
            self.read = record

    HANDLERS: ClassVar[Handlers] = {ev.SessionStart: _start}

    def state(self, session: str, project: str) -> ResumeState | None:
        """Where the session stands now (None before its first ``session.start``)."""
        if self.first is None:
            return None
        root = self.contexts.agents.get(ROOT_AGENT, AgentContext(ROOT_AGENT, kind="root"))
        root = replace(root, segments=dict(root.segments))  # the fold goes on; this state does not
        read = self.read
        return ResumeState(
            session,
            project,
            self.first,
            self.requests,
            root,
            root.plan,
            self.position,
            read.profile if read is not None else None,
            read.profile_commit if read is not None else None,
        )

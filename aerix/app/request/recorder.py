"""The request's recorder: the session writer, with the request's views attached to it (its
running totals, the projections the observer shows, the observer itself) from the request's
``session.start`` on."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aerix.app.ports.request import RequestObserver, RequestPiece
from aerix.app.ports.sessions import E
from aerix.app.sessions.transcript import TranscriptFollower
from aerix.app.sessions.writer import SessionWriter
from aerix.domain import events as ev
from aerix.domain.usage import RequestUsage
from aerix.projections.request_totals import RequestTotals


class RequestRecorder:
    """Records the request's events through its session writer (an ``EventRecorder``), which
    feeds each one to the session's views in their declared order: the request's totals (usage,
    the paths its write/edit calls touched, the root's pieces with their outcomes), the
    projections the observer shows (its status figures, its stream-json fold) and then the
    observer, each attached by ``follow``. It is the request's spool too (the writer's)."""

    def __init__(
        self, writer: SessionWriter, observer: RequestObserver, transcript: TranscriptFollower | None = None
    ) -> None:
        """``transcript``: the session's ``claude transcript`` view (attached by the session,
        which holds it across requests); a problem writing it is said to this request's observer."""
        self.writer = writer
        self.observer = observer
        self.totals = RequestTotals()
        self._transcript = transcript
        self._attached: list[str] = []

    def follow(self, start: ev.SessionStart) -> None:
        """Attach the request's views, each brought up to the log from ``start`` (recorded as
        the request opened its session) on."""
        if self._transcript is not None:
            self._transcript.say = self.observer.note
        views = [
            ("request totals", self.totals),
            *self.observer.projections().items(),
            ("output", _Observed(self.observer)),
        ]
        for name, view in views:
            self.writer.attach(name, view, since=start.seq - 1)
            self._attached.append(name)

    def close(self) -> None:
        """The request is over: the session's next request (a held session's) has its own."""
        for name in self._attached:
            self.writer.detach(name)
        self._attached.clear()
        if self._transcript is not None:
            self._transcript.say = None

    @property
    def transcript(self) -> TranscriptFollower | None:
        """The Claude Code transcript kept up to the log (for hooks); None once it could not be
        written."""
        transcript = self._transcript
        return transcript if transcript is not None and transcript.problem is None else None

    def record(self, event_cls: type[E], **fields: Any) -> E:
        return self.writer.record(event_cls, **fields)

    def sync(self) -> None:
        self.writer.sync()

    def write_spool(self, name: str, text: str) -> Path:
        return self.writer.write_spool(name, text)

    @property
    def touched(self) -> list[str]:
        return self.totals.touched

    @property
    def pieces(self) -> list[RequestPiece]:
        return [RequestPiece(piece, outcome) for piece, outcome in self.totals.pieces]

    @property
    def usage(self) -> RequestUsage:
        return self.totals.usage


class _Observed:
    """The observer as the last of the request's views: told of each event after the views
    it reads have taken it."""

    def __init__(self, observer: RequestObserver) -> None:
        self.observer = observer
        self.position = 0

    def feed(self, events: Iterable[ev.EventBase]) -> None:
        for event in events:
            self.take(event)

    def take(self, event: ev.EventBase) -> None:
        if event.seq > self.position:
            self.observer.event(event)
            self.position = event.seq

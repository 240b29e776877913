"""The request's recorder: the session writer, with the request's subscribers on it (the
request's running totals, the projections the observer shows, the observer) and the Claude Code
transcript brought up to the log at each commit point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aerix.app.ports.request import RequestObserver, RequestPiece, RequestUsage
from aerix.app.ports.sessions import E
from aerix.app.sessions.transcript import TranscriptFollower
from aerix.app.sessions.writer import SessionWriter
from aerix.domain import events as ev
from aerix.projections.request_totals import RequestTotals


class RequestRecorder:
    """Records the request's events through its session writer (an ``EventRecorder``), which
    publishes each one, in order, to the session's own subscribers (the index entry, the resume
    point, the transcript follower), then to the transcript's catch-up, the request's totals
    (usage, the paths its write/edit calls touched, the root's pieces with their outcomes), the
    projections the observer shows (its status figures, its stream-json fold) and then the
    observer. It is the request's spool too (the writer's)."""

    def __init__(
        self, writer: SessionWriter, observer: RequestObserver, transcript: TranscriptFollower | None = None
    ) -> None:
        """``transcript``: the session's follower (subscribed to the writer by the session, which
        holds it across requests); this recorder brings it up to the log at each commit point."""
        self.writer = writer
        self.observer = observer
        self.totals = RequestTotals()
        #: Keeps the Claude Code transcript up to the log, at each commit point and for hooks;
        #: None once it could not be written.
        self.transcript = transcript
        self._views = [view.take for view in observer.projections()]
        self._subscribed = [self._to_transcript, self.totals.take, *self._views, observer.event]
        for subscriber in self._subscribed:
            writer.subscribe(subscriber)

    def close(self) -> None:
        """The request is over: the session's next request (a held session's) has its own."""
        for subscriber in self._subscribed:
            self.writer.unsubscribe(subscriber)

    def started(self, start: ev.SessionStart) -> None:
        """Hand the request's ``session.start`` (recorded as the session opened, before this
        recorder subscribed) to the observer's projections, then to the observer."""
        for take in self._views:
            take(start)
        self.observer.event(start)

    def record(self, event_cls: type[E], **fields: Any) -> E:
        return self.writer.record(event_cls, **fields)

    def sync(self) -> None:
        self.writer.sync()

    def _to_transcript(self, record: ev.EventBase) -> None:
        if self.transcript is not None and isinstance(record, ev.COMMIT_EVENTS):
            self._follow(self.transcript)

    def _follow(self, transcript: TranscriptFollower) -> None:
        """The transcript is a projection: one that cannot be written is one note, and the
        request goes on without it (``aerix sessions rebuild`` writes it again)."""
        try:
            transcript.follow()
        except OSError as exc:
            self.transcript = None
            note = f"the Claude Code transcript could not be written ({exc}); the session log is kept"
            self.observer.note(note)

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

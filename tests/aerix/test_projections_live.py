"""The session writer feeds each event to its views as it records it; every projection fed live
that way (attached when the session starts, or late, catching up from its position) equals the
same projection rebuilt from the log on disk, and the index entry the writer stores equals the
one ``aerix sessions rebuild`` stores."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.queries import rebuild
from aerix.app.sessions.writer import reopen_session, start_session
from aerix.domain import events as ev
from aerix.projections.base import Projection
from aerix.projections.claude_stream import ClaudeStream
from aerix.projections.contexts import Contexts
from aerix.projections.corpus import SessionEvidence
from aerix.projections.index import IndexEntry
from aerix.projections.request_totals import RequestTotals
from aerix.projections.resume_point import ResumePoint
from aerix.projections.status import StatusFigures
from aerix.projections.transcript import ClaudeTranscript
from tests.aerix.session_streams import event_streams

PROJECTIONS: list[Callable[[], Projection]] = [
    Contexts,
    ClaudeTranscript,
    IndexEntry,
    StatusFigures,
    RequestTotals,
    SessionEvidence,
    ClaudeStream,
    ResumePoint,  # what a session held across requests resumes from, instead of the log
]
STAMPED = {"type", "seq", "time", "v"}  # what the writer fills in itself


class Each(Projection):
    """Several projections as one view of the writer (its ``output``, as an observer would be)."""

    def __init__(self, projections: list[Projection]) -> None:
        super().__init__()
        self.projections = projections

    def feed(self, events: Iterable[ev.EventBase]) -> None:
        for event in events:
            self.take(event)

    def take(self, event: ev.EventBase) -> None:
        if event.seq > self.position:
            for projection in self.projections:
                projection.take(event)
            self.position = event.seq


@settings(max_examples=30, deadline=None)
@given(events=event_streams(), cut=st.integers(1, 40))
def test_each_projection_fed_live_equals_it_rebuilt_from_the_file(
    events: list[ev.EventBase], cut: int
) -> None:
    """Written by one writer up to ``cut``, then by a second that reopens the session."""
    start = events[0]
    assert isinstance(start, ev.SessionStart)
    times = iter([event.time for event in events])
    with tempfile.TemporaryDirectory() as folder:
        files = SessionFiles(Path(folder))
        fields = start.model_dump(exclude=STAMPED)
        first = start_session(files, lambda: next(times), sync="release", **fields)
        live = [make() for make in PROJECTIONS]
        fed = Each(live)
        first.attach("output", fed)  # after the writer recorded the start: it catches up
        for event in events[1:cut]:
            first.record(type(event), **event.model_dump(exclude=STAMPED))
        first.close()
        writer = reopen_session(files, lambda: next(times), start.session, sync="release")
        writer.attach("output", fed)  # from its position: nothing twice
        late = [make() for make in PROJECTIONS]
        writer.attach("claude stream", Each(late))  # from the start of the log it was reopened on
        for event in events[cut:]:
            writer.record(type(event), **event.model_dump(exclude=STAMPED))
        writer.close()

        ref = files.catalog.find(start.session)
        on_disk = files.log.read(ref)
        assert on_disk == events
        stored_entry = files.views.load_index(ref.project)[ref.id]
        for live_projection, late_projection, make in zip(live, late, PROJECTIONS, strict=True):
            rebuilt = make()
            rebuilt.feed(on_disk)
            assert vars(live_projection) == vars(rebuilt), make.__name__
            assert vars(late_projection) == vars(rebuilt), make.__name__
        assert vars(writer.index) == vars(live[PROJECTIONS.index(IndexEntry)])

        (report,) = rebuild(files, start.session)
        assert not report.problems
        assert files.views.load_index(ref.project)[ref.id] == stored_entry
        files.log.close()


@settings(max_examples=10, deadline=None)
@given(events=event_streams())
def test_text_that_cannot_be_utf8_reaches_each_projection_as_it_is_written(
    events: list[ev.EventBase],
) -> None:
    """A lone surrogate (a folder whose name is not UTF-8, as Python hands it over) is written
    with U+FFFD in its place; the writer publishes the event as written, so every projection fed
    live still equals it rebuilt from the file."""
    start = events[0]
    assert isinstance(start, ev.SessionStart)
    times = iter([event.time for event in events])
    with tempfile.TemporaryDirectory() as folder:
        files = SessionFiles(Path(folder))
        fields = start.model_dump(exclude=STAMPED) | {"cwd": "/work/bad\udcffname"}
        writer = start_session(files, lambda: next(times), sync="release", **fields)
        [opening] = writer.opening
        assert isinstance(opening, ev.SessionStart) and opening.cwd == "/work/bad\ufffdname"
        live = [make() for make in PROJECTIONS]
        writer.attach("output", Each(live))
        for event in events[1:]:
            writer.record(type(event), **event.model_dump(exclude=STAMPED))
        writer.close()
        on_disk = files.log.read(files.catalog.find(start.session))
        for live_projection, make in zip(live, PROJECTIONS, strict=True):
            rebuilt = make()
            rebuilt.feed(on_disk)
            assert vars(live_projection) == vars(rebuilt), make.__name__
        files.log.close()

"""The views of a session are one declared list (``writer.VIEWS``): the writer feeds each event
to them in that order whatever order they were attached in, refuses a view under any other
name, and a view attached late catches up from the log by its own position."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aerix.adapters.claude.output import HeadlessOutput
from aerix.adapters.clock import utc_now
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.adapters.terminal.stderr_status import StderrStatus
from aerix.app.sessions.writer import VIEWS, SessionWriter, reopen_session, start_session
from aerix.domain import events as ev
from aerix.projections.claude_stream import ClaudeStream
from aerix.projections.contexts import Contexts, contexts_at
from aerix.projections.status import StatusFigures
from tests.aerix.session_streams import event_streams

STAMPED = {"type", "seq", "time", "v"}  # what the writer fills in itself

START = {"session": "s1", "project": "p", "cwd": "/w", "model": "m", "prompt": "hi", "aerix_version": "0"}


class Heard:
    """A view that writes down, in one shared list, each event it takes under its name."""

    def __init__(self, name: str, heard: list[tuple[str, int]]) -> None:
        self.name, self.heard, self.position = name, heard, 0

    def feed(self, events: Iterable[ev.EventBase]) -> None:
        for event in events:
            self.take(event)

    def take(self, event: ev.EventBase) -> None:
        if event.seq > self.position:
            self.heard.append((self.name, event.seq))
            self.position = event.seq


def _message(writer: SessionWriter, turn: int) -> None:
    writer.record(ev.Message, agent="a1", role="assistant", turn=turn, text="{}", final="ok")


@pytest.fixture
def files(tmp_path: Path) -> SessionFiles:
    return SessionFiles(tmp_path / "sessions")


def test_a_view_outside_the_declared_list_is_refused(files: SessionFiles) -> None:
    writer = start_session(files, utc_now, **START)
    listed = "index, resume point, contexts, claude transcript, status figures, request totals, "
    with pytest.raises(ValueError, match=f"'tuning corpus' is not a view of a session; they are: {listed}"):
        writer.attach("tuning corpus", Heard("tuning corpus", []))  # folded from logs by aerix tune
    writer.attach("contexts", Contexts())
    with pytest.raises(ValueError, match="has its contexts view already"):
        writer.attach("contexts", Contexts())
    writer.attach("output", Heard("output", []))
    with pytest.raises(ValueError, match="has its output view already"):
        writer.attach("output", Heard("output", []))
    assert not hasattr(writer, "subscribe")  # no way around the list
    writer.close()


def test_every_view_takes_each_event_in_the_declared_order(files: SessionFiles) -> None:
    writer = start_session(files, utc_now, **START)
    heard: list[tuple[str, int]] = []
    late = [name for name in reversed(VIEWS) if name != "index"]
    for name in late:  # attached last view first, after the start was recorded
        writer.attach(name, Heard(name, heard))
    assert heard == [(name, 1) for name in late]  # each caught up with the start as it came
    heard.clear()
    _message(writer, 1)
    assert heard == [(name, 2) for name in VIEWS if name != "index"]
    writer.detach("request totals")
    _message(writer, 2)
    assert [name for name, seq in heard if seq == 3] == [
        n for n in VIEWS if n not in ("index", "request totals")
    ]
    writer.close()


def test_a_late_view_catches_up_from_its_position_and_a_request_s_from_its_start(files: SessionFiles) -> None:
    writer = start_session(files, utc_now, **START)
    _message(writer, 1)
    writer.close()
    reopened = reopen_session(files, utc_now, "s1")
    heard: list[tuple[str, int]] = []
    whole = Heard("resume point", heard)
    reopened.attach("resume point", whole)  # the log it read: from the first event on
    assert heard == [("resume point", 1), ("resume point", 2)]
    start = reopened.record(ev.SessionStart, **{**START, "request": 2, "resumed": True})
    request = Heard("output", heard)
    reopened.attach("output", request, since=start.seq - 1)  # this request's events only
    assert heard[-2:] == [("resume point", 3), ("output", 3)]
    kept = Heard("claude stream", heard)
    kept.position = 2  # a view that took the log up to seq 2 already: nothing twice
    reopened.attach("claude stream", kept)
    assert heard[-1] == ("claude stream", 3)
    reopened.close()


def test_the_views_an_output_shows_are_named_in_the_list() -> None:
    status = StderrStatus(io.StringIO(), StatusFigures())
    output = HeadlessOutput("stream-json", io.StringIO(), io.StringIO(), ClaudeStream(), status)
    assert set(output.projections()) == {"claude stream", "status figures"} <= set(VIEWS)


@settings(max_examples=30, deadline=None)
@given(events=event_streams(), cut=st.integers(1, 40))
def test_a_contexts_view_attached_late_catches_up_and_equals_one_attached_from_the_start(
    events: list[ev.EventBase], cut: int
) -> None:
    """The same events written to two sessions: one's ``contexts`` view attached as it opened,
    the other's after ``cut`` events (agents whose first event comes later are made as it
    arrives). Both are every agent's context rebuilt from the log."""
    start = events[0]
    assert isinstance(start, ev.SessionStart)
    fields = start.model_dump(exclude=STAMPED)
    with tempfile.TemporaryDirectory() as early_folder, tempfile.TemporaryDirectory() as late_folder:
        early_files, late_files = SessionFiles(Path(early_folder)), SessionFiles(Path(late_folder))
        early_times, late_times = iter([e.time for e in events]), iter([e.time for e in events])
        early_writer = start_session(early_files, lambda: next(early_times), sync="release", **fields)
        late_writer = start_session(late_files, lambda: next(late_times), sync="release", **fields)
        early, late = Contexts(), Contexts()
        early_writer.attach("contexts", early)

        def record(some: list[ev.EventBase]) -> None:
            for event in some:
                for writer in (early_writer, late_writer):
                    writer.record(type(event), **event.model_dump(exclude=STAMPED))

        record(events[1:cut])
        late_writer.attach("contexts", late)  # catches up with the events before the cut
        assert late == early
        record(events[cut:])
        early_writer.close()
        late_writer.close()
        on_disk = late_files.log.read(late_files.catalog.find(start.session))
        assert on_disk == events
        assert late == early == contexts_at(on_disk)
        assert late.position == events[-1].seq
        early_files.log.close()
        late_files.log.close()

"""Every projection folded incrementally (in pieces, with re-deliveries) equals one pass."""

from __future__ import annotations

import copy
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from aerix.domain import events as ev
from aerix.projections.base import Projection
from aerix.projections.contexts import Contexts
from aerix.projections.corpus import SessionEvidence
from aerix.projections.index import IndexEntry
from aerix.projections.status import StatusFigures
from aerix.projections.transcript import ClaudeTranscript
from tests.aerix.session_streams import event_streams

PROJECTIONS: list[Callable[[], Projection]] = [
    Contexts,
    ClaudeTranscript,
    StatusFigures,
    SessionEvidence,
    IndexEntry,
]


def _rebuild(make: Callable[[], Projection], events: list[ev.EventBase]) -> Projection:
    projection = make()
    projection.feed(events)
    return projection


@settings(max_examples=60, deadline=None)
@given(events=event_streams(), cuts=st.lists(st.integers(0, 60), max_size=5), data=st.data())
def test_incremental_equals_rebuild(events: list[ev.EventBase], cuts: list[int], data: st.DataObject) -> None:
    bounds = sorted({min(cut, len(events)) for cut in cuts} | {len(events)})
    for make in PROJECTIONS:
        incremental = make()
        start = 0
        for end in bounds:
            # Each piece starts a little before the last one ended: already-seen events are ignored.
            overlap = data.draw(st.integers(0, start), label="overlap")
            incremental.feed(events[start - overlap : end])
            start = end
        assert incremental.position == (events[-1].seq if events else 0)
        assert _state(incremental) == _state(_rebuild(make, events)), make.__name__


@settings(max_examples=30, deadline=None)
@given(events=event_streams(), data=st.data())
def test_a_copy_taken_midway_continues_like_the_original(
    events: list[ev.EventBase], data: st.DataObject
) -> None:
    """A view saved at some point (here: a deep copy; the index entry: its JSON) and fed the
    rest later gives what a single pass gives."""
    cut = data.draw(st.integers(0, len(events)))
    for make in PROJECTIONS:
        first = make()
        first.feed(events[:cut])
        resumed = copy.deepcopy(first)
        if isinstance(first, IndexEntry):
            resumed = IndexEntry.from_json(first.to_json())
        resumed.feed(events)
        assert _state(resumed) == _state(_rebuild(make, events)), make.__name__


@settings(max_examples=30, deadline=None)
@given(events=event_streams())
def test_the_log_survives_json_and_upcasting_unchanged(events: list[ev.EventBase]) -> None:
    """What a projection reads back from lines is what was written."""
    for event in events:
        line = event.model_dump_json(exclude_none=True)
        assert ev.event_adapter().validate_json(line) == event


def _state(projection: Projection) -> object:
    return (projection.position, {key: value for key, value in vars(projection).items() if key != "position"})

"""The session store's fast paths give exactly what the plain ones give, on random streams:
reading a log (pydantic straight from the bytes), replaying the aggregate, folding every
projection in one pass, and writing the Claude Code transcript's lines, timestamps and ids."""

from __future__ import annotations

import inspect
import json
import tempfile
import uuid
from dataclasses import MISSING, fields
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, ClassVar

import pytest
from eventsourcing.domain import OriginatorVersionError
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from aerix.adapters.sessions.jsonl_store import SessionLogFolder
from aerix.domain import events as ev
from aerix.domain.claude_format import message_id, record_uuid, session_namespace
from aerix.domain.segments import ContextSegment
from aerix.domain.session import Session, replay
from aerix.projections.base import Handlers, Projection, feed_all
from aerix.projections.contexts import Contexts
from aerix.projections.corpus import SessionEvidence
from aerix.projections.index import IndexEntry
from aerix.projections.status import StatusFigures
from aerix.projections.transcript import ClaudeTranscript, record_line, stamp, transcript_lines
from tests.aerix.session_streams import T0, event_streams, start_session

PLAIN_TEXT = st.text(alphabet='ab \n\t\x00\x1f\x7f"\\é…\u2028\U0001f600', max_size=8)
# A lone surrogate: json.dumps writes it, pydantic-core refuses it.
ODD_TEXT = PLAIN_TEXT | st.text(alphabet="a\ud800", min_size=1, max_size=3)
# Floats whose text json and pydantic-core write differently (1e-07 against 1e-7), or not at all.
ODD_FLOATS = st.sampled_from([1e-07, 2.5e-05, 1e16, -0.0, float("nan"), float("inf")])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ODD_FLOATS | ODD_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(PLAIN_TEXT, inner, max_size=3),
    max_leaves=8,
)


def _other_writer(record: ev.EventBase) -> bytes:
    """The line another tool might write: keys sorted, spaces after separators, ASCII escapes."""
    return json.dumps(json.loads(record.model_dump_json(exclude_none=True)), sort_keys=True).encode()


def _draft_v1(record: ev.EventBase) -> bytes:
    """The same event as the v1 draft wrote it (Unix time, no ``v``)."""
    line = json.loads(record.model_dump_json(exclude_none=True))
    line["time"] = datetime.fromisoformat(line["time"]).timestamp()
    del line["v"]
    return json.dumps(line).encode()


@settings(max_examples=40, deadline=None)
@given(events=event_streams(), styles=st.lists(st.sampled_from(["aerix", "other", "v1"]), min_size=1))
def test_reading_a_log_equals_validating_each_decoded_line(
    events: list[ev.EventBase], styles: list[str]
) -> None:
    writers = {
        "aerix": lambda r: r.model_dump_json(exclude_none=True).encode(),
        "other": _other_writer,
        "v1": _draft_v1,
    }
    lines = [writers[styles[index % len(styles)]](record) for index, record in enumerate(events)]
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "s.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
        read = SessionLogFolder(Path(folder)).read_records("s")
    assert read == [ev.parse_event(json.loads(line)) for line in lines]


def _aggregate_state(session: Session | None) -> object:
    if session is None:
        return None
    return (session.id, session.version, session.start, session.requests, session.ended, session.agents)


def _recorded_anew(records: list[ev.EventBase]) -> Session:
    """The aggregate that records these events one by one, as a writer does."""
    first = records[0]
    assert isinstance(first, ev.SessionStart)
    session = Session.begin(first.time, **first.model_dump(exclude={"type", "seq", "time", "v"}))
    for record in records[1:]:
        session.record(type(record), record.time, **record.model_dump(exclude={"type", "seq", "time", "v"}))
    assert session.take_new_records() == records  # the records it made are the events it holds
    return session


@settings(max_examples=40, deadline=None)
@given(events=event_streams(), more=event_streams())
def test_replay_equals_recording_event_by_event(events: list[ev.EventBase], more: list[ev.EventBase]) -> None:
    assert _aggregate_state(replay(events)) == _aggregate_state(_recorded_anew(events))
    later_start = more[0].model_copy(update={"seq": len(events) + 1, "request": 2})
    both = [*events, later_start]
    assert _aggregate_state(replay(both)) == _aggregate_state(_recorded_anew(both))


def test_replay_refuses_a_gap_like_eventsourcing_does() -> None:
    session = start_session()
    session.record(ev.Plan, T0, agent="a1", text="one")
    records = session.take_new_records()
    gapped = [records[0], records[1].model_copy(update={"seq": 3})]
    with pytest.raises(OriginatorVersionError):
        replay(gapped)


@settings(max_examples=40, deadline=None)
@given(events=event_streams(), cut=st.integers(0, 30))
def test_one_pass_over_many_projections_equals_each_on_its_own(events: list[ev.EventBase], cut: int) -> None:
    makers = [Contexts, ClaudeTranscript, StatusFigures, SessionEvidence, IndexEntry]
    together: list[Projection] = [make() for make in makers]
    feed_all(together, events[:cut])
    feed_all(together, events)  # from a position, like a continued rebuild
    for make, projection in zip(makers, together, strict=True):
        alone = make()
        alone.feed(events)
        assert vars(projection) == vars(alone), make.__name__


class _RefusesPlans(Projection):
    def _plan(self, event: ev.Plan) -> None:
        raise ValueError("refused")

    HANDLERS: ClassVar[Handlers] = {ev.Plan: _plan}


def test_a_fold_that_raises_leaves_each_projection_where_taking_the_events_in_turn_would() -> None:
    session = start_session()
    session.record(ev.AgentSpawn, T0, agent="a1", kind="root")
    session.record(ev.Plan, T0, agent="a1", text="one")
    session.record(ev.Plan, T0, agent="a1", text="two")
    events = session.take_new_records()
    before, refusing, after = Contexts(), _RefusesPlans(), IndexEntry()
    with pytest.raises(ValueError, match="refused"):
        feed_all([before, refusing, after], events)
    # The first plan (seq 3): taken by the projection before the one that refused it, not after.
    assert [before.position, refusing.position, after.position] == [3, 2, 2]
    assert before.agents["a1"].plan == "one" and after.events == 2


@settings(max_examples=60, deadline=None)
@given(tool_input=st.dictionaries(PLAIN_TEXT, JSON_VALUES, max_size=4), text=ODD_TEXT, thought=PLAIN_TEXT)
def test_transcript_lines_equal_json_dumps(tool_input: dict[str, Any], text: str, thought: str) -> None:
    session = start_session()
    at = T0
    steps: list[tuple[type[ev.EventBase], dict[str, Any]]] = [
        (ev.Segment, {"agent": "a1", "id": "p", "role": "user", "kind": "prompt", "text": text}),
        (
            ev.Message,
            {
                "agent": "a1",
                "role": "assistant",
                "text": text,
                "thought": thought,
                "calls": [ev.ToolCall(id="c1", tool="bash", input=tool_input)],
            },
        ),
        (ev.Message, {"agent": "a1.c2", "role": "tool", "text": text, "call": "c1", "tool": "bash"}),
    ]
    for cls, fields_ in steps:
        at += timedelta(seconds=1)
        session.record(cls, at, **fields_)
    transcript = ClaudeTranscript()
    transcript.feed(session.take_new_records())
    expected = [
        json.dumps(record, ensure_ascii=False, separators=(",", ":")) for record in transcript.records
    ]
    assert transcript_lines(transcript) == expected
    assert [record_line(record) for record in transcript.records] == expected


ZONES = (
    st.none() | st.just(UTC) | st.builds(timezone, st.timedeltas(timedelta(hours=-23), timedelta(hours=23)))
)


@given(at=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)), zone=ZONES)
def test_stamps_equal_isoformat_with_z(at: datetime, zone: timezone | None) -> None:
    at = at.replace(tzinfo=zone)
    moments = [at]
    if zone is None or zone.utcoffset(None) % timedelta(minutes=1) == timedelta(0):
        moments.append(TypeAdapter(datetime).validate_json(json.dumps(at.isoformat())))  # pydantic's tzinfo
    for moment in moments:
        assert stamp(moment) == moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@given(
    session=st.text(max_size=40),
    seq=st.integers(min_value=0, max_value=2**63),
    part=st.integers(min_value=-2, max_value=1000),
)
def test_derived_ids_equal_uuid5(session: str, seq: int, part: int) -> None:
    namespace = uuid.uuid5(uuid.UUID("6f1c2a52-53b7-4d8e-9a55-6e1f0f3b2a11"), session)
    ids = session_namespace(session)
    assert ids.uuid == namespace
    assert record_uuid(ids, seq, part) == str(uuid.uuid5(namespace, f"{seq}.{part}"))
    assert message_id(ids, seq) == f"msg_{uuid.uuid5(namespace, f'{seq}.-1').hex[:24]}"


def test_segment_views_take_their_fields_in_order_with_their_defaults() -> None:
    parameters = list(inspect.signature(ContextSegment).parameters.values())
    assert [(p.name, p.default) for p in parameters] == [
        (f.name, inspect.Parameter.empty if f.default is MISSING else f.default)
        for f in fields(ContextSegment)
    ]

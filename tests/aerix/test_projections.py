"""What each projection shows for a hand-made session."""

from __future__ import annotations

from datetime import timedelta

from aerix.domain import events as ev
from aerix.projections.contexts import contexts_at
from aerix.projections.corpus import tuning_corpus
from aerix.projections.request_totals import RequestTotals
from aerix.projections.status import (
    STATS_MIN_STREAMING_SECS,
    ContextFigure,
    StatusFigures,
    streaming_seconds,
)
from tests.aerix.session_streams import T0, Recording, start_session


def _session() -> list[ev.EventBase]:
    rec = Recording(window=8192)
    s = rec.session

    rec(ev.RouteDecision, choice="edit", scores={"edit": -0.1, "answer": -2.5})
    rec(ev.AgentSpawn, agent="a1", kind="root", max_turns=40)
    rec(ev.Segment, agent="a1", id="s1", role="system", kind="system", text="sys", pinned=True, tokens=100)
    rec(ev.Segment, agent="a1", id="s2", role="user", kind="prompt", text="fix the bug", tokens=5)
    rec(
        ev.Message,
        agent="a1",
        role="assistant",
        turn=1,
        text="{bad",
        parse_error="unclosed object",
        attempt=0,
    )
    rec(
        ev.Message,
        agent="a1",
        role="assistant",
        turn=1,
        text="{}",
        attempt=1,
        thought="look",
        calls=[ev.ToolCall(id="c1", tool="read", input={"path": "a.py"})],
        usage=ev.Usage(prompt_tokens=105, completion_tokens=20, decode_ms=1000),
    )
    rec(ev.Segment, agent="a1", id="s3", role="assistant", kind="assistant", text="{}", tokens=20)
    rec(ev.Message, agent="a1", role="tool", text="print(1)", call="c1", tool="read")
    rec(
        ev.Segment,
        agent="a1",
        id="s4",
        role="user",
        kind="tool_result",
        text="[read c1]\nprint(1)",
        tokens=300,
    )
    rec(ev.Plan, agent="a1", text="1. read\n2. fix")
    rec(
        ev.Compaction,
        agent="a1",
        replaced=[
            ev.Replaced(id="s4", marker="[compacted tool result of call c1 (read, 300 tokens)]", tokens=12)
        ],
        tokens_before=425,
        tokens_after=137,
    )
    rec(ev.ContextOp, agent="a1", op="note", text="remember x", tokens=4)
    rec(
        ev.ContextOp,
        agent="a1",
        op="summarize",
        ids=["s2", "s3"],
        segment="sum1",
        text="asked to fix; read a.py",
        tokens=9,
    )
    rec(ev.ContextOp, agent="a1", op="drop", ids=["s1"], refused="the system segment cannot be dropped")
    rec(ev.AgentSpawn, agent="a1.c2", parent="a1", kind="implementer", call="c2", brief="fix a.py")
    rec(
        ev.Segment, agent="a1.c2", id="s1", role="user", kind="brief", text="fix a.py", pinned=True, tokens=30
    )
    rec(
        ev.Message,
        agent="a1.c2",
        role="assistant",
        turn=1,
        text="{}",
        final="done",
        usage=ev.Usage(prompt_tokens=50, completion_tokens=10, decode_ms=2000),
    )
    rec(ev.AgentEnd, agent="a1.c2", outcome="done", turns=1, summary="fixed")
    rec(ev.AgentSpawn, agent="a1.c2.v1", parent="a1.c2", kind="verifier", brief="fix a.py")
    rec(ev.AgentEnd, agent="a1.c2.v1", outcome="done", verdict="fail", reason="tests fail", turns=1)
    rec(ev.AgentEnd, agent="a1", outcome="failed", reason="verification failed after 1 attempts", turns=1)
    rec(
        ev.SessionEnd,
        outcome="done",
        exit_code=0,
        diff=ev.DiffStats(added=3, removed=1, files=1),
        duration_ms=21000,
    )
    return s.take_new_records()


def test_the_root_context_is_rebuilt_segment_by_segment() -> None:
    root = contexts_at(_session()).agents["a1"]
    assert [(seg.id, seg.kind, seg.pinned, seg.tokens) for seg in root.ordered()] == [
        ("s1", "system", True, 100),
        ("sum1", "summary", True, 9),
        ("s4", "marker", False, 12),
        ("scratchpad", "scratchpad", True, 4),
    ]
    assert root.ordered()[2].text.startswith("[compacted tool result of call c1")
    assert root.plan == "1. read\n2. fix"
    assert root.tokens == 125
    assert root.outcome == "failed"


def test_a_context_at_an_earlier_point_of_the_log() -> None:
    events = _session()
    before_compaction = next(e.seq for e in events if isinstance(e, ev.Compaction)) - 1
    root = contexts_at(events, upto=before_compaction).agents["a1"]
    assert [seg.id for seg in root.ordered()] == ["s1", "s2", "s3", "s4"]
    assert root.segments["s4"].kind == "tool_result"


def test_status_figures_follow_their_sources() -> None:
    events = _session()
    status = StatusFigures()
    status.feed(events)
    assert status.diff is not None and (status.diff.added, status.diff.removed, status.diff.files) == (
        3,
        1,
        1,
    )
    assert status.verifier == "failed"
    assert status.stats is not None
    assert status.stats.completion_tokens == 30
    assert status.stats.duration_secs == 21.0
    assert (
        status.stats.rate is not None and round(status.stats.rate, 3) == 10.0
    )  # 30 tokens over 3 s of streaming
    # After the root's compaction the context line is the client's count, marked approximate.
    mid = StatusFigures()
    mid.feed(e for e in events if e.seq <= next(e.seq for e in events if isinstance(e, ev.Compaction)))
    assert mid.context is not None and (mid.context.tokens, mid.context.approximate, mid.context.window) == (
        137,
        True,
        8192,
    )
    assert mid.root_turn == 1 and mid.tool_calls == 1 and mid.root_max_turns == 40


def test_the_approximate_context_ends_when_the_pool_reports_and_a_short_stream_has_no_rate() -> None:
    """After a compaction the context line is ≈ only until the root's next usage; a request
    that streamed under STATS_MIN_STREAMING_SECS commits a stats line without a rate (``–``)."""
    rec = Recording(window=8192)
    s = rec.session

    rec(ev.AgentSpawn, agent="a1", kind="root")
    rec(ev.Compaction, agent="a1", replaced=[], tokens_before=900, tokens_after=400)
    rec(
        ev.Message,
        agent="a1",
        role="assistant",
        turn=1,
        text="{}",
        final="ok",
        usage=ev.Usage(prompt_tokens=410, completion_tokens=2, decode_ms=STATS_MIN_STREAMING_SECS * 500),
    )
    rec(ev.SessionEnd, outcome="done")
    events = s.take_new_records()
    after_compaction = StatusFigures()
    after_compaction.feed(events[:3])
    assert after_compaction.context == ContextFigure(400, 8192, approximate=True)
    status = StatusFigures()
    status.feed(events)
    assert status.context == ContextFigure(412, 8192, approximate=False)
    assert status.stats is not None and status.stats.completion_tokens == 2 and status.stats.rate is None


def test_a_resumed_request_shows_no_context_until_it_generates() -> None:
    events = _session()
    s = start_session()
    status = StatusFigures()
    status.feed(events)
    resumed = ev.SessionStart(
        seq=len(events) + 1,
        time=events[-1].time,
        session="s-random",
        cwd="/w",
        project="p",
        model="m",
        prompt="again",
        aerix_version="0",
        request=2,
        resumed=True,
    )
    status.feed([resumed])
    assert status.context is None and status.running and status.verifier is None
    assert status.stats is not None  # the last committed stats line stays
    del s


def test_overlapping_generations_count_once() -> None:
    t = T0
    spans = [
        (t, t + timedelta(seconds=2)),
        (t + timedelta(seconds=1), t + timedelta(seconds=3)),
        (t + timedelta(seconds=5), t + timedelta(seconds=6)),
    ]
    assert streaming_seconds(spans) == 4.0


def test_the_corpus_keeps_the_newest_sessions_of_the_profile_and_model() -> None:
    sessions = []
    for day in range(4):
        s = start_session(f"s{day}", model="other" if day == 2 else "smollm2-135m")
        s.record(ev.RouteDecision, T0 + timedelta(days=day), choice="answer")
        sessions.append(s.take_new_records())
    # Session start times are all T0; the newest is decided by the start time, then the id.
    corpus = tuning_corpus(sessions, "default", "smollm2-135m", limit=2)
    assert [c.session for c in corpus] == ["s3", "s1"]
    evidence = tuning_corpus([_session()], "default", "smollm2-135m", limit=5)[0]
    assert [(r.choice, r.outcome) for r in evidence.routes] == [("edit", "done")]
    assert [(p.agent, p.error) for p in evidence.parse_retries] == [("a1", "unclosed object")]
    assert [(v.agent, v.verdict, v.reason, v.brief) for v in evidence.verdicts] == [
        ("a1.c2.v1", "fail", "tests fail", "fix a.py")
    ]
    assert [(c.segments, c.tokens_before, c.tokens_after) for c in evidence.compactions] == [(1, 425, 137)]
    assert [(f.agent, f.outcome) for f in evidence.failures] == [("a1", "failed")]


def test_a_re_asked_root_attempt_adds_none_of_its_output_to_the_context() -> None:
    """A degenerate (stopped), cut or unparsed root attempt is asked again without its output:
    the context line is the prompt the pool reported, until a turn that parses adds its own."""
    rec = Recording(window=8192)
    s = rec.session

    rec(ev.AgentSpawn, agent="a1", kind="root")
    stopped = "stopped after 900 tokens: a span of 12 tokens repeated"
    rec(
        ev.Message,
        agent="a1",
        role="assistant",
        turn=1,
        text="la la la",
        parse_error=stopped,
        usage=ev.Usage(prompt_tokens=300, completion_tokens=900),
    )
    status = StatusFigures()
    status.feed(s.take_new_records())
    assert status.context == ContextFigure(300, 8192, approximate=False)
    rec(
        ev.Message,
        agent="a1",
        role="assistant",
        turn=1,
        attempt=1,
        text="{}",
        final="ok",
        usage=ev.Usage(prompt_tokens=320, completion_tokens=20),
    )
    status.feed(s.take_new_records())
    assert status.context == ContextFigure(340, 8192, approximate=False)


def test_the_request_totals_count_a_piece_once_for_a_call_that_repeated_it() -> None:
    """The 1.5B sent three identical agent calls in one turn: one piece ran, and the outcome
    line named the other two "not run" as if they were pieces."""
    rec = Recording(window=8192)
    result = '{"summary": "fixed", "files_touched": [], "checks_run": [], "outcome": "done"}'
    twin = "the same agent with the same input as call c1 in this turn, so it ran once: see that result"
    rec(ev.Message, agent="a1", role="tool", call="c1", tool="agent", text=result, outcome="done")
    rec(ev.Message, agent="a1", role="tool", call="c2", tool="agent", text=twin, unchanged_since="c1")
    rec(ev.Message, agent="a1", role="tool", call="c3", tool="agent", text="error: no agent definition")
    totals = RequestTotals()
    totals.feed(rec.session.take_new_records())
    assert totals.pieces == [("a1.c1", "done"), ("a1.c3", None)]

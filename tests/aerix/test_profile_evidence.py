"""The corpus's delegation and compaction evidence, folded from event streams as the schema
defines them, and the lines each prompt's reflection reads."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aerix.app.profiles.evidence import evidence_lines
from aerix.app.profiles.reflection import request_text
from aerix.domain import events as ev
from aerix.domain.bounds import EVIDENCE_LINE_MAX_CHARS
from aerix.projections.corpus import PieceEvidence, piece_of, session_evidence
from tests.aerix.session_streams import T0, start_session


def _stream(*events: tuple[type[ev.EventBase], dict[str, Any]]) -> list[ev.EventBase]:
    session = start_session()
    for number, (cls, fields) in enumerate(events, 1):
        session.record(cls, T0 + timedelta(seconds=number), **fields)
    return session.take_new_records()


PIECE_FAILS_THEN_PASSES = _stream(
    (ev.RouteDecision, {"choice": "edit", "scores": {"edit": -0.1, "plan": -3.0}}),
    (ev.AgentSpawn, {"agent": "a1", "kind": "root"}),
    (
        ev.AgentSpawn,
        {"agent": "a1.c3", "parent": "a1", "kind": "implementer", "brief": "fix calc", "check": "pytest"},
    ),
    (ev.AgentEnd, {"agent": "a1.c3", "outcome": "done"}),
    (ev.AgentSpawn, {"agent": "a1.c3.v1", "parent": "a1", "kind": "verifier", "brief": "fix calc"}),
    (ev.AgentEnd, {"agent": "a1.c3.v1", "outcome": "done", "verdict": "fail", "reason": "1 test fails"}),
    (
        ev.AgentSpawn,
        {"agent": "a1.c3.r1", "parent": "a1", "kind": "implementer", "brief": "fix calc", "attempt": 2},
    ),
    (ev.Compaction, {"agent": "a1.c3.r1", "replaced": [], "tokens_before": 800, "tokens_after": 300}),
    (
        ev.Message,
        {
            "agent": "a1.c3.r1",
            "role": "assistant",
            "turn": 4,
            "text": "{",
            "parse_error": "cut at max_new_tokens (64) before its JSON closed",
        },
    ),
    (ev.AgentEnd, {"agent": "a1.c3.r1", "outcome": "done"}),
    (ev.AgentSpawn, {"agent": "a1.c3.v2", "parent": "a1", "kind": "verifier", "brief": "fix calc"}),
    (ev.AgentEnd, {"agent": "a1.c3.v2", "outcome": "done", "verdict": "pass", "reason": "all pass"}),
    (ev.AgentSpawn, {"agent": "a1.c4", "parent": "a1", "kind": "implementer", "brief": "update docs"}),
    (ev.AgentEnd, {"agent": "a1.c4", "outcome": "budget", "reason": "the turn budget ran out (40 turns)"}),
    (ev.AgentEnd, {"agent": "a1", "outcome": "done"}),
    (ev.SessionEnd, {"outcome": "done"}),
)


def test_pieces_group_an_implementers_retries_and_verifiers() -> None:
    evidence = session_evidence(PIECE_FAILS_THEN_PASSES)
    assert piece_of("a1.c3.r12") == piece_of("a1.c3.v2") == "a1.c3" and piece_of("a1.c3.c2") == "a1.c3.c2"
    assert evidence.pieces == [
        PieceEvidence("a1.c3", "fix calc", "pytest", None, 2, "done", "all pass", ("fail", "pass")),
        PieceEvidence("a1.c4", "update docs", None, None, 1, "budget", "the turn budget ran out (40 turns)"),
    ]
    assert [piece.result for piece in evidence.pieces] == ["passed", "budget"]


def test_verdicts_know_what_came_after_them_and_compactions_what_followed() -> None:
    evidence = session_evidence(PIECE_FAILS_THEN_PASSES)
    assert [(v.agent, v.verdict, v.later) for v in evidence.verdicts] == [
        ("a1.c3.v1", "fail", "piece passed; request done"),
        ("a1.c3.v2", "pass", "piece passed; request done"),
    ]
    [compaction] = evidence.compactions
    assert (compaction.agent, compaction.retries_after, compaction.agent_outcome) == ("a1.c3.r1", 1, "done")


def test_each_prompt_reads_its_own_evidence() -> None:
    corpus = [session_evidence(PIECE_FAILS_THEN_PASSES)]
    assert evidence_lines(corpus, "routing.md") == [
        'request "fix the bug" was routed edit (edit -0.10, plan -3.00); the request ended done'
    ]
    assert evidence_lines(corpus, "verifier.md")[0] == (
        'a1.c3.v2 said pass: all pass (brief "fix calc"); then piece passed; request done'
    )
    planner = evidence_lines(corpus, "planner.md")
    assert 'piece a1.c3: brief "fix calc", check "pytest"; 2 attempts, verdicts fail pass; passed' in planner
    assert (
        'piece a1.c4: brief "update docs"; 1 attempt; budget (the turn budget ran out (40 turns))' in planner
    )
    assert evidence_lines(corpus, "system.md")[0].startswith(
        "a1.c3.r1 turn 4, attempt 1 was asked again: cut at"
    )
    assert evidence_lines(corpus, "compacted.md") == [
        "a1.c3.r1 compacted 0 segments (auto, 800 → 300 tokens); "
        "then 1 re-asked turn, and a1.c3.r1 ended done"
    ]
    assert evidence_lines(corpus, "unknown.md") == []


def test_long_evidence_lines_are_cut_and_the_request_says_what_was_left_out() -> None:
    stream = _stream(
        (ev.RouteDecision, {"choice": "answer"}), (ev.SessionEnd, {"outcome": "failed", "reason": "x" * 900})
    )
    [line] = evidence_lines([session_evidence(stream)], "system.md")
    assert len(line) == EVIDENCE_LINE_MAX_CHARS and line.endswith("…")
    text = request_text("# header", ["new", "older", "oldest"], 1)
    assert text == "# header\n\n# Evidence, newest first\n- new\n(2 older lines left out to fit the window)"

"""Random but well-formed session event streams (hypothesis), and a small hand-made session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from aerix.domain import events as ev
from aerix.domain.session import Session

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
AGENTS = ["a1", "a1.c1", "a1.c1.v1", "a1.c2"]
SEGMENT_IDS = ["s1", "s2", "s3", "s4", "s5"]
KINDS: list[Any] = ["system", "prompt", "tool_result", "assistant", "brief", "hook"]

agents = st.sampled_from(AGENTS)
segment_ids = st.sampled_from(SEGMENT_IDS)
texts = st.text(alphabet='abc xyz\n{}"é', max_size=12)
tokens = st.none() | st.integers(0, 500)


def _usage() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "prompt_tokens": st.integers(0, 4000),
            "completion_tokens": st.integers(0, 300),
            "decode_ms": st.none() | st.floats(0, 5000),
        }
    )


def _call() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "id": st.sampled_from(["c1", "c2", "c3"]),
            "tool": st.sampled_from(["read", "bash", "agent"]),
            "input": st.just({"path": "x"}),
        }
    )


EVENT_FIELDS: list[tuple[type[ev.EventBase], st.SearchStrategy[dict[str, Any]]]] = [
    (
        ev.Segment,
        st.fixed_dictionaries(
            {
                "agent": agents,
                "id": segment_ids,
                "role": st.sampled_from(["system", "user", "assistant"]),
                "kind": st.sampled_from(KINDS),
                "text": texts,
                "pinned": st.booleans(),
                "tokens": tokens,
            }
        ),
    ),
    (
        ev.Message,
        st.fixed_dictionaries(
            {
                "agent": agents,
                "role": st.just("assistant"),
                "turn": st.integers(0, 9),
                "text": texts,
                "thought": st.none() | texts,
                "calls": st.lists(_call(), max_size=2),
                "final": st.none() | texts,
                "parse_error": st.none() | st.just("bad json"),
                "usage": st.none() | _usage(),
            }
        ),
    ),
    (
        ev.Message,
        st.fixed_dictionaries(
            {
                "agent": agents,
                "role": st.just("tool"),
                "text": texts,
                "call": st.sampled_from(["c1", "c2", "c3"]),
                "tool": st.just("read"),
                "is_error": st.booleans(),
            }
        ),
    ),
    (
        ev.ContextOp,
        st.fixed_dictionaries(
            {
                "agent": agents,
                "op": st.sampled_from(["status", "drop", "summarize", "pin", "unpin", "note"]),
                "ids": st.lists(segment_ids, max_size=3),
                "text": st.none() | texts,
                "segment": st.none() | segment_ids,
                "tokens": tokens,
                "refused": st.none() | st.just("no"),
            }
        ),
    ),
    (
        ev.Compaction,
        st.fixed_dictionaries(
            {
                "agent": agents,
                "replaced": st.lists(st.fixed_dictionaries({"id": segment_ids, "marker": texts}), max_size=3),
                "tokens_before": st.integers(0, 9000),
                "tokens_after": st.integers(0, 9000),
            }
        ),
    ),
    (ev.Plan, st.fixed_dictionaries({"agent": agents, "text": texts})),
    (
        ev.AgentSpawn,
        st.fixed_dictionaries(
            {
                "agent": agents,
                "kind": st.sampled_from(["root", "implementer", "verifier"]),
                "brief": st.none() | texts,
                "max_turns": st.none() | st.integers(1, 40),
            }
        ),
    ),
    (
        ev.AgentEnd,
        st.fixed_dictionaries(
            {
                "agent": agents,
                "outcome": st.sampled_from(["done", "failed", "killed", "budget"]),
                "verdict": st.none() | st.sampled_from(["pass", "fail"]),
                "turns": st.integers(0, 9),
            }
        ),
    ),
    (
        ev.RouteDecision,
        st.fixed_dictionaries(
            {
                "choice": st.sampled_from(["answer", "edit", "investigate", "plan"]),
                "scores": st.dictionaries(st.sampled_from(["answer", "edit"]), st.floats(-9, 0), max_size=2),
            }
        ),
    ),
    (
        ev.Hook,
        st.fixed_dictionaries(
            {"event": st.just("PreToolUse"), "outcome": st.sampled_from(["ok", "blocked"])}
        ),
    ),
    (
        ev.Job,
        st.fixed_dictionaries(
            {
                "agent": agents,
                "job": st.just("j1"),
                "command": texts,
                "state": st.sampled_from(["started", "exited"]),
            }
        ),
    ),
    (
        ev.SessionEnd,
        st.fixed_dictionaries(
            {
                "outcome": st.sampled_from(["done", "failed"]),
                "exit_code": st.sampled_from([0, 1]),
                "diff": st.none()
                | st.fixed_dictionaries({"added": st.integers(0, 9), "removed": st.integers(0, 9)}),
            }
        ),
    ),
    (
        ev.SessionStart,
        st.fixed_dictionaries(
            {
                "session": st.just("s-random"),
                "cwd": st.just("/w"),
                "project": st.just("p"),
                "model": st.just("m"),
                "prompt": texts,
                "aerix_version": st.just("0"),
                "resumed": st.just(True),
                "request": st.integers(2, 5),
            }
        ),
    ),
]

one_event = st.one_of(*[st.tuples(st.just(cls), fields) for cls, fields in EVENT_FIELDS])


@st.composite
def event_streams(draw: st.DrawFn, max_size: int = 40) -> list[ev.EventBase]:
    """A session.start, then random events, each a little later than the one before."""
    session = start_session(prompt=draw(texts), window=draw(st.none() | st.integers(1000, 8192)))
    steps = draw(st.lists(st.tuples(one_event, st.integers(0, 4000)), max_size=max_size))
    at = T0
    for (cls, fields), gap_ms in steps:
        at += timedelta(milliseconds=gap_ms)
        session.record(cls, at, **fields)
    return session.take_new_records()


def start_session(session_id: str = "s-random", **extra: Any) -> Session:
    fields: dict[str, Any] = {
        "session": session_id,
        "cwd": "/work",
        "project": "proj",
        "model": "smollm2-135m",
        "prompt": "fix the bug",
        "aerix_version": "0.1.0",
        "profile": "default",
    }
    fields.update(extra)
    return Session.begin(T0, **fields)


class Recording:
    """A session recorded by hand (``start_session``'s fields), each event ``seconds`` after the
    one before: ``rec = Recording(window=8192); rec(ev.AgentSpawn, agent="a1", kind="root")``."""

    def __init__(self, **extra: Any) -> None:
        self.session = start_session(**extra)
        self.at = T0

    def __call__(self, cls: type[ev.EventBase], seconds: float = 1, **fields: object) -> None:
        self.at += timedelta(seconds=seconds)
        self.session.record(cls, self.at, **fields)

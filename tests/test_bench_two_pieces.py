"""The side-by-side benchmark's two-piece request: its script's ``when`` keys pick exactly the
agent each answer is meant for, as aerix's own openings word them; the summary of a recording
names each agent and says which piece lacks what; and a scripted recording replays as its
prompts, with the floor counting its answers once as prefill."""

from __future__ import annotations

import json
from typing import Any

from aerix.adapters.prompts import EmbeddedPrompts
from aerix.app.delegation.openings import implementer_segments, verifier_segments
from tests.benchmark_modules import ROOT, load_benchmark

two = load_benchmark("_two_pieces")


def _openings() -> dict[str, str]:
    """Each agent's own opening text, as aerix fills brief.md and verifier.md."""
    prompts = EmbeddedPrompts()
    texts = {"root": two.PROMPT}
    for number, (piece, (brief, check)) in enumerate(two.PIECES.items(), start=3):
        agent = f"a1.c{number}"
        [implementer] = implementer_segments(agent, prompts, brief, check)
        [verifier] = verifier_segments(f"{agent}.v1", prompts, brief, check, "I did it.", ["greet.py"])
        texts[f"implementer {piece}"] = implementer.text
        texts[f"verifier {piece}"] = verifier.text
    return texts


def test_each_keyed_answer_is_taken_only_by_the_agent_it_is_for() -> None:
    openings = _openings()
    takers: dict[str, set[str]] = {}
    for completion in two.script():
        if isinstance(completion, dict):
            takers.setdefault(completion["when"], set()).update(
                agent for agent, text in openings.items() if completion["when"] in text
            )
    assert takers == {
        two.PROMPT: {"root"},
        "# Your task\nPiece A:": {"implementer A"},
        "given this task:\nPiece A:": {"verifier A"},
        "# Your task\nPiece B:": {"implementer B"},
        "given this task:\nPiece B:": {"verifier B"},
    }
    # The one plain answer is the first: the routing probe, the request's first generation.
    assert [c for c in two.script() if isinstance(c, str)] == [two.script()[0]] == ["edit"]


def _generation(*segment_ids: str, text: str = "") -> dict[str, Any]:
    return {"segments": [{"id": sid, "text": text if sid.endswith("brief") else ""} for sid in segment_ids]}


def test_the_summary_names_each_agent_its_kind_and_piece() -> None:
    shared = ("a1.system", "a1.instructions")
    generations = [
        _generation("routing", "request"),
        _generation(*shared, "a1.p1"),
        _generation(*shared, "a1.c3.brief", text="# Your task\nPiece A: add farewell"),
        _generation(*shared, "a1.c3.brief", "a1.c3.m1", "a1.c3.c1", text="# Your task\nPiece A: add"),
        _generation(*shared, "a1.c3.v1.brief", text="Another agent was given this task:\nPiece A: add"),
        _generation(*shared, "a1.c4.brief", text="# Your task\nPiece B: test it"),
        _generation(*shared, "a1.p1", "a1.m1", "a1.c3", "a1.c4"),
    ]
    summary = two.summarize(generations)
    assert [(a.agent, a.kind, a.piece, a.generations) for a in summary] == [
        ("routing", "routing", None, 1),
        ("a1", "root", None, 2),
        ("a1.c3", "implementer", "A", 2),
        ("a1.c3.v1", "verifier", "A", 1),
        ("a1.c4", "implementer", "B", 1),
    ]
    assert two.missing_pieces(summary, ["A", "B"]) == ["verifier of piece B"]
    assert two.missing_pieces(summary[2:], ["A"]) == ["routing", "root"]


def test_the_committed_recording_is_the_two_piece_request() -> None:
    recording = json.loads((ROOT / "benchmarks" / "recordings" / "aerix_request.json").read_text())
    assert (recording["prompts"], recording["outcomes"]) == ([two.PROMPT], ["done"])
    summary = two.summarize(recording["generations"])
    assert two.missing_pieces(summary, list(two.PIECES)) == []
    assert {(a.kind, a.piece) for a in summary if a.piece} == {
        (kind, piece) for piece in two.PIECES for kind in ("implementer", "verifier")
    }


def test_a_scripted_recording_is_replayed_as_prompts_and_the_floor_counts_its_answers_once() -> None:
    bench = load_benchmark("bench_vs_servers")
    recording = json.loads((ROOT / "benchmarks" / "recordings" / "aerix_request.json").read_text())
    replayed = bench.replayed_generations(recording)
    assert [g["segments"] for g in replayed] == [g["segments"] for g in recording["generations"]]
    assert {g["max_new_tokens"] for g in replayed} == {1}
    assert not any("append" in g for g in replayed)
    assert any("append" in g for g in recording["generations"])
    # A recording of the model's own answers is replayed as it was: decoded, then resumed after.
    own = {**recording, "script": None}
    assert bench.replayed_generations(own) == recording["generations"]
    # Two turns sharing a prefix, the first's answer (tokens 7, 8) in the second's prompt: counted
    # as prefill when nothing decoded it, as computed when the first turn's decode wrote it.
    first, second = [1, 2, 3], [1, 2, 3, 7, 8, 4]
    assert bench.floor_rows([first, second], [None, None]) == 6
    assert bench.floor_rows([first, second], [[1, 2, 3, 7, 8], None]) == 4
    assert bench.floor_rows([first, [1, 2, 3, 7, 8, 9, 4]], [None, None]) == 7

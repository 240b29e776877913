"""The recorded request with two delegated pieces: its prompt, the script its answers come from,
and what a recording holds of each agent.

The embedded model (SmolLM2-135M) routes a two-part request ``edit`` but does not plan: its
root never calls ``agent``. So the recording's pool runs that model with ``--engine scripted
--script-prefill``: llama.cpp computes every row of every prompt with the model's own weights
and the prefix store keeps real snapshots, while the tokens chosen come from :func:`script`.
The tools are real (``repo_map``, ``read``, ``edit``, ``write``, ``bash`` on the scratch
project), so every context is the one aerix builds for this request on this model's tokenizer
and template: the routing probe, the root's turns, and each piece's implementer and verifier.

This module is pure (no I/O): ``_aerix_recording.py`` runs it, and a test checks the summary.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

PROMPT = (
    "Add a function farewell(name) to greet.py that returns 'Goodbye, <name>!', "
    "and add a test for it in test_greet.py."
)
#: The two pieces the root delegates: (brief, check). Each brief starts ``Piece X:`` so the
#: script can tell the agents apart (``brief.md`` puts it after ``# Your task``,
#: ``verifier.md`` after ``given this task:``).
FAREWELL_CHECK = "python3 -c \"from greet import farewell; print(farewell('Ada'))\""
TEST_CHECK = "python3 -m unittest test_greet"
PIECES: dict[str, tuple[str, str]] = {
    "A": (
        "Piece A: add a function farewell(name) to greet.py, next to greet, that returns "
        'f"Goodbye, {name}!".',
        f"{FAREWELL_CHECK} prints Goodbye, Ada!",
    ),
    "B": (
        "Piece B: create test_greet.py with a unittest test of farewell: farewell('Ada') "
        "equals 'Goodbye, Ada!'.",
        f"{TEST_CHECK} passes",
    ),
}
#: The root writes its plan before it delegates, as planner.md asks.
PLAN = "1. Piece A: farewell(name) in greet.py.\n2. Piece B: its unittest in test_greet.py."
GREET_BEFORE = 'def greet(name):\n    return f"Hello, {name}!"\n'
FAREWELL = '\n\ndef farewell(name):\n    return f"Goodbye, {name}!"\n'
TEST_FILE = (
    "import unittest\n\nfrom greet import farewell\n\n\n"
    "class FarewellTest(unittest.TestCase):\n"
    "    def test_farewell(self):\n"
    '        self.assertEqual(farewell("Ada"), "Goodbye, Ada!")\n\n\n'
    'if __name__ == "__main__":\n    unittest.main()\n'
)


def _turn(thought: str, *calls: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": t, "input": i} for t, i in calls]})


def _final(thought: str, final: Any) -> str:
    return json.dumps({"thought": thought, "final": final})


def script() -> list[Any]:
    """Routing's answer (the one plain completion: the first generation takes it), then each
    agent's answers keyed by the text only that agent's prompt holds."""
    implementer = {piece: f"# Your task\nPiece {piece}:" for piece in PIECES}
    verifier = {piece: f"given this task:\nPiece {piece}:" for piece in PIECES}
    delegate = [("agent", {"brief": brief, "check": check}) for brief, check in PIECES.values()]
    plan = ("plan", {"op": "write", "text": PLAN})
    return [
        "edit",
        {"when": PROMPT, "text": _turn("See what the project holds first.", ("repo_map", {}))},
        {"when": PROMPT, "text": _turn("Two pieces: the function, then its test.", plan, *delegate)},
        {"when": implementer["A"], "text": _turn("Read it first.", ("read", {"path": "greet.py"}))},
        {
            "when": implementer["A"],
            "text": _turn(
                "Add farewell after greet.",
                ("edit", {"path": "greet.py", "old": GREET_BEFORE, "new": GREET_BEFORE + FAREWELL}),
            ),
        },
        {
            "when": implementer["A"],
            "text": _final("Added.", 'I added farewell(name) to greet.py; it returns f"Goodbye, {name}!".'),
        },
        {"when": verifier["A"], "text": _turn("Run the check.", ("bash", {"command": FAREWELL_CHECK}))},
        {
            "when": verifier["A"],
            "text": _final("It prints the farewell.", {"verdict": "pass", "reason": "prints Goodbye, Ada!"}),
        },
        {
            "when": implementer["B"],
            "text": _turn("Write the test.", ("write", {"path": "test_greet.py", "content": TEST_FILE})),
        },
        {"when": implementer["B"], "text": _turn("Run it.", ("bash", {"command": TEST_CHECK}))},
        {
            "when": implementer["B"],
            "text": _final(
                "It passes.", "I wrote test_greet.py with test_farewell; the unittest run passes."
            ),
        },
        {"when": verifier["B"], "text": _turn("Run the check.", ("bash", {"command": TEST_CHECK}))},
        {
            "when": verifier["B"],
            "text": _final("The test passes.", {"verdict": "pass", "reason": "1 test ran, OK"}),
        },
        {
            "when": PROMPT,
            "text": _final("Both pieces passed.", "greet.py has farewell(name), and test_greet.py tests it."),
        },
    ]


_VERIFIER_PART = re.compile(r"v\d+")
_CALL_PART = re.compile(r"c\d+")


@dataclass(frozen=True)
class AgentGenerations:
    """How many generations of a recording one agent made, and what kind of agent it is."""

    agent: str
    kind: str  # routing, root, implementer, verifier
    piece: str | None  # the brief's "Piece X" for a piece's agents
    generations: int


def agent_of(generation: dict[str, Any]) -> str:
    """The agent a recorded generation ran for: its last segment's id without the segment's
    own part (``a1.c1.v1.p2`` → ``a1.c1.v1``); the routing probe's segments have no agent."""
    last = str(generation["segments"][-1]["id"])
    return last.rsplit(".", 1)[0] if "." in last else "routing"


def _kind(agent: str) -> str:
    if agent == "routing":
        return "routing"
    parts = agent.split(".")
    if _VERIFIER_PART.fullmatch(parts[-1]):
        return "verifier"
    return "implementer" if any(_CALL_PART.fullmatch(part) for part in parts[1:]) else "root"


def _piece_letter(generation: dict[str, Any]) -> str | None:
    for segment in generation["segments"]:
        found = re.search(r"(?:# Your task|given this task:)\nPiece (\w+):", str(segment["text"]))
        if found:
            return found.group(1)
    return None


def summarize(generations: list[dict[str, Any]]) -> list[AgentGenerations]:
    """Each agent of a recording, in the order it first generated."""
    counts: Counter[str] = Counter()
    pieces: dict[str, str | None] = {}
    for generation in generations:
        agent = agent_of(generation)
        counts[agent] += 1
        pieces.setdefault(agent, _piece_letter(generation))
    return [AgentGenerations(a, _kind(a), pieces[a], n) for a, n in counts.items()]


def missing_pieces(summary: list[AgentGenerations], pieces: list[str]) -> list[str]:
    """What a recording of a request with these pieces lacks: each piece needs an implementer
    and a verifier that generated, and the request a routing probe and a root."""
    have = {(a.kind, a.piece) for a in summary}
    wanted: list[tuple[str, str | None]] = [("routing", None), ("root", None)]
    wanted += [(kind, piece) for piece in pieces for kind in ("implementer", "verifier")]
    lacking = [(kind, piece) for kind, piece in wanted if (kind, piece) not in have]
    return [f"{kind} of piece {piece}" if piece else kind for kind, piece in lacking]

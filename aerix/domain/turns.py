"""The turn: the one JSON object a model answers each turn with.

- ``turn_schema`` builds the JSON schema a generation is constrained to (spec, "The turn"):
  ``{"oneOf": [{thought, calls}, {thought, final}]}``, where each call is a oneOf over the
  callable tools (``{"tool": <const name>, "input": <its input schema>}``) and a verifier's final
  is ``{"verdict": "pass"|"fail", "reason": ...}``.
- ``render_turns_section`` is the ``# Turns`` text (with its example) that follows system.md in
  the system segment. It is code, not a prompt file, so no profile can change it, and it is the
  same for every agent, so every context shares the system segment's prefix.
- ``parse_turn`` reads a model's answer: the thought is cut to 600 characters, at most 8 calls
  are kept (the rest dropped with a note), each call gets an id ``c<n>``. An answer that does not
  parse raises ``TurnParseError``, whose ``message`` is written to be sent back to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aerix.domain import bounds
from aerix.domain.claude_tools import aerix_tool_name, from_claude_input
from aerix.domain.input_check import input_problem
from aerix.domain.tools import ToolSpec, dumps_compact
from aerix.domain.turn_notes import dropped_calls_note, turn_retry_message

#: llguidance options carried in the schema. Compact separators matching the example (`", "`,
#: `": "`) and no free whitespace: a small model cannot wander into endless newlines, and the
#: turns it writes look like the example it was shown. The two top-level branches and the
#: per-tool branches are provably disjoint (different required keys under
#: additionalProperties false; a const ``tool``), so oneOf needs no ``coerce_one_of``.
GUIDANCE_OPTIONS: dict[str, Any] = {
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
}

VERDICTS = ("pass", "fail")


class TurnParseError(ValueError):
    """A turn that could not be read. ``message`` is meant for the model, to try again."""

    def __init__(self, problem: str, *, verifier: bool = False) -> None:
        self.problem = problem
        self.message = turn_retry_message(problem, verifier=verifier)
        super().__init__(self.message)


@dataclass(frozen=True)
class ToolCall:
    """One call of a turn, with the id results are headed by (``[read c3]``)."""

    id: str
    tool: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Verdict:
    """A verifier's final."""

    verdict: str  # "pass" or "fail"
    reason: str

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


@dataclass(frozen=True)
class Turn:
    """A parsed turn: either calls, or a final (text, or a verifier's verdict)."""

    thought: str
    calls: tuple[ToolCall, ...] = ()
    final: str | None = None
    verdict: Verdict | None = None
    #: Things the model should be told, such as calls dropped over the limit.
    notes: tuple[str, ...] = ()

    @property
    def is_final(self) -> bool:
        return self.final is not None or self.verdict is not None


# --- The schema -----------------------------------------------------------------------------


def _thought_schema() -> dict[str, Any]:
    return {"type": "string", "maxLength": bounds.THOUGHT_MAX_CHARS}


def _final_schema(verifier: bool) -> dict[str, Any]:
    if not verifier:
        return {"type": "string"}
    return {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": list(VERDICTS)}, "reason": {"type": "string"}},
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    }


def _call_schema(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"tool": {"const": spec.name}, "input": dict(spec.input_schema)},
        "required": ["tool", "input"],
        "additionalProperties": False,
    }


def turn_schema(
    callable_tools: Sequence[ToolSpec], *, verifier: bool = False, final: bool = True
) -> dict[str, Any]:
    """The JSON schema of a turn for an agent that may call ``callable_tools``.

    With no callable tools only the final branch is left; with ``final`` false (and some tool to
    call) only the calls branch.
    """
    final_branch = {
        "type": "object",
        "properties": {"thought": _thought_schema(), "final": _final_schema(verifier)},
        "required": ["thought", "final"],
        "additionalProperties": False,
    }
    if not callable_tools:
        return {**final_branch, "x-guidance": dict(GUIDANCE_OPTIONS)}
    calls_branch = {
        "type": "object",
        "properties": {
            "thought": _thought_schema(),
            "calls": {
                "type": "array",
                "minItems": 1,
                "maxItems": bounds.MAX_CALLS_PER_TURN,
                "items": {"oneOf": [_call_schema(spec) for spec in callable_tools]},
            },
        },
        "required": ["thought", "calls"],
        "additionalProperties": False,
    }
    if not final:
        return {**calls_branch, "x-guidance": dict(GUIDANCE_OPTIONS)}
    return {"oneOf": [calls_branch, final_branch], "x-guidance": dict(GUIDANCE_OPTIONS)}


# --- The # Turns section --------------------------------------------------------------------

# The examples are placeholders a model cannot pass off as an answer: a small model copies the
# example it was shown, and a plausible one ("The project builds with `make`; I read README.md
# to check.") came back as the answer to requests it had nothing to do with. Under the JSON
# constraint "<tool name>" cannot be a tool and "<pass or fail>" cannot be a verdict; a final
# that only echoes its placeholder does not parse (``ECHOED_PLACEHOLDER``), nor does a thought
# that only echoes one (``ECHOED_THOUGHT``: the screen showed "<what you did>" as a turn's thought).
#: The final's placeholder in the # Turns section.
FINAL_PLACEHOLDER = "<what you did and what you checked>"
#: The verdict reason's placeholder.
REASON_PLACEHOLDER = "<the checks you ran and what they showed>"
_CALL_EXAMPLE = {
    "thought": "<why these calls>",
    "calls": [{"tool": "<tool name>", "input": {"<field>": "<value>"}}],
}
_FINAL_EXAMPLE = {"thought": "<why you are done>", "final": FINAL_PLACEHOLDER}
_VERDICT_EXAMPLE = {
    "thought": "<what you found>",
    "final": {"verdict": "<pass or fail>", "reason": REASON_PLACEHOLDER},
}
#: A final or a thought that is nothing but one <placeholder>: the examples' own, or a mix of
#: their words (a 135M model answered "<what you checked and what they showed>").
_PLACEHOLDER = re.compile(r"<[^<>\n]{1,120}>")
ECHOED_PLACEHOLDER = "the final only repeats the example's placeholder; write your own answer"
ECHOED_THOUGHT = "the thought only repeats the example's placeholder; write your own reasoning"
#: A final with no letter or digit in it ("...", "") says nothing: smollm2-135m ended a request
#: ``done`` with the final "..." after two re-asks.
EMPTY_FINAL = "the final says nothing (not one word in it); write your answer"


def render_turns_section() -> str:
    """The ``# Turns`` section of the system segment, with its examples."""
    limit, calls = bounds.THOUGHT_MAX_CHARS, bounds.MAX_CALLS_PER_TURN
    return "\n".join(
        [
            "# Turns",
            "",
            "Answer every turn with exactly one JSON object and nothing before or after it.",
            "To use tools, give a thought and the calls to run:",
            dumps_compact(_CALL_EXAMPLE),
            "To finish, give a thought and your final answer:",
            dumps_compact(_FINAL_EXAMPLE),
            "",
            f"- thought: your reasoning for this turn, at most {limit} characters.",
            f"- calls: the tool calls to run, in order; at most {calls} are kept. Each input has the fields",
            "  listed for its tool under # Tools.",
            "- Each result comes back as a user message headed with the tool and the call's id, such as",
            '  [read c1]. A result starting with "error:" means the call failed; adjust and go on.',
            "- Words in <angle brackets> are placeholders: write your own in their place.",
            "- final: ends your work. Say what you did and what you checked.",
            "- A verifier's final is a verdict instead of text:",
            "  " + dumps_compact(_VERDICT_EXAMPLE),
        ]
    )


# --- Parsing --------------------------------------------------------------------------------


def parse_turn(
    text: str,
    callable_tools: Iterable[ToolSpec],
    *,
    verifier: bool = False,
    first_call_number: int = 1,
) -> Turn:
    """Read a model's answer as a turn.

    ``first_call_number`` continues the agent's call numbering, so ids are unique within an
    agent (``c1``… in its first turn, ``c4``… in a later one). Claude Code's tool names and fields
    (``Read`` with ``file_path``) are understood too. Raises ``TurnParseError``.
    """
    tools = {spec.name: spec for spec in callable_tools}
    data = _json_object(text, verifier)
    thought = data.get("thought", "")
    if not isinstance(thought, str):
        raise TurnParseError('"thought" must be a string', verifier=verifier)
    thought = thought[: bounds.THOUGHT_MAX_CHARS]
    has_calls, has_final = "calls" in data, "final" in data
    if has_calls and has_final:
        raise TurnParseError('a turn has either "calls" or "final", not both', verifier=verifier)
    if has_final:
        turn = _final_turn(thought, data["final"], verifier)
    elif has_calls:
        turn = _calls_turn(thought, data["calls"], tools, verifier, first_call_number)
    else:
        raise TurnParseError('the object needs "calls" or "final"', verifier=verifier)
    # After the calls or the final: what is wrong with them matters more than the thought.
    if _echoes_a_placeholder(thought):
        raise TurnParseError(ECHOED_THOUGHT, verifier=verifier)
    return turn


def _echoes_a_placeholder(text: str) -> bool:
    return _PLACEHOLDER.fullmatch(text.strip()) is not None


def _json_object(text: str, verifier: bool) -> dict[str, Any]:
    start = text.find("{")
    if start < 0:
        raise TurnParseError("no JSON object found", verifier=verifier)
    try:
        value, _end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise TurnParseError(f"invalid JSON at character {exc.pos} ({exc.msg})", verifier=verifier) from None
    if not isinstance(value, dict):
        raise TurnParseError("the answer must be a JSON object", verifier=verifier)
    return value


def _final_turn(thought: str, final: Any, verifier: bool) -> Turn:
    if not verifier:
        text = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)
        if _echoes_a_placeholder(text):
            raise TurnParseError(ECHOED_PLACEHOLDER)
        if not any(character.isalnum() for character in text):
            raise TurnParseError(EMPTY_FINAL)
        return Turn(thought=thought, final=text)
    if not isinstance(final, dict) or final.get("verdict") not in VERDICTS:
        raise TurnParseError(
            'a verifier\'s "final" must be {"verdict": "pass"|"fail", "reason": ...}', verifier=True
        )
    reason = final.get("reason", "")
    if isinstance(reason, str) and _echoes_a_placeholder(reason):
        raise TurnParseError(ECHOED_PLACEHOLDER, verifier=True)
    return Turn(
        thought=thought, verdict=Verdict(final["verdict"], reason if isinstance(reason, str) else str(reason))
    )


def _calls_turn(
    thought: str, raw_calls: Any, tools: Mapping[str, ToolSpec], verifier: bool, first: int
) -> Turn:
    if isinstance(raw_calls, dict):
        raw_calls = [raw_calls]
    if not isinstance(raw_calls, list) or not raw_calls:
        raise TurnParseError(
            '"calls" must be a non-empty list of {"tool": ..., "input": {...}}', verifier=verifier
        )
    kept, dropped = raw_calls[: bounds.MAX_CALLS_PER_TURN], raw_calls[bounds.MAX_CALLS_PER_TURN :]
    calls = tuple(_read_call(raw, index, tools, verifier, first) for index, raw in enumerate(kept))
    notes: tuple[str, ...] = ()
    if dropped:
        names = [str(raw.get("tool", "?")) if isinstance(raw, dict) else "?" for raw in dropped]
        notes = (dropped_calls_note(names),)
    return Turn(thought=thought, calls=calls, notes=notes)


def _read_call(raw: Any, index: int, tools: Mapping[str, ToolSpec], verifier: bool, first: int) -> ToolCall:
    where = f"call {index + 1}"
    if not isinstance(raw, dict) or not isinstance(raw.get("tool"), str):
        raise TurnParseError(f'{where} must be {{"tool": "<name>", "input": {{...}}}}', verifier=verifier)
    name = aerix_tool_name(raw["tool"])
    if name is None or name not in tools:
        callable_names = ", ".join(tools) or "none"
        raise TurnParseError(
            f"{where}: tool '{raw['tool']}' cannot be called here (tools: {callable_names})",
            verifier=verifier,
        )
    raw_input = raw.get("input", {})
    tool_input = (
        from_claude_input(name, raw_input)
        if isinstance(raw_input, dict) and name != raw["tool"]
        else raw_input
    )
    problem = input_problem(tool_input, tools[name].input_schema)
    if problem:
        raise TurnParseError(f"{where} ({name}): {problem}", verifier=verifier)
    return ToolCall(id=f"c{first + index}", tool=name, input=tool_input)

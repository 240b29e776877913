"""The one request the front serves, whichever wire dialect it came in.

Anthropic's Messages API and OpenAI's Chat Completions API are read into a :class:`ChatRequest`
(:mod:`caldrix.front.anthropic_in`, :mod:`caldrix.front.openai_in`); everything after that —
the prompt's segments, the tool grammar, the generation, the reply's parsing — is shared, and
the reply's events are written back in the request's own dialect. A tool call and a tool
result are text by the time they are here (:mod:`caldrix.front.tool_text`), so a turn is just
a role and a text, which is what a pool segment holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]
ChoiceMode = Literal["auto", "any", "tool", "none"]


@dataclass(frozen=True)
class Tool:
    """A tool the model may call: its name, what it does, and the JSON Schema of its input."""

    name: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class ToolChoice:
    """How the model may use the tools: ``auto`` (text, then zero or more calls), ``any`` (at
    least one call, no text first), ``tool`` (calls of ``name`` only), ``none`` (text only);
    ``parallel`` False allows at most one call."""

    mode: ChoiceMode = "auto"
    name: str | None = None
    parallel: bool = True


@dataclass(frozen=True)
class Turn:
    """One turn of the conversation as the prompt shows it."""

    role: Role
    text: str


@dataclass(frozen=True)
class Sampling:
    """How tokens are chosen; None leaves the pool's default (greedy, no cut-off)."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None


@dataclass(frozen=True)
class ChatRequest:
    """A chat request in the front's own terms."""

    model: str
    system: str
    turns: tuple[Turn, ...]
    max_tokens: int | None
    """What the client asked for; None where its dialect lets it leave the length open."""
    stream: bool = False
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    stop: tuple[str, ...] = ()
    sampling: Sampling = field(default_factory=Sampling)
    json_schema: dict[str, Any] | bool | None = None
    """A JSON Schema the whole answer must match (OpenAI's ``response_format``)."""


@dataclass(frozen=True)
class ToolCall:
    """A call the model made: a fresh id, the tool's name and its input."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """The pool's own figures for one generation: rows computed, rows resumed from the prefix
    store or the live rows, tokens decoded."""

    computed: int
    resumed: int
    output: int

    @property
    def prompt(self) -> int:
        return self.computed + self.resumed


StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use"]


@dataclass(frozen=True)
class Outcome:
    """How a reply ended: the reason in Anthropic's words (each dialect maps it), the stop
    sequence that ended it, the usage, and why the front or the pool cut it short (its bound
    or a guard), if they did."""

    stop_reason: StopReason
    usage: Usage
    stop_sequence: str | None = None
    cut: str | None = None

"""The transcript lines a request leaves in the scrollback, from its session events.

Each agent's turn is its thought and one line per tool call (the tool, its main argument, a
short result); subagents (``a1.c3``, its retries ``a1.c3.r1`` and verifiers ``a1.c3.v1``) are
indented under the call that spawned them; the root's final is Markdown. A call's line is
written when its result arrives, so it holds both; the live region shows the calls still
running (:meth:`Transcript.running`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.text import Text

from aerix.adapters.terminal.theme import CALL_MARK, DIM, EMBER, ERROR, OK, PROMPT_MARK, TURN_MARK
from aerix.domain import events as ev
from aerix.domain.bounds import TURN_RETRIES
from aerix.domain.segments import ROOT_AGENT

#: Columns each level of delegation is indented by.
INDENT: Final = 2
#: A call's main argument and a result are cut to this many characters on their line.
ARGUMENT_MAX_CHARS: Final = 60
RESULT_MAX_CHARS: Final = 50
#: A subagent's final is shown up to this many lines.
SUBAGENT_FINAL_LINES: Final = 3

#: The input field that names what a call is about, by tool.
MAIN_ARGUMENTS: Final[Mapping[str, str]] = {
    "read": "path",
    "write": "path",
    "edit": "path",
    "bash": "command",
    "glob": "pattern",
    "grep": "pattern",
    "plan": "op",
    "context": "op",
    "agent": "brief",
    "skill": "name",
    "web_fetch": "url",
    "web_search": "query",
}
_CALL_LEVEL = re.compile(r"^c\d+$")
_BASH_STATUS = re.compile(r"\[(exit \d+|signal \d+|timeout after [^\]]+|cancelled)\]\s*$")


def depth_of(agent: str) -> int:
    """How many agent calls deep ``agent`` runs: ``a1`` 0, ``a1.c3`` and ``a1.c3.v1`` 1."""
    return sum(1 for part in agent.split(".") if _CALL_LEVEL.match(part))


def main_argument(tool: str, tool_input: Mapping[str, Any]) -> str:
    key = MAIN_ARGUMENTS.get(tool)
    value = tool_input.get(key) if key else None
    if not isinstance(value, str) or not value:
        return ""
    return cut(" ".join(value.split()), ARGUMENT_MAX_CHARS)


def short_result(tool: str, text: str) -> str:
    """A few words on what a call gave back."""
    body = text.split("\n", 1)[1] if text.startswith("[") and "\n" in text else text
    if body.startswith("error:"):
        return cut(body.splitlines()[0], RESULT_MAX_CHARS)
    lines = body.splitlines()
    if tool == "agent":
        return _piece_result(body)
    if tool == "read":
        return f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
    if tool == "bash":
        status = _BASH_STATUS.search(body)
        output = len(lines) - (1 if status else 0)
        head = status.group(1) if status else (lines[0] if lines else "")
        return (
            f"{head} · {output} line{'s' if output != 1 else ''}" if status else cut(head, RESULT_MAX_CHARS)
        )
    if tool in ("glob", "grep") and lines and not lines[0].startswith("no "):
        one, many = ("file", "files") if tool == "glob" else ("match", "matches")
        return f"{len(lines)} {one if len(lines) == 1 else many}"
    return cut(lines[0], RESULT_MAX_CHARS) if lines else "(empty)"


def unchanged_summary(since: str, *, same_turn: bool) -> str:
    """The result of a repeated call that was not run again (its text is a note to the model,
    not output whose lines are worth counting): a twin of a call of its own turn (``same_turn``)
    ran once with it, a repeat of an earlier turn's call was not run again."""
    if same_turn:
        return f"same as {since} in this turn · ran once"
    return f"unchanged since {since} · not run again"


def _piece_result(body: str) -> str:
    """An agent call's JSON result (``{summary, files_touched, checks_run, outcome}``) in a few words."""
    try:
        piece = json.loads(body)
    except ValueError:
        piece = None
    if not isinstance(piece, dict):
        return cut(body.splitlines()[0], RESULT_MAX_CHARS) if body else "(empty)"
    summary = str(piece.get("summary") or "").strip().splitlines()
    outcome = str(piece.get("outcome") or "?")
    return cut(f"{outcome} · {summary[0]}" if summary else outcome, RESULT_MAX_CHARS)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Call:
    agent: str
    tool: str
    argument: str


@dataclass
class Transcript:
    """Turns session events into the lines the scrollback keeps; remembers calls awaiting results."""

    pending: dict[tuple[str, str], _Call] = field(default_factory=dict)
    #: Each agent's latest turn's call ids: a repeat of one of them is a twin in its own turn.
    turn_calls: dict[str, frozenset[str]] = field(default_factory=dict)

    def running(self) -> list[Text]:
        """One line per call still running, for the live region."""
        return [
            _indented(call.agent, _call_text(call.tool, call.argument, None, False, running=True))
            for call in self.pending.values()
        ]

    def lines(self, record: ev.EventBase) -> list[RenderableType]:
        if isinstance(record, ev.Message):
            return self._message(record)
        if isinstance(record, ev.RouteDecision):
            return [Text(f"route {record.choice}", style=DIM)]
        if isinstance(record, ev.AgentSpawn) and record.agent != ROOT_AGENT:
            return [self._spawn(record)]
        if isinstance(record, ev.AgentEnd) and record.agent != ROOT_AGENT:
            return [self._agent_end(record)]
        if isinstance(record, ev.Plan) and record.gate is None:  # a gated plan was shown at the gate
            return [plan_block(record.agent, record.text)]
        if isinstance(record, ev.Compaction):
            count = len(record.replaced)
            tokens = f"{record.tokens_before:,} → ≈{record.tokens_after:,} tokens"
            text = f"compacted {count} segment{'s' if count != 1 else ''} ({tokens})"
            return [_indented(record.agent, Text(text, style=DIM))]
        if isinstance(record, ev.Job) and record.state != "started":
            exit_text = f" {record.exit}" if record.exit is not None else ""
            line = Text(
                f"job {record.job} {record.state}{exit_text} · {cut(record.command, ARGUMENT_MAX_CHARS)}",
                style=DIM,
            )
            return [_indented(record.agent, line)]
        return []

    def _message(self, record: ev.Message) -> list[RenderableType]:
        if record.role == "tool":
            call = self.pending.pop((record.agent, record.call or ""), None)
            tool = record.tool or (call.tool if call else "?")
            argument = call.argument if call else ""
            since = record.unchanged_since
            if since is None:
                result = short_result(tool, record.text)
            else:
                result = unchanged_summary(since, same_turn=since in self.turn_calls.get(record.agent, ()))
            line = _call_text(tool, argument, result, record.is_error)
            return [_indented(record.agent, line)]
        if record.parse_error is not None:
            # The last attempt is not asked again: the agent's failed line follows it.
            again = "; asked again" if record.attempt < TURN_RETRIES else ""
            text = Text(f"turn {record.turn} did not parse: {record.parse_error}{again}", style=EMBER)
            return [_indented(record.agent, text)]
        out: list[RenderableType] = []
        if record.thought:
            out.append(
                _indented(record.agent, Text.assemble((f"{TURN_MARK} ", DIM), (record.thought, "italic")))
            )
        self.turn_calls[record.agent] = frozenset(asked.id for asked in record.calls)
        for asked in record.calls:
            argument = main_argument(asked.tool, asked.input)
            self.pending[(record.agent, asked.id)] = _Call(record.agent, asked.tool, argument)
        if record.final is not None:
            out.append(final_block(record.agent, record.final))
        elif record.verdict is not None:
            style = OK if record.verdict == "pass" else ERROR
            verdict = Text.assemble(
                (f"verdict {record.verdict}", style), f" · {record.reason or ''}".rstrip(" ·")
            )
            out.append(_indented(record.agent, verdict))
        return out

    def _spawn(self, record: ev.AgentSpawn) -> Text:
        who = record.definition or record.kind
        line = Text.assemble(("↳ ", DIM), (record.agent, "bold"), f" {who}")
        if record.brief:
            line.append(f" · {cut(' '.join(record.brief.split()), ARGUMENT_MAX_CHARS)}", style=DIM)
        return _indented(record.agent, line, extra=-1)

    def _agent_end(self, record: ev.AgentEnd) -> Text:
        style = OK if record.outcome == "done" else ERROR
        line = Text.assemble((record.agent, "bold"), " ", (record.outcome, style))
        detail = record.reason or (record.summary.splitlines()[0] if record.summary else "")
        if detail:
            line.append(f" · {cut(detail, ARGUMENT_MAX_CHARS)}", style=DIM)
        return _indented(record.agent, line)


def _call_text(
    tool: str, argument: str, result: str | None, is_error: bool, *, running: bool = False
) -> Text:
    line = Text(f"{CALL_MARK} ", style=DIM)
    line.append(tool, style="bold")
    if argument:
        line.append(f" {argument}")
    if running:
        line.append(" …", style=DIM)
    elif result:
        line.append(" → ", style=DIM)
        line.append(result, style=ERROR if is_error else DIM)
    return line


def _indented(agent: str, line: Text, extra: int = 0) -> Text:
    depth = max(0, depth_of(agent) + extra)
    if not depth:
        return line
    return Text(" " * (INDENT * depth)) + line


def prompt_echo(prompt: str) -> Text:
    """The user's prompt as the transcript keeps it."""
    text = Text(f"{PROMPT_MARK} ", style=f"bold {EMBER}")
    text.append(prompt.rstrip("\n"), style="bold")
    return text


def final_block(agent: str, final: str) -> RenderableType:
    if agent == ROOT_AGENT:
        return Padding(Markdown(final), (1, 0, 0, 0))
    lines = final.strip().splitlines()[:SUBAGENT_FINAL_LINES]
    return _indented(agent, Text.assemble((f"{TURN_MARK} ", DIM), "\n".join(lines)))


def plan_block(agent: str, text: str, title: str = "plan") -> RenderableType:
    head = _indented(agent, Text.assemble((f"{TURN_MARK} ", EMBER), (f"{title} ({agent})", "bold")))
    pad = INDENT * (depth_of(agent) + 1)
    return Group(head, Padding(Text(text.rstrip("\n")), (0, 0, 0, pad)))

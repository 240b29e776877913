"""What the live region shows under the transcript: while a request runs, its status line,
the calls still running and the queued prompts; the context and diff lines whenever they have
figures; a waiting plan's keys; ``/resume``'s list; and a one-line hint."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import RenderableType
from rich.text import Text

from aerix.adapters.terminal.live_lines import Activity, context_line, diff_line, status_line
from aerix.adapters.terminal.theme import DIM, EMBER
from aerix.adapters.terminal.transcript import cut
from aerix.app.ports.diffs import DiffFigures
from aerix.app.ports.screen import StatusView
from aerix.app.ports.sessions import SessionSummary

QUEUED_SHOWN = 3
"""Queued prompts listed by their first line; more are counted."""
PICK_SHOWN = 10
"""``/resume`` lists this many sessions, newest first."""


@dataclass
class LiveState:
    figures: StatusView
    running: bool = False
    activity: Activity = field(default_factory=lambda: Activity(0.0))
    running_calls: Sequence[Text] = ()
    queued: Sequence[str] = ()
    session_diff: DiffFigures | None = None
    gate: bool = False
    gate_edit: bool = False
    picks: Sequence[SessionSummary] = ()
    pick_index: int = 0
    hint: str = ""


def live_lines(state: LiveState, width: int) -> list[RenderableType]:
    lines: list[RenderableType] = []
    figures = state.figures.now()
    if state.running:
        lines.append(status_line(figures, state.activity))
        lines.extend(state.running_calls)
    context = context_line(figures.context, state.activity.streaming_tokens)
    if context is not None:
        lines.append(context)
    diff = diff_line(state.session_diff or figures.diff, figures.verifier)
    if diff is not None:
        lines.append(diff)
    for prompt in state.queued[:QUEUED_SHOWN]:
        lines.append(
            Text.assemble(("queued ", DIM), cut(prompt.strip().splitlines()[0], max(10, width - 10)))
        )
    if len(state.queued) > QUEUED_SHOWN:
        lines.append(Text(f"… {len(state.queued) - QUEUED_SHOWN} more queued", style=DIM))
    if state.gate:
        lines.append(_gate_keys())
    if state.gate_edit:
        lines.append(Text("editing the plan: enter keeps it · ctrl-j newline · esc back", style=EMBER))
    if state.picks:
        lines.extend(_picker(state.picks, state.pick_index, width))
    if state.hint:
        lines.append(Text(state.hint, style=DIM))
    return lines


def _gate_keys() -> Text:
    return Text.assemble(
        ("plan waiting · ", EMBER),
        ("enter", "bold"),
        (" accept · ", DIM),
        ("e", "bold"),
        (" edit · ", DIM),
        ("esc", "bold"),
        (" abort", DIM),
    )


def _picker(entries: Sequence[SessionSummary], index: int, width: int) -> list[Text]:
    lines = [Text("resume which session? ↑ ↓ · enter · esc", style=EMBER)]
    for number, entry in enumerate(entries[:PICK_SHOWN]):
        mark = "›" if number == index else " "
        when = entry.updated.astimezone().strftime("%Y-%m-%d %H:%M") if entry.updated else "-"
        title = cut(entry.listed_title, max(10, width - 36))
        style = "bold" if number == index else ""
        lines.append(Text(f"{mark} {entry.id[:8]}  {when}  {entry.requests:>2}  {title}", style=style))
    return lines

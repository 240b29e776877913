"""The live region's lines, from the status figures (the status projection, read through
``aerix.app.ports.screen.StatusView.now``).

- status: the thinking icon, the elapsed seconds, the root's turn against its budget, the tool
  calls of every agent, the queued prompts; ``cancelling…`` after Esc. Headless runs on a
  terminal show this same line on stderr (:mod:`aerix.adapters.terminal.stderr_status`).
- context: the pool's figures for the root (``≈`` after a compaction until the pool reports
  again); absent until one of them reports.
- diff: added and removed lines and files against the session's start commit, once a file
  differs; with the verifier's state when one has run.
- stats: committed when a request finishes without an error: completion tokens, their rate
  (``–`` when too little streamed), the request's duration and the local time it ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rich.text import Text

from aerix.adapters.terminal.startup_block import format_secs
from aerix.adapters.terminal.theme import (
    DIFF_ADDED,
    DIFF_REMOVED,
    DIM,
    EMBER,
    ERROR,
    OK,
    THINKING_FRAME_SECS,
    THINKING_FRAMES,
)
from aerix.app.ports.diffs import DiffFigures
from aerix.app.ports.screen import ContextFigures, StatsFigures, StatusNow

_SEP = " · "


@dataclass(frozen=True)
class Activity:
    """What the status line adds to the figures: the clock's and the screen's own state."""

    elapsed_secs: float
    queued: int = 0
    cancelling: bool = False
    #: Tokens of the generations streaming now (token frames received), beside the pool's
    #: figures of the finished ones; headless runs show them, the screen does too.
    streaming_tokens: int = 0


def thinking_icon(elapsed_secs: float) -> str:
    frame = int(elapsed_secs / THINKING_FRAME_SECS) % len(THINKING_FRAMES)
    return THINKING_FRAMES[frame]


def status_line(figures: StatusNow, activity: Activity) -> Text:
    line = Text()
    line.append(thinking_icon(activity.elapsed_secs), style=EMBER)
    line.append(f" {int(activity.elapsed_secs)}s")
    budget = f"/{figures.root_max_turns}" if figures.root_max_turns else ""
    _part(line, f"turn {figures.root_turn}{budget}")
    calls = figures.tool_calls
    _part(line, f"{calls} tool call{'s' if calls != 1 else ''}")
    if activity.queued:
        _part(line, f"{activity.queued} queued", EMBER)
    if activity.cancelling:
        _part(line, "cancelling…", EMBER)
    return line


def context_line(context: ContextFigures | None, streaming_tokens: int = 0) -> Text | None:
    """``context 1,893 / 8,192 tokens (23%)``; None until the pool has reported."""
    if context is None:
        return None
    tokens = context.tokens + (0 if context.approximate else streaming_tokens)
    approx = "≈" if context.approximate else ""
    line = Text("context ", style=DIM)
    line.append(f"{approx}{tokens:,}")
    if context.window:
        line.append(f" / {context.window:,} tokens", style=DIM)
        line.append(f" ({100 * tokens // context.window}%)", style=DIM)
    else:
        line.append(" tokens", style=DIM)
    return line


def diff_line(diff: DiffFigures | None, verifier: str | None) -> Text | None:
    """``diff +12 −3 · 2 files · verifier passed``; None while no file differs and no verifier ran."""
    if diff is None or not diff.files:
        if verifier is None:
            return None
        return Text.assemble(("verifier ", DIM), _verifier(verifier))
    line = Text("diff ", style=DIM)
    line.append(f"+{diff.added}", style=DIFF_ADDED)
    line.append(" ")
    line.append(f"−{diff.removed}", style=DIFF_REMOVED)
    _part(line, f"{diff.files} file{'s' if diff.files != 1 else ''}")
    if verifier is not None:
        line.append(_SEP, style=DIM)
        line.append("verifier ", style=DIM)
        line.append_text(_verifier(verifier))
    return line


def _verifier(state: str) -> Text:
    style = {"passed": OK, "failed": ERROR}.get(state, EMBER)
    return Text(state, style=style)


def stats_line(stats: StatsFigures) -> Text:
    """``41 tokens · 12.3 tok/s · 14.2 s · 19:03:44``; the rate is ``–`` when too little streamed."""
    rate = f"{stats.rate:.1f} tok/s" if stats.rate is not None else "– tok/s"
    line = Text(f"{stats.completion_tokens:,} tokens", style=DIM)
    _part(line, rate, DIM)
    _part(line, format_secs(stats.duration_secs), DIM)
    _part(line, local_clock(stats.finished_at), DIM)
    return line


def local_clock(moment: datetime) -> str:
    return moment.astimezone().strftime("%H:%M:%S")


def _part(line: Text, text: str, style: str = "") -> None:
    line.append(_SEP, style=DIM)
    line.append(text, style=style)

"""Terminal rendering of sessions (rich): the list, and the readable replay of ``show``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from aerix.app.ports.sessions import SessionSummary
from aerix.domain import events as ev
from aerix.domain.pieces import agent_depth

LIST_COLUMNS = ("id", "updated", "state", "req", "model", "tags", "title")
"""``sessions list``'s columns: the narrow fixed ones first, the title last, taking what is left."""
_MAX_WIDTHS = {"id": 8, "model": 14, "tags": 10}
TITLE_MIN_WIDTH = 8
"""With the other columns at their caps, the title still fits 80 columns."""
TITLE_MAX_WIDTH = 40
_GAP = "  "
_STATE_STYLES = {"done": "green", "failed": "red", "killed": "red", "budget": "yellow", "cancelled": "yellow"}
SHOW_TEXT_MAX_CHARS = 300
"""A replayed segment or result shows at most this much of its text."""
SHOW_INDENT = "  "
"""How far each level of delegation is indented in ``show``."""


def local_time(stamp: str | datetime | None) -> str:
    if stamp is None:
        return "-"
    moment = datetime.fromisoformat(stamp) if isinstance(stamp, str) else stamp
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def render_list(console: Console, entries: Sequence[SessionSummary]) -> None:
    """One line a session, never wrapped: the columns before the title are as wide as their
    longest cell (model and tags capped), and the title gets the rest of the console's width
    (80 in a pipe), cut with an ellipsis, so the state stays whole on any terminal."""
    rows = [
        {
            "id": entry.id[:8],
            "updated": local_time(entry.updated),
            "state": entry.state,
            "req": str(entry.requests),
            "model": entry.model,
            "tags": ",".join(entry.tags),
            "title": entry.listed_title,
        }
        for entry in entries
    ]
    columns = [name for name in LIST_COLUMNS if name != "tags" or any(row["tags"] for row in rows)]
    widths = {name: max(len(name), *(cell_len(row[name]) for row in rows)) for name in columns}
    widths.update((name, min(widths[name], cap)) for name, cap in _MAX_WIDTHS.items() if name in widths)
    before_title = sum(widths[name] for name in columns if name != "title") + len(_GAP) * (len(columns) - 1)
    room = console.width - before_title
    widths["title"] = max(TITLE_MIN_WIDTH, min(TITLE_MAX_WIDTH, room, widths["title"]))
    header = Text(style="bold")
    for name in columns:
        header.append_text(_cell(name, widths[name], last=name == columns[-1]))
    console.print(header, no_wrap=True, soft_wrap=True)
    for row in rows:
        line = Text()
        for name in columns:
            style = _STATE_STYLES.get(row[name], "") if name == "state" else ""
            line.append_text(_cell(row[name], widths[name], last=name == columns[-1], style=style))
        console.print(line, no_wrap=True, soft_wrap=True)


def _cell(text: str, width: int, last: bool, style: str = "") -> Text:
    cell = Text(" ".join(text.split()), style=style)
    cell.truncate(width, overflow="ellipsis", pad=not last)
    if not last:
        cell.append(_GAP)
    return cell


def render_replay(console: Console, session_id: str, records: list[ev.EventBase]) -> None:
    """Every event, one line each; a piece's agents are indented under the call that spawned
    them, one step per level of delegation."""
    console.print(Text(f"session {session_id} · {len(records)} events", style="bold"))
    for record in records:
        if isinstance(record, ev.Segment) and record.kind in ("assistant", "tool_result"):
            continue  # the message event right beside it shows the same text
        agent = getattr(record, "agent", None)
        indent = SHOW_INDENT * agent_depth(agent) if isinstance(agent, str) else ""
        head = Text(f"{record.seq:>5} {local_time(record.time)[11:]} {indent}", style="dim")
        head.append(_describe(record))
        console.print(head)


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOW_TEXT_MAX_CHARS else flat[: SHOW_TEXT_MAX_CHARS - 1] + "…"


def _describe(record: ev.EventBase) -> Text:
    if isinstance(record, ev.SessionStart):
        where = f"request {record.request}" + (" (resumed)" if record.resumed else "")
        return Text(f"▶ {where} · {record.model} · {_cut(record.prompt)}", style="bold cyan")
    if isinstance(record, ev.RouteDecision):
        return Text(f"route → {record.choice}", style="magenta")
    if isinstance(record, ev.AgentSpawn):
        brief = f" · {_cut(record.brief)}" if record.brief and record.kind != "verifier" else ""
        via = f" on {record.member}" if record.kind != "root" else ""
        return Text(f"{record.agent} spawned ({record.kind}{via}){brief}")
    if isinstance(record, ev.Segment):
        pin = " 📌" if record.pinned else ""
        tokens = f" {record.tokens} tok" if record.tokens is not None else ""
        line = f"{record.agent} + {record.kind} {record.id}{tokens}{pin}: {_cut(record.text)}"
        return Text(line, style="dim")
    if isinstance(record, ev.Message):
        return _describe_message(record)
    if isinstance(record, ev.Hook):
        return _describe_hook(record)
    if isinstance(record, ev.AgentEnd):
        verdict = f" (verdict {record.verdict})" if record.verdict else ""
        reason = f": {record.reason}" if record.reason else ""
        return Text(f"{record.agent} ended {record.outcome}{verdict}{reason}")
    if isinstance(record, ev.SessionEnd):
        return Text(f"■ request ended {record.outcome} (exit {record.exit_code})", style="bold")
    return Text(f"{record.type} {_cut(record.model_dump_json(exclude={'type', 'seq', 'time', 'v'}))}")


_HOOK_STYLES = {"ok": "blue", "blocked": "yellow", "error": "red", "timeout": "red"}


def _describe_hook(record: ev.Hook) -> Text:
    """``hook PreToolUse[Bash] ./guard.sh → blocked deny (exit 2, 12 ms): no rm -rf``."""
    matcher = f"[{record.matcher}]" if record.matcher else ""
    status = f"exit {record.exit}" if record.exit is not None else record.outcome
    timing = f", {record.duration_ms:.0f} ms" if record.duration_ms is not None else ""
    decision = f" {record.decision}" if record.decision else ""
    stop = " continue: false" if record.stop else ""
    reason = f": {_cut(record.reason)}" if record.reason else ""
    who = f"{record.agent} " if record.agent else ""
    line = (
        f"{who}hook {record.event}{matcher} {_cut(record.command or '')} → {record.outcome}{decision}{stop}"
    )
    return Text(f"{line} ({status}{timing}){reason}", style=_HOOK_STYLES[record.outcome])


def _describe_message(record: ev.Message) -> Text:
    if record.role == "tool":
        style = "red" if record.is_error else "green"
        return Text(f"{record.agent} ← {record.tool} {record.call}: {_cut(record.text)}", style=style)
    tokens = f" ({record.usage.prompt_tokens}+{record.usage.completion_tokens} tok)" if record.usage else ""
    if record.parse_error is not None:
        line = f"{record.agent} turn {record.turn}{tokens} did not parse: {record.parse_error}"
        return Text(line, style="yellow")
    parts = [f"{record.agent} turn {record.turn}{tokens}"]
    if record.thought:
        parts.append(f"· {_cut(record.thought)}")
    parts.extend(f"→ {call.tool}({_cut(str(call.input))})" for call in record.calls)
    if record.final is not None:
        parts.append(f"⇒ {_cut(record.final)}")
    if record.verdict is not None:
        parts.append(f"verdict {record.verdict}: {record.reason or ''}")
    return Text(" ".join(parts))

"""The startup block under the launch frame: what startup found and bound, its notes, and
``✓ ready in <time>``.

Rows: ``pool`` (the main model, its lane, the CPU lane's threads when the pool knows them, the
decision member, the socket), ``profile``, ``loaded`` (instruction files, skills, agents, plugins,
hooks) and ``session`` (its id, new or resumed); then one row per startup note with its level's
mark (:data:`aerix.adapters.terminal.theme.NOTE_MARKS`), and the ready line last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from aerix.adapters.terminal.launch import home_relative
from aerix.adapters.terminal.theme import DIM, NOTE_MARKS, OK, READY_MARK
from aerix.app.ports.screen import StartupNote
from aerix.domain.profile import short_commit

#: The profile row when no profile could be opened.
EMBEDDED_PROMPTS: Final = "embedded prompts"


def profile_text(profile: Mapping[str, Any] | None) -> str:
    """The profile row from the startup listing's ``profile``: the profile, its model branch, the
    session's commit and how many embedded prompts that commit tunes (left out when its
    ``upstream.json`` does not parse); :data:`EMBEDDED_PROMPTS` without a profile."""
    if not profile:
        return EMBEDDED_PROMPTS
    parts = [str(profile["name"]), str(profile.get("model_branch") or "")]
    commit = profile.get("commit")
    if commit:
        parts.append(short_commit(str(commit)))
    tuned = profile.get("tuned")
    if tuned is not None:
        parts.append(f"{tuned} tuned")
    return " · ".join(part for part in parts if part)


@dataclass(frozen=True)
class StartupView:
    """The figures of the block, as startup found them."""

    model: str
    lane: str
    socket: Path
    session: str
    resumed: bool = False
    forked_from: str | None = None  # the session a fork copies (--fork-session)
    threads: int | None = None
    decision: str | None = None
    profile: str = EMBEDDED_PROMPTS
    instruction_files: int = 0
    skills: int = 0
    agents: int = 0
    plugins: int = 0
    hooks: int = 0
    notes: Sequence[StartupNote] = field(default=())
    ready_secs: float | None = None  # None while startup still runs
    home: Path | None = None


def startup_block(view: StartupView) -> RenderableType:
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style=DIM, no_wrap=True)
    rows.add_column()
    rows.add_row("pool", pool_row(view))
    rows.add_row("profile", Text(view.profile))
    rows.add_row("loaded", loaded_row(view))
    state = f"forked from {view.forked_from}" if view.forked_from else "resumed" if view.resumed else "new"
    rows.add_row("session", Text.assemble((view.session, "bold"), " ", (state, DIM)))
    parts: list[RenderableType] = [rows]
    parts += [note_row(note) for note in view.notes]
    if view.ready_secs is not None:
        parts.append(ready_line(view.ready_secs))
    return Group(*parts)


def pool_row(view: StartupView) -> Text:
    parts = [Text(view.model, style="bold"), Text(f"{view.lane} lane")]
    if view.lane == "cpu" and view.threads:
        parts.append(Text(f"{view.threads} thread{'s' if view.threads != 1 else ''}"))
    if view.decision:
        parts.append(Text(f"decision {view.decision}"))
    parts.append(Text(home_relative(view.socket, view.home), style=DIM))
    return _joined(parts)


def loaded_row(view: StartupView) -> Text:
    counts = (
        (view.instruction_files, "instruction file", "instruction files"),
        (view.skills, "skill", "skills"),
        (view.agents, "agent", "agents"),
        (view.plugins, "plugin", "plugins"),
        (view.hooks, "hook", "hooks"),
    )
    return _joined([Text(f"{count} {one if count == 1 else many}") for count, one, many in counts])


def _joined(parts: list[Text]) -> Text:
    line = Text()
    for index, part in enumerate(parts):
        if index:
            line.append(" · ", style=DIM)
        line.append_text(part)
    return line


def note_row(note: StartupNote) -> Text:
    mark, style = NOTE_MARKS[note.level]
    return Text.assemble((mark, style), " ", (note.text, style if note.level == "error" else ""))


def ready_line(secs: float) -> Text:
    return Text.assemble((READY_MARK, OK), f" ready in {format_secs(secs)}")


def format_secs(secs: float) -> str:
    """A duration the way the screen writes it: ``0.4 s``, ``12.3 s``, ``2 m 05 s``."""
    if secs < 60:
        return f"{secs:.1f} s"
    minutes, rest = divmod(round(secs), 60)
    return f"{minutes} m {rest:02d} s"

"""The launch frame: the peak mark beside the AERIX wordmark, an info line and a hints line.

The frame narrows with the terminal: the mark beside the wordmark from
:data:`MARK_MIN_WIDTH` columns, the wordmark alone from :data:`WORDMARK_MIN_WIDTH`, the word
``aerix`` below that. It is drawn inside a rounded border no wider than
:data:`FRAME_MAX_WIDTH`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from aerix.adapters.terminal.theme import DIM, EMBER, SNOW

MARK_MIN_WIDTH: Final = 72
WORDMARK_MIN_WIDTH: Final = 58
FRAME_MAX_WIDTH: Final = 80
#: Columns between the mark and the wordmark.
MARK_GAP: Final = 3

#: The peak: a summit with its snow cap and a lower shoulder to the right. The first
#: PEAK_SNOW_ROWS rows are snow, the rest ember.
PEAK: Final = (
    "      ▗▄▖       ",
    "     ▟███▙      ",
    "    ▟█████▙ ▗▄▖ ",
    "   ▟███████▙███▙",
    "  ▟█████████████",
)
PEAK_SNOW_ROWS: Final = 2
WORDMARK: Final = (
    " ▄███▄  ███████ ██████▄  ██ ██   ██",
    "██▀ ▀██ ██      ██   ██  ██  ██ ██ ",
    "███████ █████   ██████▀  ██   ███  ",
    "██   ██ ██      ██  ▀██  ██  ██ ██ ",
    "██   ██ ███████ ██   ██  ██ ██   ██",
)


@dataclass(frozen=True)
class LaunchInfo:
    """What the info line names."""

    model: str
    lane: str
    window: int
    cwd: Path
    version: str
    resumed: bool = False
    home: Path | None = None  # written ``~`` in the working directory; None: the user's home


#: The hints line: the keys and commands a first look needs (``?`` shows them all).
HINTS: Final = (
    ("enter", "send"),
    ("ctrl-j", "newline"),
    ("esc", "cancel"),
    ("/help", ""),
    ("?", "keys"),
)


def launch_frame(info: LaunchInfo, width: int) -> RenderableType:
    """The frame for a terminal ``width`` columns wide."""
    frame_width = min(width, FRAME_MAX_WIDTH)
    body = Group(_art(width), Text(), info_line(info), hints_line())
    return Panel(body, width=frame_width, border_style=DIM, padding=(0, 1))


def _art(width: int) -> Text:
    if width < WORDMARK_MIN_WIDTH:
        return Text("aerix", style=f"bold {EMBER}")
    art = Text(no_wrap=True, overflow="crop")
    for row, word in enumerate(WORDMARK):
        if row:
            art.append("\n")
        if width >= MARK_MIN_WIDTH:
            art.append(PEAK[row], style=SNOW if row < PEAK_SNOW_ROWS else EMBER)
            art.append(" " * MARK_GAP)
        art.append(word.rstrip(), style=SNOW)
    return art


def home_relative(path: Path, home: Path | None = None) -> str:
    """``path`` with the home directory written ``~``."""
    home = home if home is not None else Path.home()
    try:
        rest = path.relative_to(home)
    except ValueError:
        return str(path)
    return "~" if rest == Path() else f"~/{rest.as_posix()}"


def info_line(info: LaunchInfo) -> Text:
    parts = [
        (info.model, "bold"),
        (info.lane, ""),
        (f"{info.window:,} tokens", ""),
        (home_relative(info.cwd, info.home), ""),
        (f"aerix {info.version}", DIM),
    ]
    if info.resumed:
        parts.append(("resumed", EMBER))
    return _joined(parts)


def hints_line() -> Text:
    line = Text()
    for index, (key, what) in enumerate(HINTS):
        if index:
            line.append(" · ", style=DIM)
        line.append(key, style="bold")
        if what:
            line.append(f" {what}", style=DIM)
    return line


def _joined(parts: list[tuple[str, str]]) -> Text:
    line = Text()
    for index, (text, style) in enumerate(parts):
        if index:
            line.append(" · ", style=DIM)
        line.append(text, style=style)
    return line

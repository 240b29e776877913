"""The blocks the screen prints at its moments: the opening (frame and startup block), a
startup that failed, and the end of a request (its outcome, diff, notes and stats line)."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.text import Text

from aerix.adapters.terminal.diff_view import diff_text
from aerix.adapters.terminal.launch import LaunchInfo, launch_frame
from aerix.adapters.terminal.live_lines import stats_line
from aerix.adapters.terminal.startup_block import StartupView, profile_text, startup_block
from aerix.adapters.terminal.theme import EMBER, ERROR, OK
from aerix.app.ports.request import RequestResult
from aerix.app.ports.screen import Opening, StatusView


def launch_info(opening: Opening, version: str) -> LaunchInfo:
    main = opening.main
    return LaunchInfo(main.model, main.lane, main.n_ctx, opening.cwd, version, opening.resumed)


def startup_view(opening: Opening) -> StartupView:
    main, decision = opening.main, opening.decision
    listing = opening.listing
    return StartupView(
        model=main.model,
        lane=main.lane,
        socket=opening.socket,
        session=opening.session_id,
        resumed=opening.resumed,
        forked_from=opening.forked_from,
        threads=main.threads,
        decision=decision.model if decision else None,
        profile=profile_text(listing.get("profile")),
        instruction_files=len(listing.get("instruction_files", ())),
        skills=len(listing.get("skills", ())),
        agents=len(listing.get("agents", ())),
        plugins=sum(1 for plugin in listing.get("plugins", ()) if plugin.get("enabled")),
        hooks=len(listing.get("hooks", ())),
        notes=opening.notes,
        ready_secs=opening.ready_secs,
    )


def opening_blocks(opening: Opening, version: str, width: int) -> list[RenderableType]:
    return [_Frame(launch_info(opening, version)), startup_block(startup_view(opening))]


class _Frame:
    """The launch frame, laid out anew for the width of each console it is printed on (a
    resize redraws it at the new width)."""

    def __init__(self, info: LaunchInfo) -> None:
        self.info = info

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield launch_frame(self.info, options.max_width)


def startup_failed_block(line: str) -> RenderableType:
    return Text.assemble(("✗ ", ERROR), line)


def finished_lines(result: RequestResult, figures: StatusView) -> list[RenderableType]:
    """What a finished request leaves: its outcome when not done, its diff, its notes, and the
    stats line when it ended without an error."""
    lines: list[RenderableType] = []
    if result.outcome == "cancelled":
        lines.append(Text(f"cancelled · {result.reason or 'by esc'}", style=EMBER))
    elif result.outcome != "done":
        lines.append(Text(f"✗ {result.outcome}: {result.reason or 'no reason given'}", style=ERROR))
    diff = diff_text(result.diff)
    if diff is not None:
        lines.append(Text())
        lines.append(diff)
    lines += [Text.assemble(("▲ ", EMBER), note) for note in result.notes]
    stats = figures.now().stats
    if result.outcome == "done" and result.exit_code == 0 and stats is not None:
        lines.append(Text.assemble(("✓ ", OK), stats_line(stats)))
    return lines

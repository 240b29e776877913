"""``aerix sessions show``'s replay, rendered into a string console and compared line by line:
a piece's agents are indented under the call that spawned them."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from rich.console import Console

from aerix.adapters.console.session_render import render_list, render_replay
from aerix.domain import events as ev
from aerix.projections.index import IndexEntry

T = datetime(2026, 3, 1, 9, 12, 40, tzinfo=UTC)


def test_pieces_are_indented_one_step_per_level_of_delegation() -> None:
    records: list[ev.EventBase] = [
        ev.AgentSpawn(seq=1, time=T, agent="a1", kind="root"),
        ev.AgentSpawn(
            seq=2, time=T, agent="a1.c1", parent="a1", kind="implementer", member="main", brief="fix"
        ),
        ev.AgentSpawn(seq=3, time=T, agent="a1.c1.c2", parent="a1.c1", kind="implementer", member="main"),
        ev.AgentEnd(seq=4, time=T, agent="a1.c1.c2", outcome="done"),
        ev.AgentSpawn(
            seq=5, time=T, agent="a1.c1.v1", parent="a1", kind="verifier", member="big", brief="fix"
        ),
        ev.AgentEnd(seq=6, time=T, agent="a1.c1.v1", outcome="done", verdict="pass"),
        ev.AgentEnd(seq=7, time=T, agent="a1", outcome="budget", reason="the turn budget ran out (2 turns)"),
    ]
    out = io.StringIO()
    render_replay(Console(file=out, width=200, color_system=None), "s1", records)
    clock = T.astimezone().strftime("%H:%M")
    assert [line[len(f"{1:>5} {clock} ") :] for line in out.getvalue().splitlines()[1:]] == [
        "a1 spawned (root)",
        "  a1.c1 spawned (implementer on main) · fix",
        "    a1.c1.c2 spawned (implementer on main)",
        "    a1.c1.c2 ended done",
        "  a1.c1.v1 spawned (verifier on big)",
        "  a1.c1.v1 ended done (verdict pass)",
        "a1 ended budget: the turn budget ran out (2 turns)",
    ]


def test_the_list_keeps_every_state_whole_at_80_columns_and_cuts_the_title() -> None:
    entries = [
        IndexEntry(
            id="5e551on-0001",
            updated=T,
            title="Explain the parser of the configuration files in detail",
            model="qwen2.5-coder-1.5b-instruct",
            requests=12,
            state="cancelled",
            tags=["refactor", "parser"],
        ),
        IndexEntry(
            id="5e551on-0002", updated=T, title="short", model="smollm2-135m", requests=1, state="done"
        ),
    ]
    out = io.StringIO()
    render_list(Console(file=out, width=80, color_system=None), entries)
    when = T.astimezone().strftime("%Y-%m-%d %H:%M")
    assert out.getvalue().splitlines() == [
        "id        updated           state      req  model           tags        title",
        f"5e551on-  {when}  cancelled  12   qwen2.5-coder…  refactor,…  Explain…",
        f"5e551on-  {when}  done       1    smollm2-135m                short",
    ]
    entries[0].requests = 999  # every fixed column at its widest: the title still fits
    widest = io.StringIO()
    render_list(Console(file=widest, width=80, color_system=None), entries)
    assert max(len(line) for line in widest.getvalue().splitlines()) == 80
    wide = io.StringIO()
    render_list(Console(file=wide, width=120, color_system=None), entries[1:])
    assert wide.getvalue().splitlines() == [
        "id        updated           state  req  model         title",
        f"5e551on-  {when}  done   1    smollm2-135m  short",
    ]

"""Routing against the real daemon with scripted members: the ``one_of`` constraint when the
router declares it, the fallback to ``edit`` when an unconstrained answer matches no shape, and
the ``route`` event written to a real session log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.pool.client import CaldrixPool, client_bounds
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.app.ports.pool import GenerationDone, GenerationTimings
from aerix.app.request.routing import FALLBACK_ROUTE, choice_of, route_request
from aerix.domain import events as ev
from aerix.domain.settings import PoolSettings
from caldrix.protocol import connect
from caldrix.protocol.messages import PoolStatusResult
from tests.aerix.agent_harness import load_member, new_writer, unload_member
from tests.caldrix.pool_harness import PoolProcess

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def pool_status(socket: Path) -> PoolStatusResult:
    client = await connect(socket, bounds=client_bounds(PoolSettings()))
    try:
        return await client.pool_status()
    finally:
        await client.aclose()


async def _route(
    pool: CaldrixPool, socket: Path, folder: Path, answer: str, constraints: list[str] | None
) -> tuple[Any, list[ev.RouteDecision]]:
    member, _window = await load_member(pool, folder, [answer], constraints=constraints)
    writer = new_writer(folder, folder)
    try:
        [info] = [m for m in await pool.members.loaded() if m.name == member]
        choice = await route_request(
            pool,
            member,
            "Rename parse to parse_cli.",
            EmbeddedPrompts(),
            writer,
            one_of="one_of" in info.constraints,
        )
        lines = writer.log_path.read_text(encoding="utf-8").splitlines()
    finally:
        writer.close()
        await unload_member(socket, member)
    events = [ev.parse_event(json.loads(line)) for line in lines]
    routes = [event for event in events if isinstance(event, ev.RouteDecision)]
    return choice, routes


async def test_an_answer_matching_no_shape_routes_edit(
    pool: CaldrixPool, pool_process: PoolProcess, tmp_path: Path
) -> None:
    """A router without ``one_of`` is asked unconstrained; "banana" is no shape, so ``edit``."""
    choice, [route] = await _route(pool, pool_process.socket_path, tmp_path, "banana", ["json", "regex"])
    assert (choice.choice, choice.raw) == (FALLBACK_ROUTE, "banana") == ("edit", "banana")
    assert (route.choice, route.raw, route.member) == ("edit", "banana", choice.member)
    assert (await pool_status(pool_process.socket_path)).contexts == 0


async def test_a_router_with_one_of_is_constrained_and_scored(
    pool: CaldrixPool, pool_process: PoolProcess, tmp_path: Path
) -> None:
    """Under ``one_of`` a script that breaks it still comes out as one of the four shapes."""
    choice, [route] = await _route(pool, pool_process.socket_path, tmp_path, "plan it", None)
    assert choice.choice == "plan" and choice.raw is None
    assert route.choice == "plan" and "plan" in route.scores


def test_the_choice_is_read_case_and_space_blind() -> None:
    done = GenerationDone(" Investigate\n", "stop", 10, 2, 0, GenerationTimings())
    assert (choice_of(done).choice, choice_of(done).raw) == ("investigate", None)
    assert choice_of(GenerationDone("edits", "length", 10, 8, 0, GenerationTimings())).choice == "edit"

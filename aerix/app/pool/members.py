"""Opening the pool for a use case and binding its members: ``pool_session`` opens the pool
(finding or starting it), binds ``main`` and a configured ``decision`` member, and closes it
again however the body ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from aerix.app.ports.pool import MemberInfo, OpenedPool, PoolPort, PoolStarter
from aerix.domain.settings import PoolSettings
from aerix.errors import PoolError
from caldrix.protocol import DECISION_MEMBER, MAIN_MEMBER


@dataclass(frozen=True)
class BoundMembers:
    """The members this run uses: ``main`` runs every agent; ``decision`` routes when loaded."""

    main: MemberInfo
    decision: MemberInfo | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def router(self) -> MemberInfo:
        return self.decision or self.main


async def bind_members(pool: PoolPort, settings: PoolSettings) -> BoundMembers:
    """Make sure ``main`` is ready (loading it when the pool has none) and load a configured
    ``decision`` member. A decision member that cannot be loaded is a note: main routes."""
    members = {member.name: member for member in await pool.members.loaded()}
    notes: list[str] = []
    main = members.get(MAIN_MEMBER)
    if main is None:
        main = await pool.members.load(MAIN_MEMBER, settings.main, settings.main_flags.as_load_flags())
    if main.state != "ready":
        raise PoolError(
            f"the pool's main member ({main.model}) is {main.state}; stop the pool with "
            "'caldrix pool stop' and start again",
            code="member_not_ready",
        )
    if main.model != settings.main:
        notes.append(
            f"the running pool serves {main.model} as main, not {settings.main} (pool.main); "
            "'caldrix pool stop' lets the next request start the configured model"
        )
    decision = members.get(DECISION_MEMBER)
    if settings.decision is not None and decision is None:
        try:
            decision = await pool.members.load(
                DECISION_MEMBER, settings.decision, settings.decision_flags.as_load_flags()
            )
        except PoolError as exc:
            notes.append(f"decision member {settings.decision} not loaded ({exc}); main routes")
    if decision is not None and decision.state != "ready":
        decision = None
    return BoundMembers(main, decision, tuple(notes))


@dataclass(frozen=True)
class BoundPool:
    """An open pool with its members bound."""

    opened: OpenedPool
    members: BoundMembers

    @property
    def pool(self) -> PoolPort:
        return self.opened.pool


@asynccontextmanager
async def pool_session(pools: PoolStarter, settings: PoolSettings) -> AsyncIterator[BoundPool]:
    """The pool opened and its members bound for the body; closed after it, even when the body
    is cancelled."""
    opened = await pools.open(settings)
    try:
        yield BoundPool(opened, await bind_members(opened.pool, settings))
    finally:
        with anyio.CancelScope(shield=True):
            await opened.aclose()

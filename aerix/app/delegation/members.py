"""Which pool member a piece runs on (spec, "Members and roles").

``main`` runs every agent unless the agent call's ``member`` or the definition's ``model``
names another. A name is looked up among the loaded members, by member name first and then by
model; a model reference that is not loaded is loaded with ``member.load`` under that name
(the pool's fit rules apply). Anything that keeps the member from serving — a ``no_fit``, a
model that cannot be found, a member that failed — is ``MemberUnavailable`` with the pool's one
line, which the piece reports as its failure. Claude Code's own model names in a definition
(``sonnet``, ``inherit`` …) mean the caller's member.
"""

from __future__ import annotations

import anyio

from aerix.app.ports.pool import MemberInfo, PoolPort
from aerix.domain.pieces import CALLER_MODEL_ALIASES
from aerix.errors import PoolError


class MemberUnavailable(Exception):
    """The member a piece asked for cannot serve it; the message is one line."""


class MemberPicker:
    """Finds (or loads) the members the pieces of one request ask for."""

    def __init__(self, pool: PoolPort) -> None:
        self.pool = pool
        # One look-up or load at a time: two pieces naming the same new model load it once.
        self._lock = anyio.Lock()

    async def pick(self, wanted: str | None, caller_member: str) -> MemberInfo:
        name = caller_member if wanted is None or wanted.strip() in CALLER_MODEL_ALIASES else wanted.strip()
        async with self._lock:
            members = await self.pool.members.loaded()
            found = next((m for m in members if m.name == name), None)
            found = found or next((m for m in members if m.model == name and m.state == "ready"), None)
            if found is not None:
                if found.state != "ready":
                    raise MemberUnavailable(f"member {name} is {found.state}, not ready")
                return found
            if name == caller_member:
                raise MemberUnavailable(f"the caller's member {name} is no longer loaded")
            try:
                return await self.pool.members.load(name, name)
            except PoolError as exc:
                raise MemberUnavailable(f"member {name} could not be loaded: {exc}") from exc

"""Helpers for the delegation tests: agent calls and verdicts as a model writes them, a pool
adapter that keeps each context as the pool held it just before it was dropped, and the checks
that the log rebuilds every agent's context."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from aerix.adapters.pool.client import CaldrixContexts, CaldrixPool, client_bounds
from aerix.domain import events as ev
from aerix.domain.settings import PoolSettings
from aerix.projections.contexts import contexts_at
from caldrix.protocol import connect

Call = tuple[str, dict[str, Any]]


def agent_call(brief: str, check: str, **extra: str) -> Call:
    return ("agent", {"brief": brief, "check": check, **extra})


def verdict(thought: str, passed: bool, reason: str) -> str:
    """A verifier's final, as a model writes it."""
    return json.dumps(
        {"thought": thought, "final": {"verdict": "pass" if passed else "fail", "reason": reason}}
    )


class KeepingContexts(CaldrixContexts):
    """The real adapter's contexts; before a context is dropped, its segments (as ``context.get``
    gives them: ids, roles, texts, pinned flags, counts) are kept by context id."""

    def __init__(self, pool: CaldrixPool) -> None:
        super().__init__(pool.control, anyio.CapacityLimiter(PoolSettings().max_connections))
        self.socket_path = pool.socket_path
        self.kept: dict[str, list[dict[str, Any]]] = {}

    async def drop(self, context: str) -> None:
        client = await connect(self.socket_path, bounds=client_bounds(PoolSettings()))
        try:
            reply = await client.context_get(context)
        finally:
            await client.aclose()
        self.kept[context] = [segment.model_dump() for segment in reply.segments]
        await super().drop(context)


class KeepingPool(CaldrixPool):
    """The real pool adapter, its contexts kept as they are dropped (``kept``)."""

    def __init__(self, socket_path: Path) -> None:
        super().__init__(socket_path)
        self.contexts = self.keeping = KeepingContexts(self)

    @property
    def kept(self) -> dict[str, list[dict[str, Any]]]:
        return self.keeping.kept


def agent_of(segments: list[dict[str, Any]]) -> str:
    """A piece agent's id, from its context's ``<agent>.brief`` segment."""
    return next(s["id"].removesuffix(".brief") for s in segments if s["id"].endswith(".brief"))


def assert_every_subagent_context_rebuilt(events: list[ev.EventBase], pool: KeepingPool) -> set[str]:
    """Each dropped piece context equals the context projection of its agent; returns the
    agents checked."""
    contexts = contexts_at(events)
    checked = set()
    for segments in pool.kept.values():
        agent = agent_of(segments)
        rebuilt = contexts.agents[agent].ordered()
        assert [(s.id, s.role, s.text, s.pinned, s.tokens) for s in rebuilt] == [
            (s["id"], s["role"], s["text"], s["pinned"], s["tokens"]) for s in segments
        ], agent
        checked.add(agent)
    return checked


def piece_result(message: ev.Message) -> dict[str, Any]:
    """The JSON of an agent call's result message (after its ``[agent cN]`` header)."""
    header, _, body = message.text.partition("\n")
    assert header == f"[agent {message.call}]"
    result: dict[str, Any] = json.loads(body)
    return result

"""Routing: which shape a request takes (``answer``, ``edit``, ``investigate`` or ``plan``).

The decision member (else main) classifies the request on a throwaway context holding only
``routing.md`` and the request: one generation of at most ROUTING_MAX_TOKENS tokens,
constrained to one of the four words, with logprobs. An answer that matches none is ``edit``
(the constraint makes that impossible, so it happens on a router that does not declare
``one_of``: it is asked without the constraint, as the loop asks a member without ``json``).
The choice and its scores are a ``route`` event. Routing picks the shape only; the root
always runs on main. Every routing context starts with the same ``routing.md`` segment, so the
pool's prefix store computes those rows once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, get_args

from aerix.app.ports.pool import GenerationDone, PoolPort
from aerix.app.ports.project import PromptSource
from aerix.app.ports.sessions import EventRecorder
from aerix.domain import events as ev
from aerix.domain.bounds import ROUTING_MAX_TOKENS

ROUTES: Final[tuple[ev.Route, ...]] = get_args(ev.Route)
#: What a request that matches no shape becomes.
FALLBACK_ROUTE: Final[ev.Route] = "edit"
#: Alternatives asked per generated token, enough to score every shape at the first token.
ROUTING_LOGPROBS: Final = len(ROUTES)


@dataclass(frozen=True)
class RouteChoice:
    choice: ev.Route
    scores: dict[str, float] = field(default_factory=dict)
    member: str | None = None
    raw: str | None = None


async def route_request(
    pool: PoolPort,
    member: str,
    prompt: str,
    prompts: PromptSource,
    events: EventRecorder,
    *,
    one_of: bool = True,
) -> RouteChoice:
    """Classify ``prompt`` on ``member`` and record the ``route`` event. ``one_of``: whether
    the member declares the ``one_of`` constraint (``MemberInfo.constraints``)."""
    context = await pool.contexts.create(
        member,
        [
            {"id": "routing", "role": "system", "text": prompts.get("routing"), "pinned": True},
            {"id": "request", "role": "user", "text": prompt, "pinned": True},
        ],
    )
    try:
        constraint = {"one_of": list(ROUTES)} if one_of else None
        done = await pool.contexts.generate(
            context.context, ROUTING_MAX_TOKENS, constraint=constraint, logprobs=ROUTING_LOGPROBS
        )
    finally:
        await pool.contexts.drop(context.context)
    route = choice_of(done, member)
    events.record(ev.RouteDecision, choice=route.choice, scores=route.scores, member=member, raw=route.raw)
    return route


def choice_of(done: GenerationDone, member: str | None = None) -> RouteChoice:
    """The shape a routing generation picked, with each shape's log-probability."""
    text = done.text.strip().lower()
    matched = next((route for route in ROUTES if text == route), None)
    scores = route_scores(done)
    if matched is None:
        return RouteChoice(FALLBACK_ROUTE, scores, member, raw=done.text)
    return RouteChoice(matched, scores, member)


def route_scores(done: GenerationDone) -> dict[str, float]:
    """Each shape's log-probability as far as the logprobs tell: the generated shape gets the
    sum over its tokens; another shape gets the logprob of the first-token alternative that
    starts it (absent when none of the alternatives does)."""
    if not done.logprobs:
        return {}
    generated = done.text.strip().lower()
    scores: dict[str, float] = {}
    first = done.logprobs[0]
    for route in ROUTES:
        if route == generated:
            scores[route] = round(sum(item.logprob for item in done.logprobs), 4)
            continue
        candidates = [lp for token, lp in first.top if _starts(route, token)]
        if candidates and math.isfinite(max(candidates)):
            scores[route] = round(max(candidates), 4)
    return scores


def _starts(route: str, token: str) -> bool:
    piece = token.strip().lower()
    return bool(piece) and route.startswith(piece)

"""One reflection: a generation on a throwaway context that proposes a prompt's new text.

The context holds the reflection instructions (``reflect-tune.md`` or ``reflect-sync.md``) as its
system segment and the request (the prompt, its placeholders and length bound, the evidence) as
its user segment. The answer is asked as ``{"text": …, "reason": …}`` under the Json constraint,
for at most ``min(context.max_new_tokens, W / 2)`` tokens and no more than the length guard could
accept (REVISION_MAX_RATIO times the release text's tokens, as the pool counts them, plus
REFLECTION_ANSWER_SLACK_TOKENS). Like every generation aerix asks for, it carries the pool's
degeneration guard: an answer that loops is stopped within a few repeats and refused with the
guard's reason. When the request does not leave room for the answer in the window, the oldest
half of the evidence is dropped, then the next, counted by the pool each time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aerix.app.pool.members import BoundMembers
from aerix.app.ports.pool import MemberInfo, OnToken, PoolPort
from aerix.domain.bounds import (
    REFLECTION_ANSWER_SLACK_TOKENS,
    REFLECTION_ASK_WINDOW_DIVISOR,
    REFLECTION_REASON_MAX_CHARS,
    REVISION_MAX_RATIO,
)
from aerix.domain.settings import MemberFlags
from aerix.errors import ContextOverflow, PoolError

#: The member ``tune.member`` is loaded as, when it is not already in the pool.
REFLECTION_MEMBER = "reflect"
SYSTEM_ID = "reflection.system"
REQUEST_ID = "reflection.request"

#: What each prompt does, told to the reflection member beside its text.
PROMPT_ROLES: Mapping[str, str] = {
    "system": "the start of every agent's system segment: who the agent is and how it works",
    "routing": "the instructions that classify each request as answer, edit, investigate or plan",
    "planner": "a note after the prompt of a root agent routed edit or plan, which only plans and delegates",
    "brief": "the task an implementer is given: the brief, and how its work will be checked",
    "verifier": "the task of a verifier, which judges an implementer's work against the check: pass or fail",
    "compacted": "a note to an agent after the runtime replaced old tool results with markers",
}


def answer_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "reason": {"type": "string", "maxLength": REFLECTION_REASON_MAX_CHARS},
        },
        "required": ["text", "reason"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Reflected:
    """The member's proposal."""

    text: str
    reason: str


@dataclass(frozen=True)
class NotReflected:
    """Why there is no proposal (cut, not the asked JSON, no room, the pool refused)."""

    reason: str


@dataclass(frozen=True)
class Reflector:
    """The member that reflects, and whether this run loaded it (so unloads it at the end)."""

    member: MemberInfo
    loaded_here: bool = False


async def bind_reflector(
    pool: PoolPort, members: BoundMembers, model: str | None, flags: MemberFlags
) -> Reflector:
    """``model`` (``--member``, else ``tune.member``) as a member, else the main member."""
    if model is None or model == members.main.model:
        return Reflector(members.main)
    for member in await pool.members.loaded():
        if member.model == model and member.state == "ready":
            return Reflector(member)
    member = await pool.members.load(REFLECTION_MEMBER, model, flags.as_load_flags())
    if member.state != "ready":
        raise PoolError(f"the reflection member {model} is {member.state}", code="member_not_ready")
    return Reflector(member, loaded_here=True)


async def release_reflector(pool: PoolPort, reflector: Reflector) -> None:
    if reflector.loaded_here:
        await pool.members.unload(reflector.member.name)


def request_text(header: str, evidence: Sequence[str], shown: int) -> str:
    """The user segment: ``header`` and the newest ``shown`` evidence lines."""
    if not evidence:
        return header
    lines = "\n".join(f"- {line}" for line in evidence[:shown])
    left_out = len(evidence) - shown
    note = f"\n({left_out} older lines left out to fit the window)" if left_out > 0 else ""
    return f"{header}\n\n# Evidence, newest first\n{lines}{note}"


async def reflect(
    pool: PoolPort,
    member: MemberInfo,
    system: str,
    header: str,
    evidence: Sequence[str],
    max_new_tokens: int,
    release_text: str,
    on_token: OnToken | None = None,
    what: str = "the prompt",
) -> Reflected | NotReflected:
    shown = len(evidence)
    # The user segment holds the release's text first, for the pool to count its tokens.
    counts = await pool.contexts.create(
        member.name,
        [
            {"id": SYSTEM_ID, "role": "system", "text": system, "pinned": True},
            {"id": REQUEST_ID, "role": "user", "text": release_text, "pinned": True},
        ],
    )
    try:
        release_tokens = counts.tokens_of(REQUEST_ID) or 0
        longest = int(release_tokens * REVISION_MAX_RATIO) + REFLECTION_ANSWER_SLACK_TOKENS
        ask = min(max_new_tokens, member.n_ctx // REFLECTION_ASK_WINDOW_DIVISOR, longest)
        counts = await pool.contexts.edit(
            counts.context,
            [{"op": "replace", "id": REQUEST_ID, "text": request_text(header, evidence, shown)}],
        )
        while counts.tokens + ask > member.n_ctx:
            if shown == 0:
                return NotReflected(
                    f"{member.model}'s window ({member.n_ctx} tokens) cannot hold {what} and an answer "
                    f"of {ask} tokens"
                )
            shown //= 2
            counts = await pool.contexts.edit(
                counts.context,
                [{"op": "replace", "id": REQUEST_ID, "text": request_text(header, evidence, shown)}],
            )
        constraint = {"json": answer_schema()} if "json" in member.constraints else None
        try:
            done = await pool.contexts.generate(counts.context, ask, constraint, on_token=on_token)
        except ContextOverflow as overflow:
            return NotReflected(str(overflow))
    finally:
        await pool.contexts.drop(counts.context)
    if done.finish == "length":
        return NotReflected(f"the answer was cut at {ask} tokens before its JSON closed")
    if done.finish == "degenerate":
        return NotReflected(f"the answer was stopped after {done.completion_tokens} tokens: {done.reason}")
    return parse_answer(done.text)


def parse_answer(text: str) -> Reflected | NotReflected:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return NotReflected(f"the answer is not JSON ({exc.msg})")
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        return NotReflected('the answer is not an object with a "text" string')
    reason = value.get("reason")
    return Reflected(value["text"], reason[:REFLECTION_REASON_MAX_CHARS] if isinstance(reason, str) else "")

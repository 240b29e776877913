"""The opening segments of a piece's agents and their pool contexts (spec, "Delegation").

- An implementer starts on a fork of its caller's shared prefix — the leading system and
  instruction segments only (``context.fork`` with ``keep``), so it sees none of the caller's
  conversation and the prefix store resumes those rows — then the definition's body (when one is
  named), ``brief.md`` filled with the brief and the check, and on a retry ``retry.md`` with the
  verifier's reason.
- A verifier starts on the same shared prefix, then ``verifier.md`` filled with the brief, the
  check, the implementer's summary and the files it touched.
- Either gets, last, the context a SubagentStart hook added (``# Hook context``, pinned).

On another member than the caller's the prefix cannot be forked (a context lives on one member),
so the context is created with the prefix's texts instead. Either way every opening segment is
recorded as a ``segment`` event of the new agent with the pool's count, prefix included, so the
context projection rebuilds the agent's context from its own events.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from aerix.app.agent.live_context import record_segments
from aerix.app.ports.agents import Caller
from aerix.app.ports.pool import ContextCounts, MemberInfo, PoolPort
from aerix.app.ports.project import PromptSource
from aerix.app.ports.sessions import EventRecorder
from aerix.domain.segments import ContextSegment, SegmentKind
from aerix.domain.templates import fill


def implementer_segments(
    agent_id: str,
    prompts: PromptSource,
    brief: str,
    check: str,
    definition: tuple[str, str] | None = None,
    retry_reason: str | None = None,
    attached: str = "",
) -> list[ContextSegment]:
    """An implementer's own segments after the shared prefix. ``definition``: (name, body);
    ``attached``: the files the brief names (``aerix.app.agent.attachments``), after it."""
    segments = []
    if definition is not None and definition[1].strip():
        name, body = definition
        segments.append(
            ContextSegment(
                f"{agent_id}.definition",
                "system",
                SegmentKind.INSTRUCTIONS,
                body.strip(),
                True,
                f"definition {name}",
            )
        )
    text = fill(prompts.get("brief"), {"brief": brief, "check": check}).strip()
    if attached:
        text = f"{text}\n\n{attached}"
    segments.append(ContextSegment(f"{agent_id}.brief", "user", SegmentKind.BRIEF, text, True, "brief"))
    if retry_reason is not None:
        note = fill(prompts.get("retry"), {"reason": retry_reason}).strip()
        segments.append(
            ContextSegment(f"{agent_id}.retry", "user", SegmentKind.BRIEF, note, True, "verifier's reason")
        )
    return segments


def verifier_segments(
    agent_id: str,
    prompts: PromptSource,
    brief: str,
    check: str,
    summary: str,
    files: Sequence[str],
) -> list[ContextSegment]:
    """A verifier's own segment after the shared prefix."""
    values = {
        "brief": brief,
        "check": check,
        "summary": summary or "(no summary)",
        "files": ", ".join(files) if files else "none",
    }
    text = fill(prompts.get("verifier"), values).strip()
    return [ContextSegment(f"{agent_id}.brief", "user", SegmentKind.BRIEF, text, True, "verifier brief")]


async def open_context(
    pool: PoolPort,
    events: EventRecorder,
    caller: Caller,
    member: MemberInfo,
    agent_id: str,
    own: Sequence[ContextSegment],
) -> ContextCounts:
    """The agent's pool context: the caller's shared prefix, then ``own``; each opening segment
    recorded as a ``segment`` event of ``agent_id`` (the start of its context's fold)."""
    if member.name == caller.member:
        forked = await pool.contexts.fork(caller.context_id, len(caller.prefix))
        try:
            counts = await pool.contexts.edit(
                forked.context, [{"op": "append", "segment": segment.wire()} for segment in own]
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await pool.contexts.drop(forked.context)
            raise
    else:
        counts = await pool.contexts.create(member.name, [s.wire() for s in (*caller.prefix, *own)])
    record_segments(events, [*caller.prefix, *own], counts, agent=agent_id)
    return counts

"""The tools that belong to the loop rather than to the machine: ``plan`` and ``context``
(``agent`` calls go to the environment's delegator, :mod:`aerix.app.delegation`).

- ``plan``: ``read`` shows the agent's plan, ``write`` replaces it (a ``plan`` event).
- ``context``: ``status`` / ``drop`` / ``summarize`` / ``pin`` / ``unpin`` / ``note`` on the
  agent's own context through the pool's ``context.edit``; every op is a ``context.op`` event,
  refused ones too (with ``refused``), and the live context is its fold. ``drop`` and
  ``summarize`` refuse the system, instructions and scratchpad segments. A summary takes the
  place (and the id) of the first segment it replaces, pinned; ``note`` appends to the pinned
  scratchpad ``<agent>.scratchpad``.
- ``agent`` without a delegator (an agent run outside a request, as some tests run one): every
  call is the result ``error: delegation is not available yet``.

Each function returns the result text; a refusal is ``error: …``, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aerix.app.agent.live_context import LiveContext
from aerix.app.ports.request import CancelSignal, PlanGate, PlanReview
from aerix.domain import events as ev
from aerix.domain.segments import PROTECTED_KINDS, ROOT_AGENT, ContextSegment, SegmentKind

DELEGATION_UNAVAILABLE = "error: delegation is not available yet"
PLAN_ABORTED = "plan aborted at the gate"


@dataclass
class PlanState:
    """An agent's plan (None until written)."""

    text: str | None = None


class FirstPlanGate:
    """The root's first plan write of a request waits at the screen's gate; later writes, and
    subagents' plans, pass. An abort sets the request's cancel event, so the loop ends there."""

    def __init__(self, gate: PlanGate, cancel: CancelSignal) -> None:
        self.gate = gate
        self.cancel = cancel
        self.used = False
        self.aborted = False

    async def review(self, agent_id: str, text: str) -> PlanReview | None:
        if self.used or agent_id != ROOT_AGENT:
            return None
        self.used = True
        review = await self.gate.review(agent_id, text)
        if review.decision == "abort":
            self.aborted = True
            self.cancel.set()
        return review


def plan_write_text(tool_input: Mapping[str, Any]) -> str | None:
    """The text of a valid plan write, else None."""
    text = tool_input.get("text")
    if tool_input.get("op") != "write" or not isinstance(text, str) or not text.strip():
        return None
    return text


def plan_tool(
    agent_id: str,
    plan: PlanState,
    events: Any,
    tool_input: Mapping[str, Any],
    review: PlanReview | None = None,
) -> str:
    op = tool_input.get("op")
    if op == "read":
        return plan.text if plan.text else "(no plan yet; write one with op write)"
    if op != "write":
        return "error: plan's op is read or write"
    text = plan_write_text(tool_input)
    if text is None:
        return "error: plan write needs the whole new plan in text"
    if review is not None and review.decision == "abort":
        events.record(ev.Plan, agent=agent_id, text=text, gate="aborted")
        return "error: the user aborted this request at your plan"
    if review is not None and review.decision == "edit" and review.text and review.text.strip():
        plan.text = review.text
        events.record(ev.Plan, agent=agent_id, text=review.text, gate="edited", proposed=text)
        return f"the user edited your plan; follow this version:\n{review.text}"
    plan.text = text
    events.record(ev.Plan, agent=agent_id, text=text, gate="accepted" if review is not None else None)
    lines = len(text.strip().splitlines())
    return f"plan saved ({lines} line{'s' if lines != 1 else ''})"


class ContextTool:
    """The ``context`` tool on one agent's live context."""

    def __init__(self, live: LiveContext) -> None:
        self.live = live

    @property
    def scratchpad_id(self) -> str:
        return f"{self.live.agent_id}.scratchpad"

    async def run(self, tool_input: Mapping[str, Any]) -> str:
        op = tool_input.get("op")
        raw_ids = tool_input.get("ids") or []
        ids = [str(item) for item in raw_ids] if isinstance(raw_ids, list) else []
        text = tool_input.get("text")
        text = text if isinstance(text, str) else None
        if op == "status":
            self._record("status")
            return self.status()
        if op == "note":
            return await self._note(text)
        if op in ("drop", "summarize", "pin", "unpin"):
            problem = self._check_ids(op, ids, text)
            if problem:
                self._record(op, ids, text, refused=problem)
                return f"error: {problem}"
            return await getattr(self, f"_{op}")(self._in_order(ids), text)
        return "error: context's op is status, drop, summarize, pin, unpin or note"

    def status(self) -> str:
        live = self.live
        budget = live.budget
        lines = [
            f"context: {live.tokens} of {budget.window} tokens (compacts above {budget.soft_limit}, "
            f"down to {budget.target})"
        ]
        for segment in live.segments:
            pinned = ", pinned" if segment.pinned else ""
            lines.append(f"{segment.id}  {segment.label or segment.kind}  {segment.tokens} tokens{pinned}")
        return "\n".join(lines)

    def _check_ids(self, op: str, ids: Sequence[str], text: str | None) -> str | None:
        if not ids:
            return f"context {op} needs ids (context status lists them)"
        unknown = [segment_id for segment_id in ids if self.live.get(segment_id) is None]
        if unknown:
            return f"no segment {', '.join(unknown)} in this context (context status lists them)"
        if op in ("drop", "summarize"):
            protected = [s for s in ids if (segment := self.live.get(s)) and segment.kind in PROTECTED_KINDS]
            if protected:
                names = ", ".join(protected)
                return f"{op} refuses the system, instructions and scratchpad segments ({names})"
        if op == "summarize" and not (text and text.strip()):
            return "context summarize needs the summary in text"
        return None

    def _in_order(self, ids: Sequence[str]) -> list[str]:
        wanted = set(ids)
        return [segment.id for segment in self.live.segments if segment.id in wanted]

    async def _drop(self, ids: list[str], _text: str | None) -> str:
        await self.live.remove(ids)
        self._record("drop", ids)
        return f"dropped {', '.join(ids)}; the context holds {self.live.tokens} tokens"

    async def _summarize(self, ids: list[str], text: str | None) -> str:
        first, rest = ids[0], ids[1:]
        summary = text or ""
        edits: list[dict[str, Any]] = [
            {"op": "replace", "id": first, "text": summary, "role": "user", "pinned": True}
        ]
        edits += [{"op": "remove", "id": segment_id} for segment_id in rest]
        tokens = (await self.live.edit(edits)).tokens_of(first)
        self._record("summarize", ids, summary, segment=first, tokens=tokens)
        return f"summarized {', '.join(ids)} into {first} ({tokens} tokens, pinned)"

    async def _pin(self, ids: list[str], _text: str | None) -> str:
        return await self._set_pinned("pin", ids, True)

    async def _unpin(self, ids: list[str], _text: str | None) -> str:
        return await self._set_pinned("unpin", ids, False)

    async def _set_pinned(self, op: str, ids: list[str], pinned: bool) -> str:
        await self.live.edit([{"op": "replace", "id": segment_id, "pinned": pinned} for segment_id in ids])
        self._record(op, ids)
        return f"{'pinned' if pinned else 'unpinned'} {', '.join(ids)}"

    async def _note(self, text: str | None) -> str:
        if not text or not text.strip():
            problem = "context note needs the note in text"
            self._record("note", refused=problem)
            return f"error: {problem}"
        pad = self.live.get(self.scratchpad_id)
        if pad is None:
            pad = ContextSegment(self.scratchpad_id, "user", SegmentKind.SCRATCHPAD, text, True, "scratchpad")
            tokens = (await self.live.append(pad)).tokens
        else:
            joined = f"{pad.text}\n{text}" if pad.text else text
            counts = await self.live.edit([{"op": "replace", "id": pad.id, "text": joined}])
            tokens = counts.tokens_of(pad.id)
        self._record("note", [], text, segment=pad.id, tokens=tokens)
        return f"noted in {pad.id} ({tokens} tokens, pinned; it survives compaction)"

    def _record(
        self,
        op: str,
        ids: Sequence[str] = (),
        text: str | None = None,
        *,
        segment: str | None = None,
        tokens: int | None = None,
        refused: str | None = None,
    ) -> None:
        """The ``context.op`` event; the live context folds it (a refused one changes nothing)."""
        self.live.record(
            ev.ContextOp, op=op, ids=list(ids), text=text, segment=segment, tokens=tokens, refused=refused
        )

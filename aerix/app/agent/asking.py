"""Asking the model for one turn: the generation, the watch on it while it streams, the re-asks.

A turn is one generation on the agent's context, appended as the assistant segment
``<agent>.m<turn>``. Three things make it asked again (at most TURN_RETRIES more times, then the
agent ends ``failed``), each time with the answer removed and a note telling the model why:

- **cut**: it hit ``max_new_tokens`` before its JSON closed;
- **stopped**: it was degenerating (a span of tokens repeating, a string that never closes), so
  the pool's guard, asked for on every generation (``bounds.GENERATION_GUARD``), stopped it as
  soon as that showed, instead of letting it run to ``max_new_tokens``: ``finish:
  "degenerate"`` with the guard's reason, nothing appended, and the pool's usage like any other
  attempt's;
- **unparsed**: only a member without the JSON constraint can answer something of the wrong
  shape, but any member can echo a placeholder of the ``# Turns`` examples as its final or
  its thought (``aerix.domain.turns``), or copy the runtime's own words there (a re-ask note,
  a marker: ``aerix.domain.runtime_words``), and that is no turn either.

After a cut or a stop the re-ask asks for less (``aerix.domain.compaction.retry_ask``: half the
last ask, at least MIN_CUT_TURN_TOKENS): the same budget would only be spent again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from aerix.app.agent.env import AgentEnvironment, AgentSpec, UsageTotals
from aerix.app.agent.live_context import LiveContext
from aerix.app.ports.pool import GenerationDone, SegmentAppend
from aerix.domain import bounds
from aerix.domain import events as ev
from aerix.domain.compaction import retry_ask
from aerix.domain.runtime_words import NOTE_PROMPTS, refuse_copies, runtime_texts
from aerix.domain.segments import ContextSegment, SegmentKind
from aerix.domain.tools import ToolSpec
from aerix.domain.turn_notes import cut_turn_note, stopped_turn_note
from aerix.domain.turns import Turn, TurnParseError, parse_turn


class GenerationCancelled(Exception):
    """The run's cancel event was set while a generation streamed."""


@dataclass(frozen=True)
class AskEnded:
    """A turn that could not be had: how the agent ends."""

    outcome: ev.AgentOutcome
    reason: str


class TurnAsker:
    """Asks an agent's turns; one per agent run. ``usage`` sums the pool's figures."""

    def __init__(self, spec: AgentSpec, env: AgentEnvironment, live: LiveContext) -> None:
        self.spec = spec
        self.env = env
        self.live = live
        self.usage = UsageTotals()
        #: What a final or a thought must not copy (the notes from the prompts in use).
        self.runtime_texts = runtime_texts({name: env.prompts.get(name) for name in NOTE_PROMPTS})
        self._scope: anyio.CancelScope | None = None

    @property
    def agent_id(self) -> str:
        return self.spec.agent_id

    def cancel_generation(self) -> None:
        """Close the running generation, if any (the run's cancel event was set)."""
        if self._scope is not None:
            self._scope.cancel()

    async def ask(
        self,
        turn_number: int,
        max_new_tokens: int,
        constraint: Mapping[str, Any] | None,
        tools: Sequence[ToolSpec],
    ) -> Turn | AskEnded:
        """One turn, parsed against ``tools`` (the callable tools as this run offers them, the
        ones ``constraint`` was built from)."""
        problem = ""
        ask = max_new_tokens
        segment_id = f"{self.agent_id}.m{turn_number}"
        for attempt in range(bounds.TURN_RETRIES + 1):
            room = min(ask, self.live.room)
            if room < bounds.MIN_CUT_TURN_TOKENS:
                reason = f"context floor: no room to ask turn {turn_number} again ({room} tokens left)"
                return AskEnded("killed", reason)
            generated = await self._generate(segment_id, room, constraint)
            if generated.finish == "degenerate":
                tokens, reason = generated.completion_tokens, generated.reason or "degenerate"
                problem = f"stopped after {tokens} tokens: {reason}"
                ask = retry_ask(room)
                note = stopped_turn_note(tokens, reason, ask)
            elif generated.finish == "length":
                problem = f"cut at max_new_tokens ({room}) before its JSON closed"
                ask = retry_ask(room)
                note = cut_turn_note(room, ask)
            else:
                try:
                    turn = parse_turn(
                        generated.text,
                        tools,
                        verifier=self.spec.verifier,
                        first_call_number=self.live.peek("c"),
                    )
                    refuse_copies(turn, self.runtime_texts, verifier=self.spec.verifier)
                except TurnParseError as exc:
                    problem, note = exc.problem, exc.message
                else:
                    self._record_turn(turn_number, attempt, generated, turn)
                    return turn
            self._record_attempt(turn_number, attempt, generated.text, problem, self._usage(generated))
            if generated.finish != "degenerate":  # the pool appended nothing of a degenerate one
                await self.live.remove([segment_id])
            if attempt < bounds.TURN_RETRIES:
                await self.live.add_note(note)
        asked = bounds.TURN_RETRIES + 1
        return AskEnded("failed", f"turn {turn_number} was asked {asked} times and never parsed: {problem}")

    async def _generate(
        self, segment_id: str, max_new_tokens: int, constraint: Mapping[str, Any] | None
    ) -> GenerationDone:
        sink, agent_id = self.env.on_token, self.agent_id
        on_token = (lambda text: sink(agent_id, text)) if sink is not None else None
        done: GenerationDone | None = None
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self.env.cancel.is_set():
                scope.cancel()
            done = await self.env.pool.contexts.generate(
                self.spec.context_id,
                max_new_tokens,
                constraint,
                append=SegmentAppend(segment_id),
                on_token=on_token,
            )
        self._scope = None
        if done is None:  # the scope caught its cancel before the done frame
            raise GenerationCancelled
        self.usage = self.usage.plus(done.prompt_tokens, done.completion_tokens)
        if done.finish == "degenerate":
            return done  # the pool appended nothing
        turn_label = f"turn {segment_id.rsplit('.m', 1)[-1]}"
        self.live.hold(
            ContextSegment(segment_id, "assistant", SegmentKind.ASSISTANT, done.text, label=turn_label)
        )
        await self.live.refresh()
        return done

    def _usage(self, done: GenerationDone) -> ev.Usage:
        return ev.Usage(
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            recomputed_from=done.recomputed_from,
            prefill_ms=done.timings.prefill_ms,
            decode_ms=done.timings.decode_ms,
            member=self.spec.member,
        )

    def _record_attempt(
        self, turn_number: int, attempt: int, text: str, problem: str, usage: ev.Usage | None
    ) -> None:
        self.live.record(
            ev.Message,
            role="assistant",
            turn=turn_number,
            text=text,
            attempt=attempt,
            parse_error=problem,
            usage=usage,
        )

    def _record_turn(self, turn_number: int, attempt: int, done: GenerationDone, turn: Turn) -> None:
        self.live.reserve("c", len(turn.calls))
        segment = self.live.get(f"{self.agent_id}.m{turn_number}")
        if segment is not None:
            self.live.record_segment(segment)
        verdict = turn.verdict
        self.live.record(
            ev.Message,
            role="assistant",
            turn=turn_number,
            text=done.text,
            segment=segment.id if segment else None,
            thought=turn.thought,
            calls=[ev.ToolCall(id=c.id, tool=c.tool, input=dict(c.input)) for c in turn.calls],
            final=turn.final,
            verdict=verdict.verdict if verdict else None,
            reason=verdict.reason if verdict else None,
            attempt=attempt,
            usage=self._usage(done),
        )

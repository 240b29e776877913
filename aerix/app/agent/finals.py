"""What a final meets before it ends an agent (spec, "The turn": "A final ends the agent,
unless background jobs are still running … or a Stop/SubagentStop hook asks it to continue").

At a final, in this order: reports of background jobs that ended (waiting for one while any
still runs) are appended and the agent gets another turn to read them; a Stop (a subagent's:
SubagentStop) hook that blocks makes its reason the next user message, at most
STOP_HOOK_CONTINUES times per run; a change root that has changed no file, or the planner of a
change that has handed out no piece, is told so once (NO_CHANGE_NOTE, NO_PIECE_NOTE) and gets
another turn. Otherwise the final ends the agent ``done``, or ``failed`` when every piece it
ran failed and it changed no file itself (``aerix.domain.pieces.no_piece_done``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal, cast

import anyio

from aerix.app.agent.dispatch import Dispatcher
from aerix.app.agent.env import AgentEnvironment, AgentSpec
from aerix.app.agent.live_context import LiveContext
from aerix.app.ports.tools import ToolRunner
from aerix.domain import bounds
from aerix.domain import events as ev
from aerix.domain.pieces import no_piece_done
from aerix.domain.turn_notes import NO_CHANGE_NOTE, NO_PIECE_NOTE
from aerix.domain.turns import Turn

#: The label of the user message a Stop hook's block adds (a user turn: never compacted).
STOP_HOOK_LABEL = "stop hook"
#: The label of the note on the next step of a change (``AgentSpec.makes_changes``).
NEXT_STEP_LABEL = "next step"

#: Why a final did not end the agent: what it was given to read instead.
GoingOn = Literal["jobs reported", "stop hook", "nothing changed"]


@dataclass(frozen=True)
class Ended:
    """How an agent ends."""

    outcome: ev.AgentOutcome
    reason: str | None = None
    final: str | None = None
    verdict: ev.Verdict | None = None


@dataclass
class Finals:
    """The finals of one agent run: what keeps it going, and how one ends it."""

    spec: AgentSpec
    env: AgentEnvironment
    live: LiveContext
    runner: ToolRunner
    dispatcher: Dispatcher
    thread_cancel: threading.Event
    stop_continues: int = 0
    #: Whether a final with nothing changed was answered with NO_CHANGE_NOTE or NO_PIECE_NOTE.
    told_unchanged: bool = False

    async def going_on(self, turn: Turn, turn_number: int, turns: int) -> GoingOn | None:
        """Why the final ``turn`` does not end the agent after ``turns`` turns, if it does not."""
        if await self._jobs_reported(turn_number, turns):
            return "jobs reported"
        if await self._stop_hook_continues(turn):
            return "stop hook"
        if await self._unchanged_final_continues(turns):
            return "nothing changed"
        return None

    def nothing_handed_out(self) -> bool:
        """Whether this is a planner of a change that has made no ``agent`` call (one a hook
        refused counts: it tried) and changed no file."""
        handed_out = self.dispatcher.agent_calls or self.dispatcher.files_touched
        return self.spec.delegates_changes and not handed_out

    def ended_by(self, turn: Turn) -> Ended:
        """How a final ends the agent: ``done``, unless every piece it ran failed and it changed
        nothing itself (``no_piece_done``)."""
        ended = _final(turn)
        undone = no_piece_done(self.dispatcher.piece_outcomes, self.dispatcher.files_touched)
        if undone is None:
            return ended
        return Ended("failed", undone, final=ended.final, verdict=ended.verdict)

    async def _jobs_reported(self, turn_number: int, turns: int) -> bool:
        """Reports of jobs that ended (waiting for one while any still runs) are appended, and
        the agent gets another turn to read them if its budget allows."""
        jobs = self.runner.jobs
        reports = list(jobs.take_finished())
        if not reports and jobs.running_ids():
            reports = list(await anyio.to_thread.run_sync(jobs.wait_for_one, self.thread_cancel))
        if not reports:
            return False
        await self.dispatcher.append_jobs(reports, turn_number)
        return turns < self.spec.max_turns

    async def _stop_hook_continues(self, turn: Turn) -> bool:
        """A Stop (SubagentStop) hook that blocks (or adds context) keeps the agent going, its
        reason the next user message, at most STOP_HOOK_CONTINUES times
        (``AgentLifecycle.finishing``)."""
        last = turn.verdict.reason if turn.verdict is not None else turn.final
        spec = self.spec
        message = await self.env.agent_lifecycle().finishing(
            spec.agent_id, spec.kind, spec.agent_type, last or "", self.stop_continues > 0
        )
        if message is None:
            return False
        if self.stop_continues >= bounds.STOP_HOOK_CONTINUES:
            return False  # the bound: the final stands (with no turns left, the budget ends it)
        self.stop_continues += 1
        await self.live.add_note(message, label=STOP_HOOK_LABEL)
        return True

    async def _unchanged_final_continues(self, turns: int) -> bool:
        """At a change root's first final with no file changed (a planner's: with no piece
        handed out either): once per run, a note says so and the root gets another turn (its
        next final stands, for a request that needs no change). On its second try at raindrops
        the 1.5B answered "I fixed the code … and the tests passed" in its first turn, having
        changed nothing; its planner of bob saved a plan and answered "Sure.". An implementer is
        not asked: its verifier checks the work."""
        if self.spec.kind != "root" or self.told_unchanged or turns >= self.spec.max_turns:
            return False
        if self.spec.makes_changes and not self.dispatcher.files_touched:
            note = NO_CHANGE_NOTE
        elif self.nothing_handed_out():
            note = NO_PIECE_NOTE
        else:
            return False
        self.told_unchanged = True
        await self.live.add_note(note, label=NEXT_STEP_LABEL)
        return True


def _final(turn: Turn) -> Ended:
    if turn.verdict is not None:
        return Ended("done", final=turn.verdict.reason, verdict=cast(ev.Verdict, turn.verdict.verdict))
    return Ended("done", final=turn.final)

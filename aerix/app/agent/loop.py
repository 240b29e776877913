"""The turn loop of one agent (spec, "The turn", "Context management", "Every loop's bound").

Each turn:

1. Check between turns: a cancel ends the agent ``killed`` (``cancelled``); a used-up turn
   budget ends it ``budget``.
2. Context management: over the soft limit, or without room for the turn, the context is
   compacted; still no room is a hard-limit hit (the first cuts this turn's ``max_new_tokens``
   to the room left when that is at least 64; the second ends the agent ``killed`` with
   ``context floor: no room …``). A turn asks ``min(context.max_new_tokens, W / 4)``.
3. One generation (:mod:`aerix.app.agent.asking`), under the ``json`` constraint built from the
   callable tools when the member has it, appended to the context as the assistant segment
   ``<agent>.m<turn>``; a verifier's turns are asked without the final branch until it has
   called a tool (a verdict on nothing inspected counts as a fail). A ``message`` event
   carries the answer and the pool's usage. A turn that degenerates while it streams (a span
   of tokens repeating, a string that never closes) is stopped there by the pool's guard
   (``finish: "degenerate"``), and nothing is appended.
4. Parsing (``aerix.domain.turns.parse_turn``). An answer that does not parse (a member without
   the constraint), that hit ``max_new_tokens`` before its JSON closed, or that was stopped, is
   removed from the context, a note tells the model what went wrong (for a cut or a stop: to
   answer shorter, and the re-ask asks for fewer tokens), and the turn is asked again — at most
   TURN_RETRIES more times, then the agent ends ``failed``.
5. A final (:mod:`aerix.app.agent.finals`) ends the agent ``done`` (``failed`` when every
   piece it ran failed and it changed no file itself: ``aerix.domain.pieces.no_piece_done``)
   unless a change root has changed no file yet, or a planner of a change has handed out no
   piece (once per run, NO_CHANGE_NOTE or NO_PIECE_NOTE says so and it gets another turn),
   background jobs are still running (their reports are waited for, appended, and the agent
   gets another turn) or a Stop (a subagent's: SubagentStop) hook blocks
   (``AgentLifecycle.finishing``): its reason becomes the agent's next user message, at most
   STOP_HOOK_CONTINUES times per run, with ``stop_hook_active`` set
   each time after the first. Otherwise the calls run (:mod:`aerix.app.agent.dispatch`;
   ``agent`` calls through the environment's ``Delegator``, with this agent as their
   ``Caller``, each between its PreToolUse and PostToolUse hooks) and their results are
   appended. A call with the same input as one of the previous turn, with nothing changed
   since, is not run again (``aerix.domain.repeats``): its result says it is unchanged, and
   the IDENTICAL_TURNS-th turn in a row of nothing but such calls ends the agent ``failed``.
   So does the REPEATED_FAILURES-th error result of one call (the same tool and input) in the
   run, whatever came between (``FailureWatch``), and the REPEATED_CHANGES-th time the same
   ``write`` or ``edit`` succeeds (``ChangeWatch``); the results are appended first.
   A turn of nothing but such repeats leaves an answering agent, or a change agent that
   repeated a ``write`` or ``edit``, nothing but its final: the next turn is asked with only
   the final branch, and so does one that already changed files and only read those again or
   ran commands; a change agent that repeated only reads or commands before any change (or read
   a file it has not changed) has what it needs to make it: the next turn is asked with only
   ``write``, ``edit`` and the final; a planner of a change that has handed out no piece yet,
   with only ``agent`` and the final (``aerix.domain.repeats.next_turn_after``). A change
   agent (``AgentSpec.makes_changes``) is told the next step after each turn's results
   (``next_step_note``).

The callable tools are offered as they exist when the run starts
(``aerix.domain.tool_choices``): ``agent``'s ``definition`` and ``member`` and ``skill``'s
``name`` are enums of the installed definitions, the loaded members and the installed skills
(left out when there is nothing, or nothing else, to name), so a constrained turn cannot name
what is not there. The turn schema and the parse both use these.

A hook's ``continue: false`` (any event the agent fires) ends it ``killed`` with the hook's
``stopReason``.

Every way out records ``agent.end``; background jobs still running are killed first. The pool's
errors end the agent ``failed`` with the error's line as the reason.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

import anyio

from aerix.app.agent.asking import AskEnded, GenerationCancelled, TurnAsker
from aerix.app.agent.dispatch import Dispatcher
from aerix.app.agent.env import AgentEnvironment, AgentResult, AgentSpec
from aerix.app.agent.finals import NEXT_STEP_LABEL, Ended, Finals
from aerix.app.agent.live_context import LiveContext, compact_if_needed
from aerix.app.agent.loop_tools import PlanState
from aerix.app.hooks.fire import HookStopped
from aerix.app.ports.agents import Caller, ToolHooks
from aerix.app.ports.pool import MemberInfo
from aerix.domain import events as ev
from aerix.domain.compaction import ContextBudget, check_room
from aerix.domain.repeats import ChangeWatch, FailureWatch, NextTurn, RepeatWatch, next_turn_after
from aerix.domain.segments import SegmentKind
from aerix.domain.tool_choices import ToolChoices, offered_tools
from aerix.domain.tools import FILE_CHANGING_TOOLS, ToolSpec
from aerix.domain.turn_notes import next_step_note
from aerix.domain.turns import ToolCall, Turn, turn_schema
from aerix.errors import PoolError

CANCELLED = "cancelled"
#: The tools a held turn may call beside its final: none, a change's, or ``agent``.
HELD_TOOLS: Final[Mapping[NextTurn, frozenset[str]]] = MappingProxyType(
    {"final": frozenset(), "change": FILE_CHANGING_TOOLS, "delegate": frozenset({"agent"})}
)
#: The kinds of the leading segments every agent of a request shares (an implementer forks them).
_PREFIX_KINDS = frozenset({SegmentKind.SYSTEM, SegmentKind.INSTRUCTIONS})


async def run_agent(spec: AgentSpec, env: AgentEnvironment) -> AgentResult:
    """Run ``spec``'s turns on its pool context until a final, its budget or a named failure;
    record ``agent.end`` and return how it ended."""
    return await _AgentRun(spec, env).run()


class _AgentRun:
    def __init__(self, spec: AgentSpec, env: AgentEnvironment) -> None:
        self.spec = spec
        self.env = env
        budget = ContextBudget.from_settings(spec.window, env.settings.context)
        self.live = LiveContext(env.pool, env.events, env.contexts, spec.agent_id, spec.context_id, budget)
        self.live.hooks, self.live.agent_type = env.hooks, spec.agent_type
        self.runner = env.tools(env.cwd, env.skills)
        self.runner.mark_seen(spec.seen_files)
        self.thread_cancel = threading.Event()
        self.plan = PlanState(spec.plan)
        self.dispatcher = Dispatcher(
            self.live,
            self.runner,
            env.prompts,
            env.spool,
            env.settings.context.tool_caps,
            self.plan,
            self.thread_cancel,
            hooks=env.hooks,
            cwd=env.cwd,
            ask_user=env.ask_user,
            delegate=self._delegate if env.delegator is not None else None,
            plan_gate=env.plan_gate,
            permissions=env.permissions,
        )
        self.asker = TurnAsker(spec, env, self.live)
        self.repeats = RepeatWatch()
        self.failures = FailureWatch()
        self.changes = ChangeWatch()
        self._members: list[MemberInfo] | None = None
        self.turns = 0
        self.hard_limit_hits = 0
        #: What the next turn is held to, if anything (``next_turn_after``).
        self.next_turn: NextTurn | None = None
        self.finals = Finals(spec, env, self.live, self.runner, self.dispatcher, self.thread_cancel)

    @property
    def agent_id(self) -> str:
        return self.spec.agent_id

    async def run(self) -> AgentResult:
        ended = Ended("killed", CANCELLED)  # what stands if the run is cancelled from outside
        error: Exception | None = None
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._watch_cancel)
                try:
                    ended = await self._turns()
                except GenerationCancelled:
                    ended = Ended("killed", CANCELLED)
                except HookStopped as stopped:
                    ended = Ended("killed", stopped.reason)
                except PoolError as exc:
                    ended = Ended("failed", str(exc))
                except Exception as exc:  # raised after the task group, not inside an exception group
                    error = exc
                    ended = Ended("failed", str(exc) or type(exc).__name__)
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                killed = await anyio.to_thread.run_sync(self.runner.jobs.kill_all)
                self.dispatcher.record_killed(killed)
                self._record_end(ended)
        if error is not None:
            raise error
        return self._result(ended)

    async def _watch_cancel(self) -> None:
        try:
            await self.env.cancel.wait()
        finally:
            # Also when the run is cancelled from outside (Ctrl-C): a tool running on a worker
            # thread (a foreground bash) stops and kills its process group instead of running on.
            self.thread_cancel.set()
        self.asker.cancel_generation()

    async def _delegate(self, calls: Sequence[ToolCall], hooks: ToolHooks) -> list[str]:
        delegator = self.env.delegator
        if delegator is None:  # not offered as the dispatcher's delegate then
            raise RuntimeError("agent calls without a delegator")
        return await delegator.run_calls(self._caller(), calls, hooks)

    def _caller(self) -> Caller:
        """This agent as the caller of its ``agent`` calls, with the shared prefix it holds."""
        count = self.spec.shared_prefix
        segments = self.live.segments
        if count is None:
            count = 0
            while count < len(segments) and segments[count].kind in _PREFIX_KINDS:
                count += 1
        prefix = tuple(segments[:count])
        return Caller(self.agent_id, self.spec.depth, self.spec.member, self.spec.context_id, prefix)

    # -- the loop ----------------------------------------------------------------------------

    async def _turns(self) -> Ended:
        await self.live.open()
        tools = await self._offered_tools()
        constraint = await self._constraint(tools)
        while True:
            if self.env.cancel.is_set():
                return Ended("killed", CANCELLED)
            if self.turns >= self.spec.max_turns:
                return Ended("budget", f"the turn budget ran out ({self.spec.max_turns} turns)")
            asked = await self._room_for_turn()
            if isinstance(asked, Ended):
                return asked
            self.turns += 1
            turn_number = self.live.next_number("m")
            asks = self._turn_constraint(constraint, tools)
            turn = await self.asker.ask(turn_number, asked, asks, tools)
            if isinstance(turn, AskEnded):
                return Ended(turn.outcome, turn.reason)
            if turn.is_final:
                going_on = await self.finals.going_on(turn, turn_number, self.turns)
                if going_on is None:
                    return self.finals.ended_by(turn)
                self.repeats.reset()  # the agent was told something new
                if going_on == "nothing changed":
                    self.next_turn = None
                continue
            ended = await self._run_calls(turn, turn_number)
            if ended is not None:
                return ended

    async def _run_calls(self, turn: Turn, turn_number: int) -> Ended | None:
        """Run the turn's calls, except those that repeat the previous turn's unchanged (their
        result says so); the IDENTICAL_TURNS-th turn in a row of nothing else ends the agent,
        and so does a call's REPEATED_FAILURES-th error result, or a change's REPEATED_CHANGES-th
        success (after the results are in)."""
        if self.runner.jobs.running_ids():
            self.repeats.reset()  # a background job may change what any call sees
        check = self.repeats.check(turn.calls)
        can_change = any(tool.name in FILE_CHANGING_TOOLS for tool in self.spec.tools)
        self.next_turn = next_turn_after(
            turn.calls,
            check.unchanged,
            makes_changes=self.spec.makes_changes,
            can_change=can_change,
            changed=self.dispatcher.files_touched,
            delegates=self.finals.nothing_handed_out(),
        )
        ran = await self.dispatcher.run_turn(turn, turn_number, check.unchanged, next_turn=self.next_turn)
        if ran.jobs_reported:
            self.repeats.reset()  # finished jobs reported after the results
        calls = {call.id: call for call in turn.calls}
        self.repeats.failed([calls[r.call_id] for r in ran.results if r.is_error])
        if check.failure is not None:
            return Ended("failed", check.failure)
        results = [(calls[r.call_id], r.text, r.is_error) for r in ran.results if r.unchanged_since is None]
        failed = self.failures.check(results) or self.changes.check(results)
        if failed is not None:
            return Ended("failed", failed)
        if self.spec.makes_changes:
            changes = [is_error for call, _text, is_error in results if call.tool in FILE_CHANGING_TOOLS]
            note = next_step_note(changes, has_changed=bool(self.dispatcher.files_touched))
            await self.live.add_note(note, label=NEXT_STEP_LABEL)
        return None

    async def _offered_tools(self) -> tuple[ToolSpec, ...]:
        """The callable tools, their fields that name something built from what exists now:
        the delegator's definitions, the loaded members (asked only when ``agent`` is callable)
        and the skills."""
        delegator, skills = self.env.delegator, self.env.skills
        delegates = delegator is not None and any(tool.name == "agent" for tool in self.spec.tools)
        members = await self._member_list() if delegates else []
        choices = ToolChoices(
            definitions=delegator.definition_names if delegator is not None else (),
            skills=skills.names if skills is not None else (),
            members=tuple(member.name for member in members if member.state == "ready"),
            own_member=self.spec.member,
        )
        return offered_tools(self.spec.tools, choices)

    async def _member_list(self) -> list[MemberInfo]:
        """The pool's members, asked once per run."""
        if self._members is None:
            self._members = await self.env.pool.members.loaded()
        return self._members

    async def _constraint(self, tools: Sequence[ToolSpec]) -> dict[str, Any] | None:
        supported = self.spec.json_constraint
        if supported is None:
            members = await self._member_list()
            member = next((m for m in members if m.name == self.spec.member), None)
            supported = member is not None and "json" in member.constraints
        if not supported:
            return None
        return {"json": turn_schema(tools, verifier=self.spec.verifier)}

    def _turn_constraint(
        self, constraint: dict[str, Any] | None, tools: Sequence[ToolSpec]
    ) -> dict[str, Any] | None:
        """This turn's constraint: the run's, held (``next_turn``), or, for a verifier that has
        not called a tool yet, calls only. A verdict on work it never looked at counts as a fail
        (UNINSPECTED_PASS), and that fail sends the implementer round again: asked to fix add()
        in calc.py, the 1.5B's verifier passed the fix without a look, and the retry it caused
        rewrote calc.py without the mul() beside add()."""
        if constraint is None:
            return None
        if self.next_turn:
            return self._held_constraint(self.next_turn, tools)
        if self.spec.verifier and tools and not self.dispatcher.calls_run:
            return {"json": turn_schema(tools, verifier=True, final=False)}
        return constraint

    def _held_constraint(self, held_to: NextTurn, tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The turn schema the next turn is held to: the final branch, with the tools
        HELD_TOOLS names beside it."""
        held = [tool for tool in tools if tool.name in HELD_TOOLS[held_to]]
        return {"json": turn_schema(held, verifier=self.spec.verifier)}

    async def _room_for_turn(self) -> int | Ended:
        """Compact when needed, then this turn's max_new_tokens (or the context floor)."""
        await compact_if_needed(self.live, self.env.prompts)
        check = check_room(self.live.tokens, self.live.budget, self.hard_limit_hits)
        self.hard_limit_hits = check.hard_limit_hits
        if check.outcome == "floor":
            return Ended("killed", check.reason)
        return check.max_new_tokens

    # -- the end -------------------------------------------------------------------------------

    def _record_end(self, ended: Ended) -> None:
        self.env.events.record(
            ev.AgentEnd,
            agent=self.agent_id,
            outcome=ended.outcome,
            reason=ended.reason,
            summary=ended.final,
            turns=self.turns,
            verdict=ended.verdict,
            files_touched=list(self.dispatcher.files_touched),
            checks_run=list(self.dispatcher.checks_run),
        )

    def _result(self, ended: Ended) -> AgentResult:
        return AgentResult(
            outcome=ended.outcome,
            final=ended.final,
            reason=ended.reason,
            turns=self.turns,
            usage=self.asker.usage,
            verdict=ended.verdict,
            files_touched=tuple(self.dispatcher.files_touched),
            checks_run=tuple(self.dispatcher.checks_run),
            plan=self.plan.text,
            tool_calls=self.dispatcher.calls_run,
        )

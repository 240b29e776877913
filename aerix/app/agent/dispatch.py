"""Running one turn's calls and appending their results.

The calls run in order; ``agent`` calls run after the others, all of a turn's at once, through
the agent's delegate (:mod:`aerix.app.delegation`: concurrently, at most ``delegation.parallel``
at a time; without a delegate each is ``error: delegation is not available yet``). Results are
appended in call order as user segments headed ``[<tool> <id>]``, each within its
``context.tool_caps`` entry and fitted to the room the window leaves
(:mod:`aerix.app.agent.tool_output`): fitted, fitted after one compaction, else the spool pointer
alone. A tool error is a result like any other.

Background jobs: a ``bash`` call with ``background`` starts a job (a ``job`` event); finished
jobs' reports (``[job jN exited N]`` with the output) are appended after the turn's results,
each with its ``job`` event.

Hooks: each call goes through ``PreToolUse`` first (a deny, or an ``ask`` nobody answered yes,
is the result ``refused: <reason>``; an ``updatedInput`` replaces the call's input) and
``PostToolUse`` (``PostToolUseFailure`` for an ``error:`` result) after; a block's reason and
any additional context reach the model with the result. ``agent`` calls too: each piece runs
between its own PreToolUse and PostToolUse, inside its ``delegation.parallel`` slot.

Permissions: a call a deny rule matches (``permissions.deny``, ``--disallowedTools``; or a tool
outside ``--tools``) does not run, checked after PreToolUse (on the input a hook may have
rewritten, so no hook can let a denied call through); its result is ``error: denied by the
permission rule <rule> (from <where>)`` and its ``message`` event names the rule
(``denied_rule``, ``denied_from``). PostToolUse does not fire for it.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from aerix.app.agent.env import AskUser, PlanGateLike
from aerix.app.agent.live_context import LiveContext
from aerix.app.agent.loop_tools import (
    DELEGATION_UNAVAILABLE,
    ContextTool,
    PlanState,
    plan_tool,
    plan_write_text,
)
from aerix.app.agent.result_target import LiveResultTarget
from aerix.app.agent.tool_output import ToolOutput, append_result
from aerix.app.hooks.fire import Hooks
from aerix.app.ports.agents import ToolHooks
from aerix.app.ports.project import PromptSource
from aerix.app.ports.tools import JobReportLike, SpoolWriter, ToolRunner
from aerix.domain import events as ev
from aerix.domain.claude_format import claude_tool_id
from aerix.domain.claude_tools import tool_name_aliases
from aerix.domain.hook_answers import HookVerdict
from aerix.domain.hook_payloads import tool_error, tool_fields, tool_response, updated_input
from aerix.domain.permissions import NO_RESTRICTIONS, Denial, Permissions
from aerix.domain.pieces import piece_outcome
from aerix.domain.repeats import NextTurn, twin_result, twins_in_turn, unchanged_result
from aerix.domain.settings import ToolCaps
from aerix.domain.tools import FILE_CHANGING_TOOLS
from aerix.domain.turns import ToolCall, Turn

_JOB_STARTED = re.compile(r"^started job (j\d+)")
#: Runs a turn's agent calls, each inside the given tool hooks, and gives each one's result
#: text, in call order.
Delegate = Callable[[Sequence[ToolCall], ToolHooks], Awaitable[list[str]]]
_TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
#: The result of a call a hook refused.
REFUSED_PREFIX = "refused: "


@dataclass(frozen=True)
class Result:
    """One call's result on its way into the context."""

    call_id: str
    tool: str
    text: str
    #: The earlier call this one repeats, when it was not run again (its text says so).
    unchanged_since: str | None = None

    @property
    def is_error(self) -> bool:
        return self.text.startswith("error:")


@dataclass(frozen=True)
class RanTurn:
    """What running a turn's calls gave: each call's result, in call order, and whether
    finished background jobs reported after them."""

    results: tuple[Result, ...]
    jobs_reported: bool


@dataclass
class Dispatcher:
    """Runs an agent's calls; one per agent run."""

    live: LiveContext
    runner: ToolRunner
    prompts: PromptSource
    spool: SpoolWriter
    caps: ToolCaps
    plan: PlanState
    cancel: threading.Event
    plan_gate: PlanGateLike | None = None
    files_touched: list[str] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)
    #: Calls run so far, refused and failed ones included.
    calls_run: int = 0
    #: The outcome of each piece its ``agent`` calls ran, in order.
    piece_outcomes: list[ev.AgentOutcome] = field(default_factory=list)
    #: ``agent`` calls answered so far, refused and failed ones included.
    agent_calls: int = 0
    #: Background job id -> (the call that started it, its command).
    jobs: dict[str, tuple[str, str]] = field(default_factory=dict)
    hooks: Hooks | None = None
    cwd: Path = field(default_factory=Path.cwd)
    ask_user: AskUser | None = None
    delegate: Delegate | None = None
    permissions: Permissions = NO_RESTRICTIONS
    #: Calls a permission rule refused: call id -> the denial (for their result's event).
    denials: dict[str, Denial] = field(default_factory=dict)

    @property
    def agent_id(self) -> str:
        return self.live.agent_id

    async def run_turn(
        self,
        turn: Turn,
        turn_number: int,
        unchanged: Mapping[str, str] | None = None,
        *,
        next_turn: NextTurn | None = None,
    ) -> RanTurn:
        """Run the turn's calls, then append their results, its notes and finished jobs; a call
        in ``unchanged`` (call id -> the earlier call it repeats) is not run, its result says so
        (and, with ``next_turn``, what the next turn is held to); nor is one that repeats an
        earlier call of this turn (``twins_in_turn``)."""
        context_tool = ContextTool(self.live)
        results = {
            call.id: Result(
                call.id,
                call.tool,
                unchanged_result(call.tool, since, next_turn=next_turn),
                unchanged_since=since,
            )
            for call in turn.calls
            if unchanged and (since := unchanged.get(call.id)) is not None
        }
        twins = twins_in_turn([call for call in turn.calls if call.id not in results])
        for call in turn.calls:
            if (first := twins.get(call.id)) is not None:
                results[call.id] = Result(
                    call.id, call.tool, twin_result(call.tool, first), unchanged_since=first
                )
        to_run = [call for call in turn.calls if call.id not in results]
        self.calls_run += len(to_run)
        for call in to_run:
            if call.tool != "agent":
                results[call.id] = Result(call.id, call.tool, await self._run(call, context_tool))
        agent_calls = [call for call in to_run if call.tool == "agent"]
        if agent_calls:
            if self.delegate is None:
                texts = [DELEGATION_UNAVAILABLE] * len(agent_calls)
            else:
                texts = await self.delegate(agent_calls, self.with_tool_hooks)
            for call, text in zip(agent_calls, texts, strict=True):
                results[call.id] = Result(call.id, call.tool, text)
        for call in turn.calls:
            await self.append(results[call.id], turn_number)
        self.runner.end_turn()
        for note in turn.notes:
            await self.live.add_note(note)
        reports = self.runner.jobs.take_finished()
        await self.append_jobs(reports, turn_number)
        return RanTurn(tuple(results[call.id] for call in turn.calls), bool(reports))

    async def _run(self, call: ToolCall, context_tool: ContextTool) -> str:
        async def run(args: dict[str, Any]) -> str:
            if call.tool == "plan":
                return await self._plan(args)
            if call.tool == "context":
                return await context_tool.run(args)
            unsearchable = self.permissions.unsearchable(str(self.cwd))
            text = await anyio.to_thread.run_sync(self.runner.run, call.tool, args, self.cancel, unsearchable)
            self._note_effects(call, args, text)
            return text

        return await self.with_tool_hooks(call, run)

    async def _plan(self, args: dict[str, Any]) -> str:
        """A plan write, held by the plan gate when there is one (the root's first, on the screen)."""
        written = plan_write_text(args)
        gate = self.plan_gate
        review = (
            await gate.review(self.agent_id, written)
            if gate and written and not self.cancel.is_set()
            else None
        )
        return plan_tool(self.agent_id, self.plan, self.live.events, args, review)

    async def with_tool_hooks(self, call: ToolCall, run: Callable[[dict[str, Any]], Awaitable[str]]) -> str:
        """``run`` the call between its PreToolUse and PostToolUse hooks."""
        hooks, args = self.hooks, dict(call.input)
        names = tool_name_aliases(call.tool)
        if hooks is None or not hooks.wants(_TOOL_EVENTS, names):
            denied = self._denied(call, args)
            return denied if denied is not None else await run(args)
        cwd = str(self.cwd)
        fields = tool_fields(call.tool, args, cwd, claude_tool_id(self.agent_id, call.id))

        async def fire(event: str, event_fields: Mapping[str, Any]) -> HookVerdict:
            agent_type = self.live.agent_type
            return await hooks.fire(
                event, event_fields, match=names, agent=self.agent_id, agent_type=agent_type, call=call.id
            )

        pre = await fire("PreToolUse", fields)
        refusal = await self._refusal(call, args, pre)
        if refusal is not None:
            return refusal
        if pre.updated_input is not None:
            args = updated_input(call.tool, pre.updated_input)
            fields = tool_fields(call.tool, args, cwd, fields["tool_use_id"])
        denied = self._denied(call, args)
        if denied is not None:
            return denied
        began = time.monotonic()
        text = await run(args)
        duration_ms = round((time.monotonic() - began) * 1000)
        if text.startswith("error:"):
            event = "PostToolUseFailure"
            after = {"error": tool_error(text), "is_interrupt": self.cancel.is_set()}
        else:
            event = "PostToolUse"
            after = {"tool_response": tool_response(call.tool, args, text, cwd), "aerix_tool_response": text}
        post = await fire(event, {**fields, **after, "duration_ms": duration_ms})
        return _with_feedback(text, fields["tool_name"], pre, event, post)

    def _denied(self, call: ToolCall, args: Mapping[str, Any]) -> str | None:
        """The result of a call a permission rule refuses, else None."""
        denial = self.permissions.denial(call.tool, args, str(self.cwd))
        if denial is None:
            return None
        self.denials[call.id] = denial
        return denial.result_text()

    async def _refusal(self, call: ToolCall, args: Mapping[str, Any], pre: HookVerdict) -> str | None:
        if pre.decision == "deny":
            return REFUSED_PREFIX + (pre.reason or "a PreToolUse hook denied this call")
        if pre.decision in ("ask", "defer"):
            reason = pre.reason or "a PreToolUse hook asks before this call runs"
            if self.ask_user is None:
                return (
                    f"{REFUSED_PREFIX}{reason} (a hook asked for confirmation and nobody is here to give it)"
                )
            if not await self.ask_user(call.tool, args, reason):
                return f"{REFUSED_PREFIX}{reason} (you said no)"
        return None

    def _note_effects(self, call: ToolCall, args: Mapping[str, Any], text: str) -> None:
        if text.startswith("error:"):
            return
        path = args.get("path")
        if call.tool in FILE_CHANGING_TOOLS and isinstance(path, str) and path not in self.files_touched:
            self.files_touched.append(path)
        if call.tool != "bash":
            return
        command = str(args.get("command", ""))
        self.checks_run.append(command)
        started = _JOB_STARTED.match(text)
        if started:
            job_id = started.group(1)
            self.jobs[job_id] = (call.id, command)
            self.live.events.record(
                ev.Job, agent=self.agent_id, job=job_id, command=command, state="started", call=call.id
            )

    # -- results ---------------------------------------------------------------------------

    async def append(self, result: Result, turn_number: int) -> None:
        header = f"[{result.tool} {result.call_id}]"
        segment_id = f"{self.agent_id}.{result.call_id}"
        output = ToolOutput(result.text, self.caps.cap_for(result.tool), self.spool, segment_id)
        outcome = piece_outcome(result.text) if result.tool == "agent" else None
        if outcome is not None:
            self.piece_outcomes.append(outcome)
        if result.tool == "agent":
            self.agent_calls += 1
        await self._append_output(
            output,
            segment_id,
            header,
            result.tool,
            result.call_id,
            turn_number,
            result.is_error,
            outcome,
            unchanged_since=result.unchanged_since,
        )

    async def append_jobs(self, reports: Sequence[JobReportLike], turn_number: int) -> None:
        """Append finished jobs' reports (each already headed ``[job jN …]``) with their events."""
        for report in reports:
            call_id = self._record_job(report)
            segment_id = f"{self.agent_id}.{call_id or 'job'}.{report.job_id}"
            output = ToolOutput(report.text, self.caps.job, self.spool, segment_id)
            await self._append_output(output, segment_id, None, "bash", call_id, turn_number, False)

    def record_killed(self, reports: Sequence[JobReportLike]) -> None:
        """Jobs stopped because the agent ended: their ``job`` events only."""
        for report in reports:
            self._record_job(report)

    def _record_job(self, report: JobReportLike) -> str | None:
        """The ``job`` event of a job that ended; returns the call that started it, if known."""
        call_id, command = self.jobs.get(report.job_id, ("", report.command))
        self.live.events.record(
            ev.Job,
            agent=self.agent_id,
            job=report.job_id,
            command=command,
            state=job_state(report),
            exit=report.outcome.returncode,
            call=call_id or None,
        )
        return call_id or None

    async def _append_output(
        self,
        output: ToolOutput,
        segment_id: str,
        header: str | None,
        tool: str,
        call_id: str | None,
        turn_number: int,
        is_error: bool,
        piece: ev.AgentOutcome | None = None,
        *,
        unchanged_since: str | None = None,
    ) -> None:
        target = LiveResultTarget(self.live, self.prompts, segment_id, header, tool, call_id)
        denial = self.denials.get(call_id) if call_id and header else None
        outcome = await append_result(target, output)
        if not outcome.appended:
            # Even the pointer alone did not leave a turn's room: append it all the same, so the
            # model learns where its result is; the next turn's room check decides what follows.
            await target.append_anyway(outcome.text)
        segment = target.appended
        assert segment is not None
        self.live.record_segment(segment)
        self.live.record(
            ev.Message,
            role="tool",
            turn=turn_number,
            text=segment.text or "",
            segment=segment.id,
            call=call_id,
            tool=tool,
            is_error=is_error,
            spool=str(output.spool_path) if output.spool_path else None,
            outcome=piece,
            unchanged_since=unchanged_since,
            denied_rule=denial.rule if denial else None,
            denied_from=denial.origin if denial else None,
        )


def _with_feedback(text: str, tool_name: str, pre: HookVerdict, event: str, post: HookVerdict) -> str:
    """The result with what the hooks had to tell the model, in Claude Code's words."""
    lines = [text]
    if pre.context:
        lines.append(f"PreToolUse:{tool_name} hook additional context: {pre.context}")
    if post.blocked:
        lines.append(f"{event}:{tool_name} hook feedback: {post.reason}")
    if post.context:
        lines.append(f"{event}:{tool_name} hook additional context: {post.context}")
    return "\n\n".join(lines)


JobState = Literal["exited", "killed", "timeout"]


def job_state(report: JobReportLike) -> JobState:
    outcome = report.outcome
    if outcome.timed_out:
        return "timeout"
    if outcome.stopped or (outcome.returncode is not None and outcome.returncode < 0):
        return "killed"
    return "exited"

"""One request once its session is open: the SessionStart and UserPromptSubmit hooks, routing
(cancellable), the root agent's segments and run, then ``session.end``, the SessionEnd hook and
the request's result."""

from __future__ import annotations

import time
from dataclasses import dataclass

import anyio

from aerix.app.agent.attachments import attach_named_files
from aerix.app.agent.loop_tools import PLAN_ABORTED, FirstPlanGate
from aerix.app.hooks.fire import Hooks, HookSession, HookStopped, no_hooks
from aerix.app.pool.members import BoundMembers
from aerix.app.ports.pool import PoolPort
from aerix.app.ports.project import Project, PromptSource
from aerix.app.ports.request import CancelSignal, RequestControls, RequestResult
from aerix.app.request.options import RequestDeps, RequestOptions
from aerix.app.request.recorder import RequestRecorder
from aerix.app.request.root import EXIT_CODES, RootEnded, RootRun, run_root
from aerix.app.request.root_context import (
    planner_tool_names,
    prompt_text,
    refreshed_system,
    request_segments,
    shared_prefix,
    system_text,
)
from aerix.app.request.routing import route_request
from aerix.domain import events as ev
from aerix.domain.diffs import Snapshot
from aerix.domain.segments import ContextSegment
from aerix.errors import AerixError, OutputClosed
from aerix.projections.contexts import Contexts
from aerix.projections.resume_point import ResumeState


@dataclass
class OpenRequest:
    """One request once its session is open: route, run the root, end."""

    options: RequestOptions
    deps: RequestDeps
    project: Project
    members: BoundMembers
    pool: PoolPort
    tap: RequestRecorder
    contexts: Contexts  # the session's ``contexts`` view: what its agents' live contexts read
    resume: ResumeState | None
    prompts: PromptSource  # the profile commit's texts (the release's where it tunes none)
    controls: RequestControls
    fork: bool = False  # the request's session is a copy it made of ``resume``
    route: str | None = None
    hooks: Hooks | None = None

    @property
    def number(self) -> int:
        return self.resume.requests + 1 if self.resume else 1

    async def run(self, start: ev.SessionStart, snapshot: Snapshot, began: float) -> RequestResult:
        try:
            self.tap.follow(start)
            self.hooks = self._hooks()
            ended = await self._route_and_run(self.hooks)
        except HookStopped as stopped:
            ended = _failure(stopped.reason, "killed")
        except OutputClosed as closed:  # the reader went away: stop, as SIGPIPE would, and say so
            ended = RootEnded("cancelled", closed.exit_code, reason=str(closed))
        except AerixError as exc:
            ended = _failure(str(exc))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._finish(snapshot, _failure("cancelled", "cancelled"), began)
            raise
        return await self._finish(snapshot, ended, began)

    def _hooks(self) -> Hooks:
        """The request's hooks: the project's sources, run by the wired runner; the transcript
        is kept up to date as the session goes (and for them)."""
        tap, project = self.tap, self.project
        if not project.hook_sources:
            return no_hooks(tap)
        return Hooks(
            project.hook_sources,
            self.deps.hooks(project.root),
            tap,
            HookSession(tap.writer.ref.id, str(project.cwd)),
            transcript=tap.transcript,
            spool=tap,
            notify=tap.observer.note,
        )

    async def _route_and_run(self, hooks: Hooks) -> RootEnded:
        project, cancel = self.project, self.controls.cancel
        source = "startup" if self.resume is None else "fork" if self.fork else "resume"
        started = await hooks.fire(
            "SessionStart", {"source": source, "model": self.members.main.model}, match=(source,)
        )
        prompt = project.skills.expand_prompt(self.options.prompt)
        submitted = await hooks.fire("UserPromptSubmit", {"prompt": prompt})
        if submitted.blocked:
            reason = submitted.reason or "no reason given"
            return _failure(f"a UserPromptSubmit hook blocked the prompt: {reason}", "killed")
        if submitted.context:
            prompt = f"{prompt}\n\n{submitted.context}"
        router = self.members.router
        choice = None
        error: Exception | None = None
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_cancel_on, cancel, tasks.cancel_scope)
            try:
                choice = await route_request(
                    self.pool,
                    router.name,
                    prompt,
                    self.prompts,
                    self.tap,
                    one_of="one_of" in router.constraints,
                )
            except Exception as exc:  # raised after the task group, not inside an exception group
                error = exc
            tasks.cancel_scope.cancel()
        if error is not None:
            raise error
        if choice is None or cancel.is_set():
            return _failure("cancelled", "cancelled")
        self.route = choice.choice
        decided = {"choice": choice.choice, "scores": dict(choice.scores), "member": router.name}
        await hooks.fire("RouteDecision", decided, match=(choice.choice,))
        attached = attach_named_files(
            prompt, self.deps.tools(project.cwd, None), project.permissions, project.cwd
        )
        rebuilt, added = self._segments(prompt, choice.choice, started.context or None, attached.text)
        rebuilt, replaced = self._refreshed(rebuilt)
        gate = FirstPlanGate(self.controls.plan_gate, cancel) if self.controls.plan_gate else None
        ended = await self._run_root(choice.choice, rebuilt, added, gate, hooks, replaced, attached.paths)
        if cancel.is_set() and ended.outcome == "killed":
            return _failure(PLAN_ABORTED if gate and gate.aborted else "cancelled", "cancelled")
        return ended

    async def _run_root(
        self,
        route: str,
        rebuilt: list[ContextSegment],
        added: list[ContextSegment],
        gate: FirstPlanGate | None,
        hooks: Hooks,
        replaced: list[ContextSegment],
        seen_files: tuple[str, ...],
    ) -> RootEnded:
        deps, project = self.deps, self.project
        return await run_root(
            RootRun(
                pool=self.pool,
                events=self.tap,
                contexts=self.contexts,
                prompts=self.prompts,
                project=project,
                member=self.members.main,
                rebuilt=rebuilt,
                added=added,
                route=route,
                max_turns=self.options.max_turns,
                plan=self.resume.plan if self.resume else None,
                spool=self.tap,
                tools=deps.tools,
                on_token=self.tap.observer.token,
                hooks=hooks,
                cancel=self.controls.cancel,
                plan_gate=gate,
                replaced=replaced,
                seen_files=seen_files,
            )
        )

    def _segments(
        self, prompt: str, route: str, hook_context: str | None, attached: str
    ) -> tuple[list[ContextSegment], list[ContextSegment]]:
        """(a resumed root's segments, already in the log; this request's new segments)."""
        prompts = self.prompts
        planner_tools = planner_tool_names(self.project.settings, self.project.permissions)
        text = prompt_text(
            prompt, route, prompts, planner_tools, self.project.settings.delegation.planner_routes, attached
        )
        added = request_segments(self.number, text, hook_context)
        if self.resume is not None and self.resume.root.segments:
            if self.options.append_system_prompt and not self.options.profile_refresh:
                self.tap.observer.note(
                    "--append-system-prompt shapes a new session's system prompt; "
                    f"session {self.resume.session} keeps the one it started with"
                )
            return self.resume.root.ordered(), added
        return [], [*shared_prefix(self._system(), self.project.instructions), *added]

    def _system(self) -> str:
        """The system segment a new session starts with, from this request's prompts."""
        project = self.project
        system = system_text(self.prompts, project.skills, project.settings, project.agents)
        if self.options.append_system_prompt:
            system = f"{system}\n\n{self.options.append_system_prompt.strip()}"
        return system

    def _refreshed(self, rebuilt: list[ContextSegment]) -> tuple[list[ContextSegment], list[ContextSegment]]:
        """With ``--profile-refresh`` a resumed root reads the new commit's prompts, its system
        segment too: (the rebuilt segments, the ones replaced, to record)."""
        if not rebuilt or not self.options.profile_refresh:
            return rebuilt, []
        return refreshed_system(rebuilt, self._system())

    async def _finish(self, snapshot: Snapshot, ended: RootEnded, began: float) -> RequestResult:
        tap = self.tap
        diff = self.deps.diffs.diff(snapshot, tap.touched)
        duration_ms = round((time.monotonic() - began) * 1000, 1)
        stats = None
        if diff.in_git:
            stats = ev.DiffStats(added=diff.added, removed=diff.removed, files=diff.files)
        tap.record(
            ev.SessionEnd,
            outcome=ended.outcome,
            exit_code=ended.exit_code,
            reason=ended.reason,
            diff=stats,
            untracked=list(diff.untracked),
            duration_ms=duration_ms,
        )
        if self.hooks is not None:
            outcome = {"reason": "other", "outcome": ended.outcome, "exit_code": ended.exit_code}
            await self.hooks.fire("SessionEnd", outcome, match=("other",))
        return RequestResult(
            session_id=tap.writer.ref.id,
            outcome=ended.outcome,
            exit_code=ended.exit_code,
            result=ended.result,
            reason=ended.reason,
            route=self.route,
            turns=ended.turns,
            usage=tap.usage,
            diff=diff,
            duration_ms=duration_ms,
            request=self.number,
            resumed=self.resume is not None,
            model=self.members.main.model,
            log=tap.writer.log_path,
            notes=(*ended.notes, *diff.notes),
            pieces=tuple(tap.pieces),
        )


async def _cancel_on(event: CancelSignal, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _failure(reason: str, outcome: str = "failed") -> RootEnded:
    return RootEnded(outcome, EXIT_CODES[outcome], reason=reason)

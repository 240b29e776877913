"""A request, end to end (``aerix -p``): startup, the session, routing, the root agent, the end.

    project = read settings, instructions, skills, agents, hooks      (ProjectSource)
    resume  = the session to continue, refused at once if imported     (SessionStorage)
    snapshot of the working tree                                       (DiffSource)
    pool    = found or started, members bound                          (PoolStarter)
    profile = attached: prompts and overlays read from one commit      (ProfileStore)
    session.start → SessionStart → UserPromptSubmit → route → RouteDecision
        → a1's context (segment events) → run_agent → session.end → SessionEnd → the diff

Every dependency comes in through ``RequestDeps``; ``aerix.wiring`` builds the real ones.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

from aerix.app.agent.loop_tools import PLAN_ABORTED, FirstPlanGate
from aerix.app.hooks.fire import Hooks, HookSession, HookStopped, no_hooks
from aerix.app.ports import (
    CancelSignal,
    Clock,
    DiffSource,
    HookRunnerFactory,
    PoolPort,
    PoolStarter,
    ProfileStore,
    Project,
    ProjectSource,
    PromptSource,
    RequestControls,
    RequestObserver,
    RequestResult,
    SessionStorage,
    ToolRunnerFactory,
)
from aerix.app.profiles.attach import AttachedProfile, ProfileRequest, attach_profile, preview_profile
from aerix.app.request.recorder import RequestRecorder
from aerix.app.request.root import EXIT_CODES, RootEnded, RootRun, run_root
from aerix.app.request.root_context import (
    prompt_text,
    rebuilt_segments,
    request_segments,
    shared_prefix,
    system_text,
)
from aerix.app.request.routing import route_request
from aerix.app.request.startup import BoundMembers, bind_members, startup_listing
from aerix.app.sessions.queries import ResumeState, latest_session, load_for_resume
from aerix.app.sessions.transcript import TranscriptFollower
from aerix.app.sessions.writer import SessionWriter, reopen_session, start_session
from aerix.domain import events as ev
from aerix.domain.diffs import Snapshot
from aerix.domain.prompt_bytes import decode_prompt, encoded_bytes, invalid_prompt_note
from aerix.domain.segments import ContextSegment
from aerix.errors import AerixError, OutputClosed, UsageError


@dataclass(frozen=True)
class RequestOptions:
    """What the command line asked for."""

    prompt: str
    cwd: Path
    resume: str | None = None
    continue_latest: bool = False
    max_turns: int | None = None
    profile: str | None = None  # --profile; None: the profile setting (a resumed session: its own)
    profile_refresh: bool = False
    #: The id a new session gets (Claude Code's --session-id, or the one the screen shows before
    #: the first request); None: a fresh one (``new_session_id``).
    session_id: str | None = None
    #: Text added to the end of a new session's system segment (--append-system-prompt).
    append_system_prompt: str | None = None
    #: The prompt's bytes as given when they were not valid UTF-8 (``prompt`` has U+FFFD there).
    prompt_bytes: bytes | None = None


@dataclass
class RequestDeps:
    projects: ProjectSource
    pools: PoolStarter
    sessions: SessionStorage
    diffs: DiffSource
    prompts: PromptSource  # the release's own texts
    profiles: ProfileStore
    embedded: Mapping[str, str]  # every prompt a profile may tune, by name
    tools: ToolRunnerFactory
    #: Makes the runner of the project's hook handlers (used when the project has hooks).
    hooks: HookRunnerFactory
    clock: Clock
    version: str  # aerix's own, recorded in session.start


async def run_request(
    options: RequestOptions,
    deps: RequestDeps,
    observer: RequestObserver,
    controls: RequestControls | None = None,
) -> RequestResult:
    """Run one request and return how it ended. Errors before the session exists raise; after,
    they end the request as ``failed`` with the error's line as its reason."""
    controls = controls or RequestControls()
    began = time.monotonic()
    if options.prompt_bytes is not None:
        observer.note(invalid_prompt_note(decode_prompt(options.prompt_bytes)))
    project = deps.projects.load(options.cwd)
    for line in project.notes:
        observer.note(line)
    resume = resume_state(options, deps, project)
    if resume is None:
        _refuse_a_taken_id(options, deps, project)
    snapshot = deps.diffs.snapshot(project.cwd)
    opened = await deps.pools.open(project.settings.pool)
    try:
        members = await bind_members(opened.pool, project.settings.pool)
        for line in members.notes:
            observer.note(line)
        session_id = resume.session if resume is not None else (options.session_id or new_session_id())
        profile = attach_session_profile(options, deps, project, members, resume, session_id)
        for line in profile.notes:
            observer.note(line)
        project = _with_overlays(project, profile)
        listing = {**startup_listing(project, members), "profile": profile.listing()}
        observer.startup(listing)
        loaded = _loaded(listing)
        writer, start = _open_session(
            options, deps, project, members, resume, snapshot, loaded, session_id, profile
        )
        try:
            recorder = RequestRecorder(writer, observer)
            request = _Request(
                options, deps, project, members, opened.pool, recorder, resume, profile, controls
            )
            return await request.run(start, snapshot, began)
        finally:
            writer.close()
    finally:
        with anyio.CancelScope(shield=True):
            await opened.aclose()


def new_session_id() -> str:
    """A new session's id: a dashed UUID, as Claude Code names its sessions (its readers, the
    Agent SDK's ``list_sessions`` among them, take no other)."""
    return str(uuid.uuid4())


def _refuse_a_taken_id(options: RequestOptions, deps: RequestDeps, project: Project) -> None:
    """A new session named by the caller (--session-id) must not be one that exists: refused
    before the pool starts or the profile makes the session's branch."""
    taken = options.session_id
    if taken is not None and deps.sessions.exists(deps.sessions.ref(project.key, taken)):
        raise UsageError(f"session {taken} already exists; give --session-id a new UUID")


def resume_state(options: RequestOptions, deps: RequestDeps, project: Project) -> ResumeState | None:
    if options.resume and options.continue_latest:
        raise UsageError("--resume and --continue both name a session; give one of them")
    if options.session_id is not None and (options.resume or options.continue_latest):
        raise UsageError("--session-id names a new session; it cannot go with --resume or --continue")
    session_id = options.resume
    if options.continue_latest:
        session_id = latest_session(deps.sessions, project.key)
        if session_id is None:
            raise UsageError("no session to continue in this project; run without --continue to start one")
    return load_for_resume(deps.sessions, session_id) if session_id else None


def attach_session_profile(
    options: RequestOptions,
    deps: RequestDeps,
    project: Project,
    members: BoundMembers,
    resume: ResumeState | None,
    session_id: str,
    *,
    preview: bool = False,
) -> AttachedProfile:
    """The session's profile, attached: a resumed session keeps the profile and commit it read.
    ``preview``: read the commit without making ``session/<id>`` (the screen before a prompt)."""
    name = options.profile or project.settings.profile
    recorded = None
    if resume is not None and resume.profile is not None:
        if options.profile is not None and options.profile != resume.profile:
            raise UsageError(
                f"session {resume.session} reads its prompts from profile {resume.profile}; "
                "--profile names the profile of a new session"
            )
        name, recorded = resume.profile, resume.profile_commit
    model = members.main.model
    request = ProfileRequest(name, model, session_id, deps.version, recorded, options.profile_refresh)
    attach = preview_profile if preview else attach_profile
    return attach(deps.profiles, request, deps.embedded, deps.prompts)


def _with_overlays(project: Project, profile: AttachedProfile) -> Project:
    """The project with the profile's skill and agent overlays in place of those bodies."""
    if not profile.skill_overlays and not profile.agent_overlays:
        return project
    return replace(
        project,
        skills=project.skills.with_bodies(profile.skill_overlays),
        agents=project.agents.with_bodies(profile.agent_overlays),
    )


def _open_session(
    options: RequestOptions,
    deps: RequestDeps,
    project: Project,
    members: BoundMembers,
    resume: ResumeState | None,
    snapshot: Snapshot,
    loaded: ev.Loaded,
    session_id: str,
    profile: AttachedProfile,
) -> tuple[SessionWriter, ev.SessionStart]:
    """The session's writer and the ``session.start`` of this request (written already)."""
    start: dict[str, Any] = {
        "cwd": str(project.cwd),
        "project": project.key,
        "model": members.main.model,
        "profile": profile.name,
        "profile_branch": profile.branch,
        "profile_commit": profile.commit,
        "prompt": options.prompt,
        "prompt_bytes": None if options.prompt_bytes is None else encoded_bytes(options.prompt_bytes),
        "aerix_version": deps.version,
        "window": members.main.n_ctx,
        "base_commit": snapshot.base,
        "git_branch": snapshot.branch,
        "loaded": loaded,
    }
    if resume is None:
        writer = start_session(
            deps.sessions, deps.clock, sync=project.settings.session.sync, session=session_id, **start
        )
        if writer.session.start is None:  # Session.begin records it; never None here
            raise RuntimeError("a new session without its session.start")
        return writer, writer.session.start
    writer = reopen_session(deps.sessions, deps.clock, resume.session, project.settings.session.sync)
    record = writer.record(
        ev.SessionStart, session=resume.session, request=resume.requests + 1, resumed=True, **start
    )
    return writer, record


def _loaded(listing: dict[str, Any]) -> ev.Loaded:
    """The part of the startup listing the log keeps: what this request's context and runtime
    were built from, so a session can be understood (and tuned) without the folders it ran in."""
    return ev.Loaded(
        instruction_files=listing["instruction_files"],
        skills=listing["skills"],
        agents=listing["agents"],
        hooks=listing["hooks"],
        plugins=[plugin["name"] for plugin in listing["plugins"] if plugin["enabled"]],
    )


@dataclass
class _Request:
    """One request once its session is open: route, run the root, end."""

    options: RequestOptions
    deps: RequestDeps
    project: Project
    members: BoundMembers
    pool: PoolPort
    tap: RequestRecorder
    resume: ResumeState | None
    prompts: PromptSource  # the profile commit's texts (the release's where it tunes none)
    controls: RequestControls
    route: str | None = None
    hooks: Hooks | None = None

    @property
    def number(self) -> int:
        return self.resume.requests + 1 if self.resume else 1

    async def run(self, start: ev.SessionStart, snapshot: Snapshot, began: float) -> RequestResult:
        try:
            self.tap.observer.event(start)
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
        claude_projects = project.settings.transcript.claude_projects
        tap.transcript = TranscriptFollower(self.deps.sessions, tap.writer.ref, claude_projects)
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
        source = "resume" if self.resume is not None else "startup"
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
        rebuilt, added = self._segments(prompt, choice.choice, started.context or None)
        gate = FirstPlanGate(self.controls.plan_gate, cancel) if self.controls.plan_gate else None
        ended = await self._run_root(prompt, choice.choice, rebuilt, added, gate, hooks)
        if cancel.is_set() and ended.outcome == "killed":
            return _failure(PLAN_ABORTED if gate and gate.aborted else "cancelled", "cancelled")
        return ended

    async def _run_root(
        self,
        prompt: str,
        route: str,
        rebuilt: list[ContextSegment],
        added: list[ContextSegment],
        gate: FirstPlanGate | None,
        hooks: Hooks,
    ) -> RootEnded:
        deps, project = self.deps, self.project
        return await run_root(
            RootRun(
                pool=self.pool,
                events=self.tap,
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
            )
        )

    def _segments(
        self, prompt: str, route: str, hook_context: str | None
    ) -> tuple[list[ContextSegment], list[ContextSegment]]:
        """(a resumed root's segments, already in the log; this request's new segments)."""
        prompts = self.prompts
        planner_tools = self.project.settings.delegation.planner_tools
        text = prompt_text(prompt, route, prompts, planner_tools)
        added = request_segments(self.number, text, hook_context)
        if self.resume is not None and self.resume.root.segments:
            if self.options.append_system_prompt:
                self.tap.observer.note(
                    "--append-system-prompt shapes a new session's system prompt; "
                    f"session {self.resume.session} keeps the one it started with"
                )
            return rebuilt_segments(self.resume.root.ordered()), added
        system = system_text(prompts, self.project.skills, self.project.settings, self.project.agents)
        if self.options.append_system_prompt:
            system = f"{system}\n\n{self.options.append_system_prompt.strip()}"
        return [], [*shared_prefix(system, self.project.instructions), *added]

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

"""A session held open across requests: its project, its bound pool, its profile and, from its
first request on, its writer (the log's lock) with the views the writer keeps up to date across
requests: the resume point, every agent's context (what the agents' live contexts read) and the
Claude Code transcript.

``aerix -p`` runs one request on it; the screen and the stream-json input hold one and run each
prompt on it, so a prompt neither reads the log back (the root's context is the session's
``resume point`` view, fed by the writer as events are recorded) nor binds the pool or attaches
the profile again.

A new session's log is made by its first request, under the id the session was opened with;
until then nothing of it is on disk (the screen shows the profile commit the first request will
read without making its branch: ``preview``).

A request, end to end (``aerix -p``: ``run_request``, one request on a session opened for it):

    project = read settings, instructions, skills, agents, hooks      (ProjectSource)
    resume  = the session to continue, refused at once if imported     (SessionStorage)
    pool    = found or started, members bound                          (PoolStarter)
    snapshot of the working tree                                       (DiffSource)
    profile = attached: prompts and overlays read from one commit      (ProfileStore)
    session.start → SessionStart → UserPromptSubmit → route → RouteDecision
        → a1's context (segment events) → run_agent → session.end → SessionEnd → the diff

Every dependency comes in through ``RequestDeps`` (``aerix.app.request.options``; ``aerix.wiring``
builds the real ones). The session opens its log at its first request
(``aerix.app.request.opening``) and runs each as an ``OpenRequest``
(``aerix.app.request.open_request``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace

from aerix.app.pool.members import BoundPool, pool_session
from aerix.app.ports.project import Project
from aerix.app.ports.request import RequestControls, RequestObserver, RequestResult
from aerix.app.profiles.attach import AttachedProfile
from aerix.app.request.open_request import OpenRequest
from aerix.app.request.opening import (
    attach_session_profile,
    loaded_from,
    next_start,
    open_session,
    refuse_a_taken_id,
    request_session_id,
    resume_state,
    start_fields,
    startup_listing,
    with_overlays,
)
from aerix.app.request.options import RequestDeps, RequestOptions, SessionOptions
from aerix.app.request.recorder import RequestRecorder
from aerix.app.sessions.transcript import TranscriptFollower
from aerix.app.sessions.writer import SessionWriter
from aerix.domain.prompt_bytes import decode_prompt, invalid_prompt_note
from aerix.errors import PoolUnavailable
from aerix.projections.contexts import Contexts
from aerix.projections.resume_point import ResumePoint, ResumeState


class LiveSession:
    """One session, open: ``run`` takes a request on it, ``close`` releases its log."""

    def __init__(
        self,
        options: SessionOptions,
        deps: RequestDeps,
        project: Project,
        bound: BoundPool,
        resume: ResumeState | None,
        *,
        preview: bool = False,
        held: bool = True,
        noted: bool = False,
    ) -> None:
        """``options``: what the session was opened with; ``preview``: attach the profile without
        making ``session/<id>`` until the first request; ``held``: it stays open after a request
        for the next (the log is made durable after each, as closing it would); ``noted``: the
        first request's prompt and the project's notes were said as the session opened."""
        self.options = options
        self.deps = deps
        self.project = project
        self.bound = bound
        self.resume = resume
        self.id = request_session_id(options, resume)
        self.fork = options.fork_session and resume is not None
        self.held = held
        self._noted = noted
        self.writer: SessionWriter | None = None
        self._point = ResumePoint()
        #: Every agent's context, the writer's ``contexts`` view: held with the writer, so a held
        #: session's next root continues the fold its last one left.
        self._contexts = Contexts()
        #: The Claude Code transcript kept up to the log: the writer's ``claude transcript`` view.
        self._transcript: TranscriptFollower | None = None
        #: Attached by the first request (``preview``: read from the commit it will attach).
        self.profile = self._attach(preview=True) if preview else None

    def _attach(self, preview: bool) -> AttachedProfile:
        members = self.bound.members
        return attach_session_profile(
            self.options, self.deps, self.project, members, self.resume, self.id, preview=preview
        )

    @property
    def base_commit(self) -> str | None:
        """The commit the session started on (its first request's), once known."""
        first = self._point.first or (self.resume.start if self.resume is not None else None)
        return first.base_commit if first is not None else None

    async def run(
        self,
        options: RequestOptions,
        observer: RequestObserver,
        controls: RequestControls | None = None,
        *,
        began: float | None = None,
    ) -> RequestResult:
        """Run one request (``options``: its prompt and its own flags) on this session."""
        controls = controls or RequestControls()
        began = time.monotonic() if began is None else began
        if not self._noted:
            if options.prompt_bytes is not None:
                observer.note(invalid_prompt_note(decode_prompt(options.prompt_bytes)))
            for line in self.project.notes:
                observer.note(line)
        self._noted = False  # said at opening, for the first request only
        snapshot = self.deps.diffs.snapshot(self.project.cwd)
        members = self.bound.members
        for line in members.notes:
            observer.note(line)
        first = self.writer is None
        if first:  # the first request attaches the profile (a new session: makes session/<id>)
            self.profile = self._attach(preview=False)
        profile = self.profile
        assert profile is not None  # attached above, by the first request
        for line in profile.notes:
            observer.note(line)
        project = with_overlays(self.project, profile)
        listing = {**startup_listing(project, members), "profile": profile.listing()}
        observer.startup(listing)
        start = start_fields(options, self.deps, project, members, snapshot, loaded_from(listing), profile)
        fork = first and self.fork  # a request after the first continues the copy
        if self.writer is None:
            self.writer, record = open_session(fork, self.deps, project, self.resume, self.id, start)
            self.writer.attach("resume point", self._point)
            self.writer.attach("contexts", self._contexts)
        else:
            self.resume = self._point.state(self.writer.ref.id, self.writer.ref.project)
            assert self.resume is not None  # the point has taken the session's first start
            record = next_start(self.writer, self.resume, start)
        writer = self.writer
        if self._transcript is None:
            claude_projects = project.settings.transcript.claude_projects
            self._transcript = TranscriptFollower(self.deps.sessions, writer.ref, claude_projects)
            writer.attach("claude transcript", self._transcript)
        recorder = RequestRecorder(writer, observer, self._transcript)
        request = OpenRequest(
            options,
            self.deps,
            project,
            members,
            self.bound.pool,
            recorder,
            self._contexts,
            self.resume,
            profile,
            controls,
            fork,
        )
        try:
            return await request.run(record, snapshot, began)
        finally:
            recorder.close()
            if self._transcript.problem is not None:  # not written: the next request starts over
                writer.detach("claude transcript")
                self._transcript = None
            if self.held:
                writer.settle()

    def close(self) -> None:
        """Release the session's log (its index entry stored); the pool stays the caller's."""
        if self.writer is not None:
            self.writer.close()

    async def pool_answers(self) -> bool:
        """Whether the pool bound at opening still answers: between two prompts it may have been
        stopped (``caldrix pool stop``), or have crashed."""
        try:
            await self.bound.pool.members.loaded()
        except PoolUnavailable:
            return False
        return True

    def reopening(self) -> SessionOptions:
        """What opens this same session again: resumed once its log exists, else new under its
        id; never a fork again (the first request made the copy)."""
        made = self.writer is not None
        return replace(
            self.options,
            resume=self.id if made else None,
            continue_latest=False,
            session_id=None if made else self.id,
            fork_session=False,
        )

    def another(self, resume: ResumeState | None, session_id: str, profile_refresh: bool) -> LiveSession:
        """Another session of the same project on the same pool (the screen's ``/clear``, a new
        one under ``session_id``, and ``/resume``): this one is released."""
        self.close()
        options = SessionOptions(
            self.options.cwd,
            resume=resume.session if resume is not None else None,
            session_id=None if resume is not None else session_id,
            profile=self.options.profile,
            profile_refresh=profile_refresh,
        )
        return LiveSession(options, self.deps, self.project, self.bound, resume)


@asynccontextmanager
async def live_session(
    options: SessionOptions,
    deps: RequestDeps,
    *,
    preview: bool = False,
    held: bool = True,
    note: Callable[[str], None] | None = None,
) -> AsyncIterator[LiveSession]:
    """Open the session ``options`` name (new, resumed, forked) with the pool bound for it; the
    pool is closed and the log released when the body ends. ``note``: where the project's notes
    are said as soon as it is read (``aerix -p``: before a session that cannot be resumed is
    refused), rather than by its first request."""
    project = deps.projects.load(options.cwd)
    if note is not None:
        for line in project.notes:
            note(line)
    resume = resume_state(options, deps, project)
    if resume is None or options.fork_session:
        refuse_a_taken_id(options, deps, project)
    async with pool_session(deps.pools, project.settings.pool) as bound:
        noted = note is not None
        session = LiveSession(options, deps, project, bound, resume, preview=preview, held=held, noted=noted)
        try:
            yield session
        finally:
            session.close()


async def with_a_pool_that_answers(
    session: LiveSession, stack: AsyncExitStack, deps: RequestDeps
) -> LiveSession:
    """The session the next prompt runs on: ``session`` while its pool answers; else the same
    session opened again (held by ``stack``) on the pool found or started anew, as a prompt of
    its own would, so a pool stopped or crashed between prompts costs no prompt."""
    if await session.pool_answers():
        return session
    session.close()
    return await stack.enter_async_context(live_session(session.reopening(), deps))


async def run_request(
    opening: SessionOptions,
    options: RequestOptions,
    deps: RequestDeps,
    observer: RequestObserver,
    controls: RequestControls | None = None,
) -> RequestResult:
    """``aerix -p``: open the session ``opening`` names, run one request on it and return how
    it ended. Errors before the session exists raise; after, they end the request as ``failed``
    with the error's line as its reason."""
    began = time.monotonic()
    if options.prompt_bytes is not None:
        observer.note(invalid_prompt_note(decode_prompt(options.prompt_bytes)))
    async with live_session(opening, deps, held=False, note=observer.note) as session:
        return await session.run(options, observer, controls, began=began)

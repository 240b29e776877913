"""The interactive session: open it (the startup block's figures), then take the user's
prompts and commands one at a time, each prompt its own request over the session.

The first request of a new session creates it under the id the screen already showed; from the
second on, the request resumes it, so its root context is rebuilt from the log (the prefix store
makes that cheap). Prompts typed while a request runs wait in the screen's queue and come back
here in order. ``/clear`` starts a new session, ``/resume`` switches to another; the screen
handles ``/help``, ``/exit`` and its keys itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aerix.app.pool.members import pool_session
from aerix.app.ports import (
    Command,
    ConversationScreen,
    LiveProjection,
    Opening,
    Prompt,
    RequestControls,
    RequestObserver,
    StartupNote,
    UserInput,
)
from aerix.app.request.opening import attach_session_profile, new_session_id, request_session_id, resume_state
from aerix.app.request.options import RequestDeps, RequestOptions
from aerix.app.request.run import run_request
from aerix.app.request.startup import startup_listing
from aerix.app.sessions.queries import list_sessions, load_for_resume
from aerix.domain import events as ev
from aerix.domain.bounds import EXIT_DONE
from aerix.errors import AerixError


@dataclass(frozen=True)
class ConversationOptions:
    """What the command line asked for: ``aerix [--resume ID | --continue] ["first prompt"]``."""

    cwd: Path
    resume: str | None = None
    continue_latest: bool = False
    max_turns: int | None = None
    first_prompt: str | None = None
    profile: str | None = None  # --profile; None: the profile setting (a resumed session: its own)
    profile_refresh: bool = False  # --profile-refresh: applies to the first request only
    fork_session: bool = False  # --fork-session: the first request copies the resumed session


class _Observer(RequestObserver):
    def __init__(self, screen: ConversationScreen) -> None:
        self.screen = screen

    def note(self, line: str) -> None:
        self.screen.note(line)

    def projections(self) -> Sequence[LiveProjection]:
        return self.screen.projections()

    def event(self, record: ev.EventBase) -> None:
        self.screen.event(record)

    def token(self, agent: str, text: str) -> None:
        self.screen.token(agent, text)


async def open_conversation(options: ConversationOptions, deps: RequestDeps) -> Opening:
    """Startup as a request does it, once, before the first prompt: the project, the session to
    resume (refused at once when it cannot be), the pool found or started, the members bound."""
    began = time.monotonic()
    project = deps.projects.load(options.cwd)
    probe = RequestOptions(
        "",
        options.cwd,
        resume=options.resume,
        continue_latest=options.continue_latest,
        profile=options.profile,
        profile_refresh=options.profile_refresh,
        fork_session=options.fork_session,
    )
    resume = resume_state(probe, deps, project)
    async with pool_session(deps.pools, project.settings.pool) as bound:
        opened, members = bound.opened, bound.members
    session_id = request_session_id(probe, resume)
    # The startup block shows the commit the first request will read; only that request makes
    # session/<id>, so a screen quit (or /clear-ed) before any prompt leaves no branch behind.
    profile = attach_session_profile(probe, deps, project, members, resume, session_id, preview=True)
    notes = [StartupNote(line) for line in (*project.notes, *members.notes, *profile.notes)]
    if opened.started:
        notes.append(
            StartupNote(f"started the pool (pid {opened.pid}); it stays up for other sessions", "info")
        )
    return Opening(
        cwd=project.cwd,
        project_key=project.key,
        main=members.main,
        decision=members.decision,
        socket=opened.socket,
        pool_started=opened.started,
        session_id=session_id,
        resumed=resume is not None,
        forked_from=resume.session if resume is not None and options.fork_session else None,
        base_commit=resume.start.base_commit if resume else None,
        notes=tuple(notes),
        ready_secs=time.monotonic() - began,
        skills=tuple(project.skills.names),
        listing={**startup_listing(project, members), "profile": profile.listing()},
    )


@dataclass
class _Current:
    """The session the next prompt goes to: ``exists`` once its log has a request."""

    id: str
    exists: bool
    base: str | None = None  # the commit the session started on, once known
    #: The session the first request copies (--fork-session) before it runs; None once it has.
    forked_from: str | None = None
    #: Whether a request has run since the screen opened (``--profile-refresh`` is the first's).
    ran: bool = False


async def converse(options: ConversationOptions, deps: RequestDeps, screen: ConversationScreen) -> int:
    """Open the session, then run what the user types until they exit; the exit code."""
    try:
        opening = await open_conversation(options, deps)
    except AerixError as error:
        screen.failed_to_open(str(error))
        return error.exit_code
    screen.opened(opening)
    forked = opening.forked_from
    current = _Current(
        opening.session_id,
        exists=opening.resumed and not forked,
        base=opening.base_commit,
        forked_from=forked,
    )
    waiting: list[UserInput] = [Prompt(options.first_prompt)] if options.first_prompt else []
    while True:
        item = waiting.pop(0) if waiting else await screen.next_input()
        if item is None:
            return EXIT_DONE
        if isinstance(item, Command):
            await _command(item, current, opening, deps, screen)
            continue
        await _request(item.text, current, options, deps, screen)


async def _request(
    prompt: str,
    current: _Current,
    options: ConversationOptions,
    deps: RequestDeps,
    screen: ConversationScreen,
) -> None:
    request = RequestOptions(
        prompt=prompt,
        cwd=options.cwd,
        resume=current.id if current.exists else current.forked_from,
        max_turns=options.max_turns,
        session_id=None if current.exists else current.id,
        fork_session=not current.exists and current.forked_from is not None,
        profile=options.profile,
        profile_refresh=options.profile_refresh and not current.ran,
    )
    current.ran = True
    controls = RequestControls(plan_gate=screen)
    screen.request_started(prompt, controls)
    try:
        result = await run_request(request, deps, _Observer(screen), controls)
    except AerixError as error:
        screen.request_failed(str(error))
        return
    except OSError as error:  # the session store unusable: one line, the screen stays
        screen.request_failed(f"cannot use {error.filename or 'the session store'} ({error.strerror})")
        return
    finally:
        for notice in deps.sessions.log.notices():
            screen.note(notice)
    if not current.exists:
        current.exists, current.forked_from = True, None
        current.base = _first_base(deps, current.id)
    screen.request_ended(result)
    if current.base is not None:
        now = deps.diffs.snapshot(options.cwd)
        screen.session_diff_changed(deps.diffs.diff(replace(now, base=current.base)))


def _first_base(deps: RequestDeps, session_id: str) -> str | None:
    try:
        return load_for_resume(deps.sessions, session_id).start.base_commit
    except AerixError:
        return None


async def _command(
    command: Command, current: _Current, opening: Opening, deps: RequestDeps, screen: ConversationScreen
) -> None:
    if command.name == "clear":
        current.id, current.exists, current.base, current.forked_from = new_session_id(), False, None, None
        screen.session_changed(current.id, resumed=False)
        return
    if command.name != "resume":
        screen.say(f"/{command.name} is not a command here; /help lists them")
        return
    chosen = command.args.strip()
    if not chosen:
        entries = [e for e in list_sessions(deps.sessions, opening.project_key) if not e.imported]
        if not entries:
            screen.say("no other session in this project to resume")
            return
        picked = await screen.pick_session(entries)
        if picked is None:
            return
        chosen = picked
    try:
        state = load_for_resume(deps.sessions, chosen)
    except AerixError as error:
        screen.say(str(error))
        return
    current.id, current.exists, current.base = state.session, True, state.start.base_commit
    current.forked_from = None
    screen.session_changed(state.session, resumed=True)

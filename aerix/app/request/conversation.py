"""The interactive session: open it (the startup block's figures), then take the user's
prompts and commands one at a time, each prompt its own request on the session it holds.

The screen holds one ``LiveSession`` (``aerix.app.request.session``): the project, the pool
bound once, the profile, and from the first request on the session's log, locked. The first
request of a new session creates it under the id the screen already showed; the next ones
continue it from the context the writer kept, without reading the log back. Prompts typed while
a request runs wait in the screen's queue and come back here in order. ``/clear`` holds a new
session, ``/resume`` another one (on the same project and pool); the screen handles ``/help``,
``/exit`` and its keys itself.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from aerix.app.ports.request import LiveProjection, RequestControls, RequestObserver
from aerix.app.ports.screen import Command, ConversationScreen, Opening, Prompt, StartupNote, UserInput
from aerix.app.request.opening import new_session_id, startup_listing
from aerix.app.request.options import RequestDeps, RequestOptions, SessionOptions
from aerix.app.request.session import LiveSession, live_session, with_a_pool_that_answers
from aerix.app.sessions.queries import list_sessions, load_for_resume
from aerix.domain import events as ev
from aerix.domain.bounds import EXIT_DONE
from aerix.errors import AerixError, FileUnusable


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
        self.screen.request.note(line)

    def projections(self) -> Mapping[str, LiveProjection]:
        return self.screen.request.projections()

    def event(self, record: ev.EventBase) -> None:
        self.screen.request.event(record)

    def token(self, agent: str, text: str) -> None:
        self.screen.request.token(agent, text)


def _opening(session: LiveSession, began: float) -> Opening:
    """The startup block's figures: what opening the session found and bound."""
    project, resume = session.project, session.resume
    opened, members = session.bound.opened, session.bound.members
    profile = session.profile
    assert profile is not None  # a held session opened for the screen previews its profile
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
        session_id=session.id,
        resumed=resume is not None,
        forked_from=resume.session if resume is not None and session.fork else None,
        base_commit=resume.start.base_commit if resume else None,
        notes=tuple(notes),
        ready_secs=time.monotonic() - began,
        skills=tuple(project.skills.names),
        listing={**startup_listing(project, members), "profile": profile.listing()},
    )


@dataclass
class _Held:
    """The session the next prompt goes to, held open (its log locked from its first request),
    and whether a request has run since the screen opened (``--profile-refresh`` is the first's)."""

    session: LiveSession
    stack: AsyncExitStack  # holds each session opened (its pool) until the screen closes
    ran: bool = False


async def converse(options: ConversationOptions, deps: RequestDeps, screen: ConversationScreen) -> int:
    """Open the session, then run what the user types until they exit; the exit code."""
    began = time.monotonic()
    opening = SessionOptions(
        options.cwd,
        resume=options.resume,
        continue_latest=options.continue_latest,
        profile=options.profile,
        profile_refresh=options.profile_refresh,
        fork_session=options.fork_session,
    )
    async with AsyncExitStack() as stack:
        try:
            session = await stack.enter_async_context(live_session(opening, deps, preview=True))
            opened = _opening(session, began)
        except AerixError as error:
            screen.session.failed_to_open(str(error))
            return error.exit_code
        screen.session.opened(opened)
        held = _Held(session, stack)
        stack.callback(lambda: held.session.close())  # the session held last (after /clear, /resume)
        code = await _converse(held, options, deps, screen)
    return code


async def _converse(
    held: _Held, options: ConversationOptions, deps: RequestDeps, screen: ConversationScreen
) -> int:
    waiting: list[UserInput] = [Prompt(options.first_prompt)] if options.first_prompt else []
    while True:
        item = waiting.pop(0) if waiting else await screen.input.next_input()
        if item is None:
            return EXIT_DONE
        if isinstance(item, Command):
            await _command(item, held, options, deps, screen)
            continue
        await _request(item.text, held, options, deps, screen)


async def _request(
    prompt: str,
    held: _Held,
    options: ConversationOptions,
    deps: RequestDeps,
    screen: ConversationScreen,
) -> None:
    request = RequestOptions(
        prompt=prompt,
        max_turns=options.max_turns,
        profile_refresh=options.profile_refresh and not held.ran,
    )
    held.ran = True
    controls = RequestControls(plan_gate=screen.input)
    screen.request.request_started(prompt, controls)
    before = held.session
    try:
        session = held.session = await with_a_pool_that_answers(before, held.stack, deps)
        if session is not before:
            opened = session.bound.opened
            found = f"started it again (pid {opened.pid})" if opened.started else "found it running again"
            screen.request.note(f"the pool had gone since the last prompt; {found}")
        result = await session.run(request, _Observer(screen), controls)
    except AerixError as error:
        screen.request.request_failed(str(error))
        return
    except OSError as error:  # the session store unusable: one line, the screen stays
        screen.request.request_failed(str(FileUnusable(error)))
        return
    finally:
        for notice in deps.sessions.log.notices():
            screen.request.note(notice)
    screen.request.request_ended(result)
    base = session.base_commit
    if base is not None:
        now = deps.diffs.snapshot(options.cwd)
        screen.session.session_diff_changed(deps.diffs.diff(replace(now, base=base)))


async def _command(
    command: Command, held: _Held, options: ConversationOptions, deps: RequestDeps, screen: ConversationScreen
) -> None:
    if command.name == "clear":
        session_id = new_session_id()
        held.session = held.session.another(None, session_id, options.profile_refresh and not held.ran)
        screen.session.session_changed(session_id, resumed=False)
        return
    if command.name != "resume":
        screen.session.say(f"/{command.name} is not a command here; /help lists them")
        return
    chosen = command.args.strip()
    if not chosen:
        project_key = held.session.project.key
        entries = [e for e in list_sessions(deps.sessions, project_key) if not e.imported]
        if not entries:
            screen.session.say("no other session in this project to resume")
            return
        picked = await screen.input.pick_session(entries)
        if picked is None:
            return
        chosen = picked
    try:
        state = load_for_resume(deps.sessions, chosen)
    except AerixError as error:
        screen.session.say(str(error))
        return
    held.session = held.session.another(state, state.session, options.profile_refresh and not held.ran)
    screen.session.session_changed(state.session, resumed=True)

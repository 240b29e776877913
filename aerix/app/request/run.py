"""A request, end to end (``aerix -p``): startup, the session, routing, the root agent, the end.

    project = read settings, instructions, skills, agents, hooks      (ProjectSource)
    resume  = the session to continue, refused at once if imported     (SessionStorage)
    snapshot of the working tree                                       (DiffSource)
    pool    = found or started, members bound                          (PoolStarter)
    profile = attached: prompts and overlays read from one commit      (ProfileStore)
    session.start → SessionStart → UserPromptSubmit → route → RouteDecision
        → a1's context (segment events) → run_agent → session.end → SessionEnd → the diff

Every dependency comes in through ``RequestDeps`` (``aerix.app.request.options``; ``aerix.wiring``
builds the real ones). The request runs on a ``LiveSession`` (``aerix.app.request.session``, the
session the screen and the stream-json input hold across requests), which opens the session
(``aerix.app.request.opening``) and runs it as an ``OpenRequest``
(``aerix.app.request.open_request``).
"""

from __future__ import annotations

import time

from aerix.app.pool.members import pool_session
from aerix.app.ports.request import RequestControls, RequestObserver, RequestResult
from aerix.app.request.opening import refuse_a_taken_id, resume_state
from aerix.app.request.options import RequestDeps, RequestOptions
from aerix.app.request.session import LiveSession
from aerix.domain.prompt_bytes import decode_prompt, invalid_prompt_note


async def run_request(
    options: RequestOptions,
    deps: RequestDeps,
    observer: RequestObserver,
    controls: RequestControls | None = None,
) -> RequestResult:
    """Run one request and return how it ended. Errors before the session exists raise; after,
    they end the request as ``failed`` with the error's line as its reason."""
    began = time.monotonic()
    if options.prompt_bytes is not None:
        observer.note(invalid_prompt_note(decode_prompt(options.prompt_bytes)))
    project = deps.projects.load(options.cwd)
    for line in project.notes:
        observer.note(line)
    resume = resume_state(options, deps, project)
    if resume is None or options.fork_session:
        refuse_a_taken_id(options, deps, project)
    snapshot = deps.diffs.snapshot(project.cwd)
    async with pool_session(deps.pools, project.settings.pool) as bound:
        session = LiveSession(options, deps, project, bound, resume)
        try:
            return await session.run(
                options, observer, controls, snapshot=snapshot, began=began, project_noted=True
            )
        finally:
            session.close()

"""Opening a session, before its request runs: the session it continues (``--resume``,
``--continue``) or the new id it takes, the profile it reads its prompts from, what startup
found and bound (``startup_listing``, which the output shows), and its ``session.start``
written (what startup loaded among it).

In the spec's order, startup resolves the directory, the settings, instruction files, enabled
plugins, skills, agent definitions and hooks (``ProjectSource``), then finds or starts the pool
and binds the members (``aerix.app.pool.members.pool_session``); a resumed session is refused
before any pool is started (``aerix.app.request.session.live_session``)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from aerix.app.pool.members import BoundMembers
from aerix.app.ports.project import Project
from aerix.app.profiles.attach import AttachedProfile, ProfileRequest, attach_profile, preview_profile
from aerix.app.request.options import RequestDeps, RequestOptions, SessionOptions
from aerix.app.sessions.queries import latest_session, load_for_resume
from aerix.app.sessions.writer import (
    SessionWriter,
    fork_session,
    reopen_session,
    start_session,
)
from aerix.domain import events as ev
from aerix.domain.diffs import Snapshot
from aerix.domain.prompt_bytes import encoded_bytes
from aerix.domain.tools import TOOL_NAMES
from aerix.errors import UsageError
from aerix.projections.resume_point import ResumeState
from caldrix.protocol import DECISION_MEMBER, MAIN_MEMBER


def new_session_id() -> str:
    """A new session's id: a dashed UUID, as Claude Code names its sessions (its readers, the
    Agent SDK's ``list_sessions`` among them, take no other)."""
    return str(uuid.uuid4())


def request_session_id(options: SessionOptions, resume: ResumeState | None) -> str:
    """The session this request writes to: the resumed one, else (a new session or a fork) the
    id --session-id gives or a fresh one."""
    if resume is not None and not options.fork_session:
        return resume.session
    return options.session_id or new_session_id()


def refuse_a_taken_id(options: SessionOptions, deps: RequestDeps, project: Project) -> None:
    """A new session named by the caller (--session-id) must not be one that exists: refused
    before the pool starts or the profile makes the session's branch."""
    taken = options.session_id
    if taken is not None and deps.sessions.catalog.exists(deps.sessions.catalog.ref(project.key, taken)):
        raise UsageError(f"session {taken} already exists; give --session-id a new UUID")


def resume_state(options: SessionOptions, deps: RequestDeps, project: Project) -> ResumeState | None:
    if options.resume and options.continue_latest:
        raise UsageError("--resume and --continue both name a session; give one of them")
    resumes = bool(options.resume or options.continue_latest)
    if options.fork_session and not resumes:
        raise UsageError(
            "--fork-session copies the session --resume ID or --continue names; give one of them"
        )
    if options.session_id is not None and resumes and not options.fork_session:
        raise UsageError(
            "--session-id names a new session; it cannot go with --resume or --continue "
            "(unless --fork-session: then it names the copy)"
        )
    session_id = options.resume
    if options.continue_latest:
        session_id = latest_session(deps.sessions, project.key)
        if session_id is None:
            raise UsageError("no session to continue in this project; run without --continue to start one")
    return load_for_resume(deps.sessions, session_id) if session_id else None


def attach_session_profile(
    options: SessionOptions,
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


def with_overlays(project: Project, profile: AttachedProfile) -> Project:
    """The project with the profile's skill and agent overlays in place of those bodies."""
    if not profile.skill_overlays and not profile.agent_overlays:
        return project
    return replace(
        project,
        skills=project.skills.with_bodies(profile.skill_overlays),
        agents=project.agents.with_bodies(profile.agent_overlays),
    )


def start_fields(
    options: RequestOptions,
    deps: RequestDeps,
    project: Project,
    members: BoundMembers,
    snapshot: Snapshot,
    loaded: ev.Loaded,
    profile: AttachedProfile,
) -> dict[str, Any]:
    """A request's ``session.start`` fields, but for those that say which request it is."""
    return {
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
        "threads": members.main.threads,
        "base_commit": snapshot.base,
        "git_branch": snapshot.branch,
        "loaded": loaded,
    }


def open_session(
    fork: bool,
    deps: RequestDeps,
    project: Project,
    resume: ResumeState | None,
    session_id: str,
    start: dict[str, Any],
) -> tuple[SessionWriter, ev.SessionStart]:
    """The session's writer and the ``session.start`` of this request, written already;
    ``start``: its fields (``start_fields``); ``fork``: ``resume`` is copied to ``session_id``."""
    sync = project.settings.session.sync
    if resume is None:
        writer = start_session(deps.sessions, deps.clock, sync=sync, session=session_id, **start)
        [written] = writer.opening  # Session.begin records the session.start alone
        if not isinstance(written, ev.SessionStart):
            raise RuntimeError("a new session without its session.start")
        return writer, written
    if fork:
        writer = fork_session(deps.sessions, deps.clock, resume.session, session_id, project.key, sync)
        start = {**start, "resumed_from": resume.session}
    else:
        writer = reopen_session(deps.sessions, deps.clock, resume.session, sync)
    return writer, next_start(writer, resume, start)


def next_start(writer: SessionWriter, resume: ResumeState, start: dict[str, Any]) -> ev.SessionStart:
    """Record the ``session.start`` of a request that continues the session ``resume`` holds."""
    return writer.record(
        ev.SessionStart, session=writer.ref.id, request=resume.requests + 1, resumed=True, **start
    )


def loaded_from(listing: dict[str, Any]) -> ev.Loaded:
    """The part of the startup listing the log keeps: what this request's context and runtime
    were built from, so a session can be understood (and tuned) without the folders it ran in."""
    return ev.Loaded(
        instruction_files=listing["instruction_files"],
        skills=listing["skills"],
        agents=listing["agents"],
        hooks=listing["hooks"],
        plugins=[plugin["name"] for plugin in listing["plugins"] if plugin["enabled"]],
    )


def startup_listing(project: Project, members: BoundMembers) -> dict[str, Any]:
    """What startup found and bound, as plain data for the output (stream-json's ``init``
    line names its keys as Claude Code's does: ``tools``, ``skills``, ``agents``, ``plugins``);
    ``tools`` leaves out those a permission rule or ``--tools`` takes away."""
    return {
        "tools": [name for name in TOOL_NAMES if name not in project.permissions.removed],
        "members": {
            MAIN_MEMBER: members.main.model,
            DECISION_MEMBER: members.decision.model if members.decision else None,
        },
        "settings_files": [str(path) for path in project.settings_files],
        "instruction_files": [str(path) for path in project.instruction_files],
        "skills": list(project.skills.names),
        "agents": list(project.agents.names),
        "plugins": [
            {
                "name": plugin.name,
                "path": str(plugin.path),
                "scope": plugin.scope,
                "enabled": plugin.enabled,
                "version": plugin.version,
                "skills": list(plugin.skills),
                "agents": list(plugin.agents),
                "commands": list(plugin.commands),
                "hooks": list(plugin.hooks),
            }
            for plugin in project.plugins
        ],
        "hooks": list(project.hooks),
    }

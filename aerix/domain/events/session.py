"""The session's own events: a request's start (with what startup loaded) and end (with its
diff), the route it took, and the lines an import kept verbatim."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aerix.domain.events.base import SESSION_ID_PATTERN, EventBase, Route, StrictModel


class Loaded(StrictModel):
    """What startup loaded for a request, as the startup block lists it."""

    instruction_files: list[str] = Field(default_factory=list, description="CLAUDE.md/AGENTS.md files read.")
    skills: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list, description="Agent definitions found.")
    plugins: list[str] = Field(default_factory=list, description="Enabled plugins, by name.")
    hooks: list[str] = Field(default_factory=list, description="Hook events with handler counts.")


class SessionStart(EventBase):
    """A request starts: the first of a session, or a later one (``request`` > 1) on resume."""

    type: Literal["session.start"] = "session.start"
    session: str = Field(pattern=SESSION_ID_PATTERN, description="The session id; also its file name.")
    cwd: str
    project: str = Field(description="The project key: the folder the session lives in.")
    model: str = Field(description="The main member's model.")
    profile: str | None = Field(
        default=None, description="The profile its prompts were read from; null: embedded."
    )
    profile_branch: str | None = Field(default=None, description="The session's branch in it, session/<id>.")
    profile_commit: str | None = Field(default=None, description="The commit its prompts were read from.")
    prompt: str
    prompt_bytes: str | None = Field(
        default=None,
        description="The prompt's bytes as given, base64, when they were not valid UTF-8 "
        "(prompt then holds them with U+FFFD for each invalid sequence).",
    )
    route: Route | None = Field(default=None, description="A shape forced by the caller; else routing picks.")
    aerix_version: str
    request: int = Field(default=1, ge=1, description="1 for the session's first request, then 2, 3…")
    resumed: bool = False
    resumed_from: str | None = Field(
        default=None,
        description="The session this one was copied from (--fork-session), on the copy's first request.",
    )
    tags: list[str] = Field(default_factory=list)
    window: int | None = Field(default=None, description="The main member's context window, in tokens.")
    threads: int | None = Field(
        default=None, description="The CPU threads the main member computes on (null: not said, or remote)."
    )
    base_commit: str | None = Field(default=None, description="The commit the diff line compares with.")
    git_branch: str | None = Field(
        default=None, description="The branch checked out at the start (empty: none; null: older logs)."
    )
    imported_from: str | None = Field(default=None, description="Source transcript of an imported session.")
    loaded: Loaded | None = Field(
        default=None, description="What startup loaded; null for imported sessions and older logs."
    )


class RouteDecision(EventBase):
    """Routing classified the request."""

    type: Literal["route"] = "route"
    choice: Route
    scores: dict[str, float] = Field(default_factory=dict, description="Log-probability of each shape.")
    member: str | None = None
    raw: str | None = Field(default=None, description="The generated text, when it matched no shape.")


class DiffStats(StrictModel):
    added: int = 0
    removed: int = 0
    files: int = 0


class SessionEnd(EventBase):
    """A request ended."""

    type: Literal["session.end"] = "session.end"
    outcome: Literal["done", "failed", "killed", "budget", "cancelled"]
    exit_code: int = 0
    reason: str | None = None
    diff: DiffStats | None = None
    untracked: list[str] = Field(default_factory=list)
    duration_ms: float | None = None


class Foreign(EventBase):
    """An imported line aerix could not understand, kept verbatim (``aerix import claude``)."""

    type: Literal["foreign"] = "foreign"
    source: str = Field(description="File the line came from.")
    line: int
    problem: str
    raw: str

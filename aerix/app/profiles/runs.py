"""What tune, sync and edit share: their dependencies, the texts a profile's paths follow
upstream, and one command's reflections (the member bound and released, one answer put through
the guards, the request's heading and rules)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from aerix.app.pool.members import BoundMembers
from aerix.app.ports.pool import MemberInfo, PoolPort, PoolStarter
from aerix.app.ports.profiles import ProfileObserver, ProfileRepository, ProfileStore, Refused
from aerix.app.ports.project import Project, ProjectSource, PromptSource
from aerix.app.ports.sessions import Clock, SessionStorage
from aerix.app.profiles.bases import iso
from aerix.app.profiles.reflection import (
    PROMPT_ROLES,
    NotReflected,
    Reflected,
    bind_reflector,
    reflect,
    release_reflector,
)
from aerix.domain.profile import UpstreamEntry, artifact_of, blob_id
from aerix.domain.revision_guards import check_revision, length_bounds, placeholders
from aerix.domain.settings import Settings
from aerix.errors import ProfileError

#: The text a path follows upstream now (the release's prompt, the project's skill body), or None.
UpstreamTexts = Callable[[str], str | None]


@dataclass
class ProfileDeps:
    """What tune and sync need from the world (``aerix.wiring`` builds the real ones)."""

    projects: ProjectSource
    pools: PoolStarter
    sessions: SessionStorage
    profiles: ProfileStore
    prompts: PromptSource  # the embedded texts, the reflection instructions among them
    embedded: Mapping[str, str]  # every prompt a profile may tune, by name
    release: str
    clock: Clock


def upstream_texts(embedded: Mapping[str, str], project: Project) -> UpstreamTexts:
    def text(path: str) -> str | None:
        artifact = artifact_of(path)
        if artifact is None:
            return None
        if artifact.kind == "prompt":
            return embedded.get(artifact.name)
        if artifact.kind == "skill":
            return project.skills.body(artifact.name)
        return project.agents.body(artifact.name)

    return text


@dataclass
class ReflectionRun:
    """One command's reflections: the member, their bound, who hears, and what they record."""

    pool: PoolPort
    member: MemberInfo
    prompts: PromptSource
    max_new_tokens: int
    observer: ProfileObserver
    release: str
    clock: Clock

    def entry(self, upstream_text: str | None) -> UpstreamEntry:
        digest = blob_id(upstream_text) if upstream_text is not None else None
        return UpstreamEntry(digest, self.release, iso(self.clock()))


@asynccontextmanager
async def reflecting(
    pool: PoolPort,
    members: BoundMembers,
    model: str | None,
    settings: Settings,
    deps: ProfileDeps,
    observer: ProfileObserver,
) -> AsyncIterator[ReflectionRun]:
    """The reflection member bound for one command, and unloaded after it when it loaded it."""
    reflector = await bind_reflector(pool, members, model, settings.tune.member_flags)
    try:
        yield ReflectionRun(
            pool,
            reflector.member,
            deps.prompts,
            settings.context.max_new_tokens,
            observer,
            deps.release,
            deps.clock,
        )
    finally:
        with anyio.CancelScope(shield=True):  # a cancelled run still unloads what it loaded
            await release_reflector(pool, reflector)


async def propose(
    run: ReflectionRun,
    path: str,
    instructions: str,
    header: str,
    evidence: list[str],
    current: str,
    release_text: str,
    *,
    must_differ: bool,
) -> Reflected | Refused:
    """One reflection on ``path`` and the guards on its answer."""
    answer = await reflect(
        run.pool,
        run.member,
        run.prompts.get(instructions),
        header,
        evidence,
        run.max_new_tokens,
        release_text,
        run.observer.token,
        what=path,
    )
    run.observer.answered()
    if isinstance(answer, NotReflected):
        return Refused(path, answer.reason)
    refusals = check_revision(answer.text, current, release_text, must_differ=must_differ)
    if refusals:
        return Refused(path, "; ".join(str(refusal) for refusal in refusals))
    return answer


def existing_profile(store: ProfileStore, name: str) -> ProfileRepository:
    repo = store.find(name)
    if repo is None:
        raise ProfileError(
            f"there is no profile {name} yet ({store.location(name)}); the first request makes it"
        )
    return repo


def describe(path: str) -> str:
    """The heading of a reflection request: the path and what it is."""
    artifact = artifact_of(path)
    if artifact is None:
        return f"# {path}"
    if artifact.kind == "prompt":
        role = PROMPT_ROLES.get(artifact.name)
    else:
        role = (
            f"the body of the {'skill' if artifact.kind == 'skill' else 'agent definition'} {artifact.name}"
        )
    return f"# {path}\nWhat it is: {role}." if role else f"# {path}"


def rules_text(original: str) -> str:
    """The placeholders and length a reflection request ends with (from the release's text)."""
    kept = placeholders(original)
    shortest, longest = length_bounds(original)
    names = ", ".join(kept) if kept else "none"
    return f"# Placeholders to keep\n{names}\n\n# Length\nbetween {shortest} and {longest} characters"

"""``aerix profile sync``: bring tuned texts up to this release's own.

A tuned path is stale when the upstream hash ``upstream.json`` recorded for it is no longer the
blob id of the release's text (a prompt the new release changed, a skill whose body changed).
For each stale path the reflection member is asked once to reconcile the tuned text with the
release's new text; what passes the guards is committed with the new hashes, one commit. With
nothing stale no pool is bound. ``aerix tune`` runs the same reconcile on the model base first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from aerix.app.ports import (
    Clock,
    MemberInfo,
    PoolPort,
    PoolStarter,
    Project,
    ProjectSource,
    PromptSource,
    SessionStorage,
)
from aerix.app.ports.profiles import (
    ProfileObserver,
    ProfileRepository,
    ProfileStore,
    Refused,
    Revision,
    SyncReport,
)
from aerix.app.profiles.bases import iso
from aerix.app.profiles.reflection import (
    PROMPT_ROLES,
    NotReflected,
    Reflected,
    bind_reflector,
    reflect,
    release_reflector,
)
from aerix.app.profiles.revisions import commit_revisions
from aerix.app.request.startup import BoundMembers, bind_members
from aerix.domain.profile import ProfileSnapshot, UpstreamEntry, artifact_of, blob_id, model_branch
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


@dataclass(frozen=True)
class SyncOptions:
    cwd: Path
    profile: str | None = None
    branch: str | None = None  # None: the model base of pool.main
    dry_run: bool = False


async def run_sync(options: SyncOptions, deps: ProfileDeps, observer: ProfileObserver) -> SyncReport:
    project = deps.projects.load(options.cwd)
    settings = project.settings
    name = options.profile or settings.profile
    repo = existing_profile(deps.profiles, name)
    branch = options.branch or model_branch(settings.pool.main)
    head = repo.head(branch)
    if head is None:
        raise ProfileError(f"profile {name} has no branch {branch}; `aerix profile show` lists its branches")
    snapshot = repo.read(head)
    upstream = upstream_texts(deps.embedded, project)
    report = SyncReport(name, branch, list(snapshot.stale(upstream)), dry_run=options.dry_run)
    if not report.stale:
        return report
    opened = await deps.pools.open(settings.pool)
    try:
        members = await bind_members(opened.pool, settings.pool)
        async with reflecting(opened.pool, members, settings.tune.member, settings, deps, observer) as run:
            await reconcile(run, repo, branch, snapshot, report, upstream)
    finally:
        with anyio.CancelScope(shield=True):
            await opened.aclose()
    return report


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
        run.observer.token,
        what=path,
    )
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


async def reconcile(
    run: ReflectionRun,
    repo: ProfileRepository,
    branch: str,
    snapshot: ProfileSnapshot,
    report: SyncReport,
    upstream: UpstreamTexts,
) -> None:
    """Ask once per stale path, then commit what passed (or show it, under ``dry_run``)."""
    for index, path in enumerate(report.stale, 1):
        run.observer.artifact(index, len(report.stale), path)
        outcome = await _reconcile_one(run, repo, snapshot, path, upstream(path) or "")
        if isinstance(outcome, Refused):
            report.refused.append(outcome)
            run.observer.line(f"{path}: not synced: {outcome.reason}")
        else:
            report.revisions.append(outcome)
            run.observer.line(f"{path}: reconciled: {outcome.reason or 'no reason given'}")
    if report.dry_run:
        for revision in report.revisions:
            run.observer.diff(
                revision.diff() or f"{revision.path}: the tuned text stands; its upstream hash moves\n"
            )
        return
    if report.revisions:
        subject = f"aerix {run.release}: sync {branch} with the release's texts"
        committed = commit_revisions(repo, branch, snapshot, report.revisions, subject)
        report.commit = committed.commit
        report.refused.extend(committed.refused)
        kept = {refused.path for refused in committed.refused}
        report.revisions = [rev for rev in report.revisions if rev.path not in kept]


async def _reconcile_one(
    run: ReflectionRun, repo: ProfileRepository, snapshot: ProfileSnapshot, path: str, new: str
) -> Revision | Refused:
    tuned = snapshot.text(path) or ""
    entry = (snapshot.upstream or {}).get(path)
    old_data = repo.read_blob(entry.hash) if entry is not None and entry.hash else None
    old = old_data.decode("utf-8", "replace") if old_data is not None else None
    header = "\n\n".join(
        [
            describe(path),
            "# The release's old text\n"
            + (old if old is not None else "(not known: the profile no longer holds it)"),
            "# The release's new text\n" + new,
            "# The profile's tuned text\n" + tuned,
            rules_text(new),
        ]
    )
    answer = await propose(run, path, "reflect-sync", header, [], tuned, new, must_differ=False)
    if isinstance(answer, Refused):
        return answer
    return Revision(path, answer.text, answer.reason, tuned, run.entry(new))


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

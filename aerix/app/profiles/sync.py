"""``aerix profile sync``: bring tuned texts up to this release's own.

A tuned path is stale when the upstream hash ``upstream.json`` recorded for it is no longer the
blob id of the release's text (a prompt the new release changed, a skill whose body changed).
For each stale path the reflection member is asked once to reconcile the tuned text with the
release's new text; what passes the guards is committed with the new hashes, one commit. With
nothing stale no pool is bound. ``aerix tune`` runs the same reconcile on the model base first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aerix.app.pool.members import pool_session
from aerix.app.ports.profiles import ProfileObserver, ProfileRepository, Refused, Revision, SyncReport
from aerix.app.profiles.revisions import commit_revisions
from aerix.app.profiles.runs import (
    ProfileDeps,
    ReflectionRun,
    UpstreamTexts,
    describe,
    existing_profile,
    propose,
    reflecting,
    rules_text,
    upstream_texts,
)
from aerix.domain.profile import ProfileSnapshot, model_branch
from aerix.errors import ProfileError


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
    head = repo.refs.head(branch)
    if head is None:
        raise ProfileError(f"profile {name} has no branch {branch}; `aerix profile show` lists its branches")
    snapshot = repo.objects.read(head)
    upstream = upstream_texts(deps.embedded, project)
    report = SyncReport(name, branch, list(snapshot.stale(upstream)), dry_run=options.dry_run)
    if not report.stale:
        return report
    async with (
        pool_session(deps.pools, settings.pool) as bound,
        reflecting(bound.pool, bound.members, settings.tune.member, settings, deps, observer) as run,
    ):
        await reconcile(run, repo, branch, snapshot, report, upstream)
    return report


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
    old_data = repo.objects.read_blob(entry.hash) if entry is not None and entry.hash else None
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

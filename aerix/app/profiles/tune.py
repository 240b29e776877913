"""``aerix tune``: revise a model's prompts from the evidence of its own sessions.

It binds the pool, collects the corpus (the newest ``--sessions``/``tune.sessions`` aerix
sessions whose ``session.start`` names this profile and the main member's model), binds the
reflection member (``--member``/``tune.member``, else main; unloaded at the end when this run
loaded it), syncs the model base, then asks one reflection per prompt with evidence. What passes
the guards becomes one commit on ``model/<model>`` listing each revision and why; under
``--dry-run`` each revision is a diff on stdout and nothing is committed. A path whose text on
the branch changed during the run is refused, not overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aerix.app.pool.members import pool_session
from aerix.app.ports.profiles import (
    ProfileObserver,
    ProfileRepository,
    Refused,
    Revision,
    SyncReport,
    TuneReport,
)
from aerix.app.ports.sessions import SessionStorage
from aerix.app.profiles.bases import ensure_model_base, seed_main
from aerix.app.profiles.evidence import evidence_lines
from aerix.app.profiles.revisions import commit_revisions
from aerix.app.profiles.runs import (
    ProfileDeps,
    ReflectionRun,
    UpstreamTexts,
    describe,
    propose,
    reflecting,
    rules_text,
    upstream_texts,
)
from aerix.app.profiles.sync import reconcile
from aerix.app.sessions.queries import list_sessions
from aerix.domain.profile import MAIN_BRANCH, ProfileSnapshot, model_branch, prompt_path
from aerix.errors import SessionLogCorrupt, SessionSchemaTooNew
from aerix.projections.corpus import SessionEvidence, tuning_corpus


@dataclass(frozen=True)
class TuneOptions:
    cwd: Path
    profile: str | None = None
    sessions: int | None = None
    dry_run: bool = False
    member: str | None = None  # a model reference; None: tune.member, else main


def collect_corpus(
    storage: SessionStorage, profile: str, model: str, limit: int, unreadable: list[str]
) -> list[SessionEvidence]:
    """The newest ``limit`` aerix sessions (of every project) started on ``profile`` and
    ``model``. The index picks the candidates, so only their logs are read."""
    entries = list_sessions(storage, None, unreadable)
    chosen = [
        e for e in entries if e.profile == profile and e.model == model and not e.imported and e.created
    ]
    chosen.sort(key=lambda entry: (entry.created, entry.id), reverse=True)
    logs = []
    for entry in chosen[:limit]:
        try:
            logs.append(storage.log.read(storage.catalog.ref(entry.project, entry.id)))
        except (SessionLogCorrupt, SessionSchemaTooNew) as error:
            unreadable.append(f"{entry.project}/{entry.id} left out: {error}")
    return tuning_corpus(logs, profile, model, limit)


async def run_tune(options: TuneOptions, deps: ProfileDeps, observer: ProfileObserver) -> TuneReport:
    project = deps.projects.load(options.cwd)
    settings = project.settings
    name = options.profile or settings.profile
    report = TuneReport(name, dry_run=options.dry_run)
    # A dry run moves nothing, so it does not even create the profile or the model base.
    repo = deps.profiles.find(name) if options.dry_run else deps.profiles.open(name)
    async with pool_session(deps.pools, settings.pool) as bound:
        members = bound.members
        for note in members.notes:
            observer.line(note)
        report.model = members.main.model
        report.branch = model_branch(report.model)
        if repo is not None and not options.dry_run:
            ensure_model_base(repo, report.model, seed_main(repo, deps.embedded, deps.release))
        unreadable: list[str] = []
        limit = options.sessions or settings.tune.sessions
        corpus = collect_corpus(deps.sessions, name, report.model, limit, unreadable)
        for line in unreadable:
            observer.line(line)
        report.sessions = len(corpus)
        observer.line(f"profile {name}, {report.branch}: {len(corpus)} sessions of {report.model} read")
        model = options.member or settings.tune.member
        async with reflecting(bound.pool, members, model, settings, deps, observer) as run:
            report.reflector = run.member.model
            observer.line(f"reflecting with {report.reflector}")
            upstream = upstream_texts(deps.embedded, project)
            start = await _sync_base(run, repo, report, upstream)
            await _tune(run, repo, report, start, corpus, deps.embedded)
    return report


def _base(repo: ProfileRepository | None, branch: str) -> ProfileSnapshot:
    """The model base as it is (a dry run before the base exists: what it would be made from)."""
    if repo is None:
        return ProfileSnapshot(None)
    head = repo.refs.head(branch) or repo.refs.head(MAIN_BRANCH)
    return repo.objects.read(head) if head is not None else ProfileSnapshot(None)


async def _sync_base(
    run: ReflectionRun, repo: ProfileRepository | None, report: TuneReport, upstream: UpstreamTexts
) -> ProfileSnapshot:
    """Sync the model base; returns the snapshot the tuning reads (with a dry run's
    reconciled texts in it, since they were not committed)."""
    snapshot = _base(repo, report.branch)
    sync = SyncReport(report.profile, report.branch, list(snapshot.stale(upstream)), dry_run=report.dry_run)
    report.sync = sync
    if not sync.stale or repo is None:
        return snapshot
    run.observer.line(f"{len(sync.stale)} tuned texts are stale against this release; syncing them first")
    await reconcile(run, repo, report.branch, snapshot, sync, upstream)
    if report.dry_run:
        texts = {rev.path: rev.text for rev in sync.revisions}
        entries = {rev.path: rev.upstream for rev in sync.revisions}
        return ProfileSnapshot.of(snapshot.commit, snapshot.with_texts(texts, entries))
    return _base(repo, report.branch)


async def _tune(
    run: ReflectionRun,
    repo: ProfileRepository | None,
    report: TuneReport,
    start: ProfileSnapshot,
    corpus: list[SessionEvidence],
    embedded: Mapping[str, str],
) -> None:
    asked = []
    for name in embedded:
        lines = evidence_lines(corpus, f"{name}.md")
        if lines:
            asked.append((name, lines))
        else:
            report.without_evidence.append(prompt_path(name))
    for index, (name, lines) in enumerate(asked, 1):
        path = prompt_path(name)
        run.observer.artifact(index, len(asked), path)
        outcome = await _tune_one(run, start, path, embedded[name], lines)
        if isinstance(outcome, Refused):
            report.refused.append(outcome)
            run.observer.line(f"{path}: refused: {outcome.reason}")
        else:
            report.revisions.append(outcome)
            run.observer.line(f"{path}: revised: {outcome.reason or 'no reason given'}")
    if report.dry_run or repo is None:
        for revision in report.revisions:
            run.observer.diff(revision.diff())
        return
    if report.revisions:
        count = len(report.revisions)
        subject = (
            f"aerix tune: {count} revision{'s' if count != 1 else ''} from {report.sessions} sessions "
            f"of {report.model}"
        )
        committed = commit_revisions(repo, report.branch, start, report.revisions, subject)
        report.commit = committed.commit
        report.refused.extend(committed.refused)
        refused = {item.path for item in committed.refused}
        report.revisions = [rev for rev in report.revisions if rev.path not in refused]


async def _tune_one(
    run: ReflectionRun, start: ProfileSnapshot, path: str, release_text: str, lines: list[str]
) -> Revision | Refused:
    current = start.effective(path, release_text) or release_text
    header = "\n\n".join([describe(path), "# The current text\n" + current, rules_text(release_text)])
    answer = await propose(run, path, "reflect-tune", header, lines, current, release_text, must_differ=True)
    if isinstance(answer, Refused):
        return answer
    entry = (start.upstream or {}).get(path)
    stale = entry is not None and entry.hash is not None and entry.hash != run.entry(release_text).hash
    # A text still stale (its sync was refused) keeps its old upstream, so the next sync asks again.
    upstream = entry if stale and entry is not None else run.entry(release_text)
    return Revision(path, answer.text, answer.reason, current, upstream)

"""The profile commands a person runs by hand: ``aerix profile show``, ``log`` and ``edit``, and
the part of ``aerix sessions rm`` that deletes a session's branch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from aerix.app.ports.profiles import (
    BranchView,
    EditOutcome,
    ProfileCommit,
    ProfileRepository,
    ProfileStore,
    ProfileView,
    Revision,
    TextEditor,
)
from aerix.app.ports.project import ProjectSource
from aerix.app.ports.sessions import Clock
from aerix.app.profiles.bases import ensure_model_base, iso, seed_main
from aerix.app.profiles.revisions import commit_revisions
from aerix.app.profiles.runs import UpstreamTexts, existing_profile, upstream_texts
from aerix.app.profiles.writes import delete_branch
from aerix.domain import events as ev
from aerix.domain.bounds import PROFILE_LOG_LIMIT
from aerix.domain.profile import (
    MAIN_BRANCH,
    SESSION_BRANCH_PREFIX,
    ProfilePathError,
    UpstreamEntry,
    blob_id,
    parse_artifact_path,
    session_branch,
)
from aerix.domain.revision_guards import check_revision
from aerix.errors import ProfileChanged, ProfileError, UsageError

# ---- show -----------------------------------------------------------------------------------------


def show_profile(store: ProfileStore, name: str, upstream: UpstreamTexts) -> ProfileView:
    repo = existing_profile(store, name)
    branches = repo.refs.branches()
    views = []
    sessions: dict[str, list[str]] = {}
    for branch in sorted(branches, key=lambda b: (b != MAIN_BRANCH, b)):
        head = branches[branch]
        if branch.startswith(SESSION_BRANCH_PREFIX):
            sessions.setdefault(head, []).append(branch.removeprefix(SESSION_BRANCH_PREFIX))
            continue
        snapshot = repo.objects.read(head)
        [last] = repo.refs.log(branch, 1) or [ProfileCommit(head, datetime.fromtimestamp(0), "")]
        views.append(
            BranchView(
                branch,
                head,
                last.subject,
                last.time,
                snapshot.tuned_paths,
                snapshot.stale(upstream),
                snapshot.upstream_problem,
            )
        )
    return ProfileView(repo.name, repo.path, views, sessions)


# ---- log ------------------------------------------------------------------------------------------


def profile_log(
    store: ProfileStore, name: str, branch: str | None = None, limit: int = PROFILE_LOG_LIMIT
) -> list[tuple[str, list[ProfileCommit]]]:
    """Each branch's newest commits: ``branch``, else ``main`` and every model base."""
    repo = existing_profile(store, name)
    branches = repo.refs.branches()
    if branch is not None:
        if branch not in branches:
            raise ProfileError(
                f"profile {name} has no branch {branch}; `aerix profile show` lists its branches"
            )
        chosen = [branch]
    else:
        chosen = [
            b
            for b in sorted(branches, key=lambda b: (b != MAIN_BRANCH, b))
            if not b.startswith(SESSION_BRANCH_PREFIX)
        ]
    return [(each, repo.refs.log(each, limit)) for each in chosen]


# ---- edit -----------------------------------------------------------------------------------------


@dataclass
class EditDeps:
    projects: ProjectSource
    profiles: ProfileStore
    editor: TextEditor
    embedded: Mapping[str, str]
    release: str
    clock: Clock


@dataclass(frozen=True)
class EditOptions:
    cwd: Path
    path: str
    profile: str | None = None
    model: str | None = None
    main: bool = False


def edit_profile(options: EditOptions, deps: EditDeps) -> EditOutcome:
    project = deps.projects.load(options.cwd)
    settings = project.settings
    name = options.profile or settings.profile
    try:
        artifact = parse_artifact_path(options.path, deps.embedded)
    except ProfilePathError as error:
        raise UsageError(str(error)) from error
    upstream = upstream_texts(deps.embedded, project)(artifact.path)
    if upstream is None:
        raise UsageError(
            f"{artifact.path}: this project has no {artifact.kind} named {artifact.name}, so there is no "
            "body for an overlay to replace"
        )
    repo = deps.profiles.open(name)
    branch = _editable_branch(repo, deps, options, settings.pool.main)
    head = repo.refs.head(branch)
    start = repo.objects.read(head) if head is not None else None
    current = (start.effective(artifact.path, upstream) if start is not None else None) or upstream
    edited = deps.editor.edit(current, f"{name}-{branch}-{artifact.path}")
    if edited.text == current:
        deps.editor.discard(edited)
        return EditOutcome(name, branch, artifact.path, None)
    refusals = check_revision(edited.text, current, upstream)
    blocking = [r for r in refusals if r.guard == "text"]
    if blocking or start is None:
        raise UsageError(
            f"{artifact.path}: {blocking[0] if blocking else 'no branch to edit'}; kept in {edited.file}"
        )
    entry = UpstreamEntry(blob_id(upstream), deps.release, iso(deps.clock()))
    revision = Revision(artifact.path, edited.text, "edited by hand", current, entry)
    committed = commit_revisions(repo, branch, start, [revision], f"aerix profile edit: {artifact.path}")
    if committed.refused:
        raise ProfileChanged(
            f"{artifact.path} changed on {branch} while you edited it; nothing was committed, "
            f"your text is in {edited.file}"
        )
    deps.editor.discard(edited)
    warnings = tuple(str(r) for r in refusals if r.guard not in ("text", "differs"))
    return EditOutcome(name, branch, artifact.path, committed.commit, warnings)


def _editable_branch(
    repo: ProfileRepository, deps: EditDeps, options: EditOptions, default_model: str
) -> str:
    main_head = seed_main(repo, deps.embedded, deps.release)
    if options.main:
        return MAIN_BRANCH
    branch, _ = ensure_model_base(repo, options.model or default_model, main_head)
    return branch


# ---- a session's branch ---------------------------------------------------------------------------


def remove_session_branch(store: ProfileStore, start: ev.SessionStart | None) -> str | None:
    """Delete ``session/<id>`` in the profile the session recorded; a line when that could not
    be done (the session itself is still removed)."""
    if start is None or start.profile is None:
        return None
    try:
        repo = store.find(start.profile)
        if repo is not None:
            delete_branch(repo, start.profile_branch or session_branch(start.session))
    except ProfileError as error:
        return f"{error}; its session/{start.session} branch was left"
    return None

"""Startup's part: attach a session to its profile and read its texts from one commit.

It opens (or creates) the profile, seeds ``main``, makes the main member's model base
``model/<model>`` when it is new, and picks the commit: the model base's head for a new session,
the commit a resumed session recorded (even when the main model changed since), or, with
``--profile-refresh``, the model base's head again. ``session/<id>`` is made (or moved) to that
commit; ``preview_profile`` picks and reads the same commit without it, for the screen to show
before the first prompt (a session quit before one leaves no branch). A profile that cannot be
used is one note, and the embedded prompts are used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aerix.app.ports.project import PromptSource
from aerix.app.profiles.bases import ensure_model_base, seed_main
from aerix.app.profiles.writes import create_branch, point_branch
from aerix.domain.profile import (
    MAIN_BRANCH,
    ProfileSnapshot,
    model_branch,
    prompt_path,
    session_branch,
    short_commit,
)
from aerix.errors import ProfileError

if TYPE_CHECKING:
    # Named in annotations only: a request does not load the profile ports' module (with what
    # the profile commands report).
    from aerix.app.ports.profiles import ProfileRepository, ProfileStore

EMBEDDED_NOTE = "the embedded prompts are used"


@dataclass(frozen=True)
class ProfileRequest:
    """What startup knows when it attaches the profile."""

    profile: str
    model: str  # the main member's model
    session: str
    release: str
    #: A resumed session's recorded commit (None for a new session, or an older log without one).
    recorded_commit: str | None = None
    refresh: bool = False


@dataclass(frozen=True)
class AttachedProfile:
    """The texts a request reads (a :class:`~aerix.app.ports.PromptSource`), and where from.
    ``name`` is None when no profile could be used: every text is then the embedded one."""

    fallback: PromptSource
    name: str | None = None
    model_branch: str | None = None
    branch: str | None = None
    commit: str | None = None
    texts: Mapping[str, str] = field(default_factory=dict)
    skill_overlays: Mapping[str, str] = field(default_factory=dict)
    agent_overlays: Mapping[str, str] = field(default_factory=dict)
    #: How many of the embedded prompts the commit tunes; None when its upstream.json does not parse.
    tuned: int | None = 0
    notes: tuple[str, ...] = ()

    def get(self, name: str) -> str:
        text = self.texts.get(name)
        return text if text is not None else self.fallback.get(name)

    def listing(self) -> dict[str, Any] | None:
        """The startup block's profile row as data (None: the embedded prompts)."""
        if self.name is None:
            return None
        return {
            "name": self.name,
            "model_branch": self.model_branch,
            "branch": self.branch,
            "commit": self.commit,
            "tuned": self.tuned,
        }


def attach_profile(
    store: ProfileStore, request: ProfileRequest, embedded: Mapping[str, str], fallback: PromptSource
) -> AttachedProfile:
    """The session's texts, with ``session/<id>`` made (or moved) to the commit they are read from."""
    return _open(store, request, embedded, fallback, make_branch=True)


def preview_profile(
    store: ProfileStore, request: ProfileRequest, embedded: Mapping[str, str], fallback: PromptSource
) -> AttachedProfile:
    """What :func:`attach_profile` would attach, without making the session's branch: ``main``
    and the model base are seeded as for any session, but ``session/<id>`` waits for the first
    request, so a screen quit before its first prompt leaves no branch without a session log."""
    return _open(store, request, embedded, fallback, make_branch=False)


def _open(
    store: ProfileStore,
    request: ProfileRequest,
    embedded: Mapping[str, str],
    fallback: PromptSource,
    *,
    make_branch: bool,
) -> AttachedProfile:
    try:
        repo = store.open(request.profile)
        return _attach(repo, request, embedded, fallback, make_branch)
    except ProfileError as error:
        return AttachedProfile(fallback, notes=(f"{error}; {EMBEDDED_NOTE}",))


def _attach(
    repo: ProfileRepository,
    request: ProfileRequest,
    embedded: Mapping[str, str],
    fallback: PromptSource,
    make_branch: bool,
) -> AttachedProfile:
    branch = session_branch(request.session)
    # The three heads the attach reads, in one git call; each write reads its branch again
    # only when its swap finds the branch moved.
    listed = repo.refs.heads([MAIN_BRANCH, model_branch(request.model), branch])
    main_head = seed_main(repo, embedded, request.release, listed)
    base_branch, base_head = ensure_model_base(repo, request.model, main_head, listed)
    notes: list[str] = []
    recorded = request.recorded_commit
    # How session/<id> is put at the commit.
    place: Callable[[ProfileRepository, str, str, Mapping[str, str]], object]
    if request.refresh or recorded is None:
        commit, place = base_head, point_branch
    elif repo.objects.has_commit(recorded):
        commit, place = recorded, create_branch
    else:
        notes.append(
            f"profile {repo.name} no longer holds commit {short_commit(recorded)}, "
            f"which this session read; reading {base_branch}'s head"
        )
        commit, place = base_head, point_branch
    if make_branch:
        place(repo, branch, commit, listed)
    snapshot = repo.objects.read(commit)
    notes.extend(_snapshot_notes(repo.name, snapshot, embedded))
    texts = {}
    for name, text in embedded.items():
        effective = snapshot.effective(prompt_path(name), text)
        if effective is not None and effective != text:
            texts[name] = effective
    tuned = None
    if snapshot.upstream is not None:
        tuned = sum(1 for name in embedded if snapshot.tunes(prompt_path(name)))
    return AttachedProfile(
        fallback,
        name=repo.name,
        model_branch=base_branch,
        branch=branch,
        commit=commit,
        texts=texts,
        skill_overlays=snapshot.overlays("skill"),
        agent_overlays=snapshot.overlays("agent"),
        tuned=tuned,
        notes=tuple(notes),
    )


def _snapshot_notes(name: str, snapshot: ProfileSnapshot, embedded: Mapping[str, str]) -> list[str]:
    short = short_commit(snapshot.commit or "")
    notes = []
    if snapshot.upstream_problem is not None:
        notes.append(
            f"profile {name} at {short}: {snapshot.upstream_problem}; its texts are used as written, "
            "and none can be called stale"
        )
    for path in snapshot.tuned_paths:
        if snapshot.text(path) is None:
            notes.append(f"profile {name} at {short}: {path} is not UTF-8 text; it is left out")
    return notes

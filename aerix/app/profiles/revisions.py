"""The commit that records revisions (tune's, sync's, an edit's) without overwriting a text that
changed on the branch meanwhile."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from aerix.app.ports.profiles import ProfileRepository, Refused, Revision
from aerix.app.profiles.writes import Write, commit_change
from aerix.domain.profile import ProfileSnapshot


@dataclass
class Committed:
    """What a revisions commit did: the commit (None when nothing was written) and the revisions
    refused because their path changed on the branch during the run."""

    commit: str | None = None
    refused: list[Refused] = field(default_factory=list)


def changed_between(start: ProfileSnapshot, now: ProfileSnapshot, path: str) -> bool:
    """Whether ``path``'s text or upstream entry differs between two commits of a branch."""
    before = (start.upstream or {}).get(path)
    after = (now.upstream or {}).get(path)
    return start.files.get(path) != now.files.get(path) or before != after


def commit_revisions(
    repo: ProfileRepository,
    branch: str,
    start: ProfileSnapshot,
    revisions: Sequence[Revision],
    subject: str,
) -> Committed:
    """One commit on ``branch`` with every revision whose path still reads as it did in
    ``start`` (the commit the run read from); the others are refused, not overwritten. The
    message lists each revision and why."""
    outcome = Committed()

    def change(base: ProfileSnapshot) -> Write | None:
        kept = [rev for rev in revisions if not changed_between(start, base, rev.path)]
        outcome.refused = [
            Refused(rev.path, f"it changed on {branch} during the run (a hand edit?); not overwritten")
            for rev in revisions
            if rev not in kept
        ]
        if not kept:
            return None
        texts = {rev.path: rev.text for rev in kept}
        entries = {rev.path: rev.upstream for rev in kept}
        body = "".join(f"- {rev.path}: {rev.reason or 'no reason given'}\n" for rev in kept)
        return Write(base.with_texts(texts, entries), f"{subject}\n\n{body}")

    outcome.commit = commit_change(repo, branch, change)
    return outcome

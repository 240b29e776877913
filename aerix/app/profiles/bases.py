"""The branches every profile has before anything is tuned: ``main`` and a model's base.

``main`` holds the embedded prompts. It is seeded when the profile is created, and when this
release's embedded set differs from main's untuned texts it gets one commit naming the release.
``model/<model>`` is made from ``main``'s head when it is new. Tuned paths on ``main`` (a hand
edit with ``aerix profile edit --main``) are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from aerix.app.profiles.writes import Write, create_branch, head_after_change
from aerix.domain.profile import MAIN_BRANCH, ProfileSnapshot, model_branch, prompt_path

if TYPE_CHECKING:
    # Named in annotations only: a request does not load the profile ports' module (with what
    # the profile commands report).
    from aerix.app.ports.profiles import ProfileRepository


def seed_main(
    repo: ProfileRepository,
    embedded: Mapping[str, str],
    release: str,
    listed: Mapping[str, str] | None = None,
) -> str:
    """Make or update ``main`` to this release's embedded prompts; returns main's head.
    ``listed``: heads read at once just before (``repo.heads``), for the first try."""

    def change(base: ProfileSnapshot) -> Write | None:
        texts = {
            prompt_path(name): text
            for name, text in embedded.items()
            if not base.tunes(prompt_path(name)) and base.files.get(prompt_path(name)) != text.encode("utf-8")
        }
        if not texts and base.commit is not None:
            return None
        if base.commit is None:
            message = f"aerix {release}: seed main from the embedded prompts"
        else:
            message = f"aerix {release}: the embedded prompts of this release\n\n" + "".join(
                f"- {path}\n" for path in sorted(texts)
            )
        return Write(base.with_texts(texts, {}), message)

    head = head_after_change(repo, MAIN_BRANCH, change, listed)
    if head is None:  # the change made main or found it; never None here
        raise RuntimeError("profile main has no head after seeding")
    return head


def ensure_model_base(
    repo: ProfileRepository, model: str, main_head: str, listed: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """``model/<model>`` (made from ``main`` when new): (its branch name, its head)."""
    branch = model_branch(model)
    return branch, create_branch(repo, branch, main_head, listed)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")

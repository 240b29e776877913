"""``aerix profile edit``, ``show`` and ``log`` as use cases, on real repositories, with a real
``$EDITOR`` (a script) run as a subprocess."""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import pytest

from aerix import __version__
from aerix.adapters.clock import utc_now
from aerix.adapters.console.external_editor import ProcessEditor
from aerix.adapters.console.profile_output import render_log, render_show
from aerix.adapters.git.profile_repo import GitProfiles
from aerix.adapters.project.project import ProjectFiles
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.app.profiles.attach import ProfileRequest, attach_profile
from aerix.app.profiles.manage import (
    EditDeps,
    EditOptions,
    edit_profile,
    profile_log,
    remove_session_branch,
    show_profile,
)
from aerix.app.profiles.runs import upstream_texts
from aerix.domain import events as ev
from aerix.domain.profile import blob_id
from aerix.errors import ProfileChanged, ProfileError, UsageError
from tests.aerix.profile_world import EMBEDDED, ROOT, git
from tests.aerix.session_streams import T0

MODEL = "smollm2-135m"
BRANCH = f"model/{MODEL}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    skill = root / ".aerix" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\ndescription: Deploy it\n---\nRun make deploy and read its output.\n"
    )
    # pool.main names the model base the edits go to: the tests' model, not the default.
    (root / ".aerix" / "settings.json").write_text(json.dumps({"pool": {"main": MODEL}}))
    return root


def editor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, python: str) -> None:
    """``$EDITOR`` is a script that runs ``python`` with the file's path as ``path``."""
    script = tmp_path / "edit.py"
    script.write_text(f"import sys\nfrom pathlib import Path\npath = Path(sys.argv[1])\n{python}\n")
    monkeypatch.setenv("EDITOR", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    monkeypatch.delenv("VISUAL", raising=False)


def deps() -> EditDeps:
    return EditDeps(ProjectFiles(), GitProfiles(), ProcessEditor(), EMBEDDED, __version__, utc_now)


def test_an_edit_is_one_commit_that_new_sessions_read(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    editor(monkeypatch, tmp_path, "path.write_text(path.read_text() + 'Prefer edit when files change.\\n')")
    outcome = edit_profile(EditOptions(project, "routing"), deps())
    assert (outcome.profile, outcome.branch, outcome.path) == ("default", BRANCH, "prompts/routing.md")
    repo = GitProfiles().open("default")
    head = repo.objects.read(repo.refs.head(BRANCH) or "")
    assert outcome.commit == head.commit
    assert head.text("prompts/routing.md") == EMBEDDED["routing"] + "Prefer edit when files change.\n"
    assert head.upstream is not None and head.upstream["prompts/routing.md"].hash == blob_id(
        EMBEDDED["routing"]
    )
    assert git(repo.path, "log", "-1", "--format=%B", BRANCH).strip() == (
        "aerix profile edit: prompts/routing.md\n\n- prompts/routing.md: edited by hand"
    )
    attached = attach_profile(
        GitProfiles(),
        ProfileRequest("default", "smollm2-135m", "s9", __version__),
        EMBEDDED,
        EmbeddedPrompts(),
    )
    assert attached.get("routing").endswith("Prefer edit when files change.\n") and attached.tuned == 1
    assert list((tmp_path.parent).glob("**/profile-edits/*.md")) == []  # the scratch file is gone


def test_saving_the_text_unchanged_commits_nothing(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    editor(monkeypatch, tmp_path, "pass")
    outcome = edit_profile(EditOptions(project, "prompts/system.md", main=True), deps())
    assert outcome.commit is None and outcome.branch == "main"
    assert git(GitProfiles().open("default").path, "rev-list", "--count", "main").strip() == "1"


def test_a_skill_overlay_replaces_the_skills_body(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    editor(monkeypatch, tmp_path, "path.write_text('Run make deploy, then make smoke.\\n')")
    edit_profile(EditOptions(project, "skills/deploy.md"), deps())
    attached = attach_profile(
        GitProfiles(),
        ProfileRequest("default", "smollm2-135m", "s9", __version__),
        EMBEDDED,
        EmbeddedPrompts(),
    )
    assert attached.skill_overlays == {"deploy": "Run make deploy, then make smoke.\n"}
    skills = ProjectFiles().load(project).skills.with_bodies(attached.skill_overlays)
    assert skills.expand_prompt("/deploy") == "Run make deploy, then make smoke.\n"
    assert attached.tuned == 0  # an overlay is not one of the embedded prompts


def test_an_overlay_for_a_skill_the_project_lacks_is_refused(project: Path) -> None:
    with pytest.raises(UsageError, match="this project has no skill named nope"):
        edit_profile(EditOptions(project, "skills/nope.md"), deps())
    with pytest.raises(UsageError, match="not a profile path"):
        edit_profile(EditOptions(project, "upstream.json"), deps())


def test_a_text_that_changed_on_the_branch_while_editing_is_not_overwritten(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo = GitProfiles().open("default")
    clone = tmp_path / "clone"
    hand = (
        "import subprocess\n"
        f"subprocess.run([{sys.executable!r}, '-c', {_HAND_EDIT!r}, {str(repo.path)!r}, {str(clone)!r}], "
        f"cwd={str(ROOT)!r}, check=True)\n"
        "path.write_text('my edit\\n')"
    )
    editor(monkeypatch, tmp_path, hand)
    with pytest.raises(ProfileChanged) as refused:
        edit_profile(EditOptions(project, "prompts/routing.md"), deps())
    message = str(refused.value)
    assert message.startswith(
        f"prompts/routing.md changed on {BRANCH} while you edited it; nothing was committed"
    )
    kept = Path(message.rsplit("your text is in ", 1)[1])
    assert kept.read_text() == "my edit\n"
    head = repo.refs.head(BRANCH) or ""
    assert repo.objects.read(head).text("prompts/routing.md") == "someone else's routing\n"


_HAND_EDIT = (
    "import sys; from pathlib import Path; from tests.aerix.profile_world import hand_edit; "
    f"hand_edit(Path(sys.argv[1]), {BRANCH!r}, 'prompts/routing.md', "
    '"someone else\'s routing\\n", Path(sys.argv[2]))'
)


def test_show_lists_branches_what_they_tune_and_what_is_stale(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    editor(monkeypatch, tmp_path, "path.write_text(path.read_text() + 'Be brief.\\n')")
    edit_profile(EditOptions(project, "prompts/compacted.md"), deps())
    for session in ("s1", "s2"):
        attach_profile(
            GitProfiles(),
            ProfileRequest("default", "smollm2-135m", session, __version__),
            EMBEDDED,
            EmbeddedPrompts(),
        )
    released = {**EMBEDDED, "compacted": "A new release's compacted note.\n"}
    view = show_profile(GitProfiles(), "default", upstream_texts(released, ProjectFiles().load(project)))
    assert [(b.name, b.tuned, b.stale) for b in view.branches] == [
        ("main", (), ()),
        (BRANCH, ("prompts/compacted.md",), ("prompts/compacted.md",)),
    ]
    out = io.StringIO()
    render_show(view, out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"profile default  {view.path}"
    assert lines[1:4] == [
        f"{'main':<{len(BRANCH)}}  {view.branches[0].head[:12]}  "
        f"aerix {__version__}: seed main from the embedded prompts",
        "  tunes: nothing (the release texts)",
        "  stale: none",
    ]
    assert lines[4].startswith(f"{BRANCH}  ") and lines[4].endswith(
        "aerix profile edit: prompts/compacted.md"
    )
    assert lines[5:7] == ["  tunes: prompts/compacted.md", "  stale: prompts/compacted.md"]
    assert lines[7].startswith("sessions: 2 branches at 1 commits (")
    as_json = io.StringIO()
    render_show(view, as_json, as_json=True)
    assert json.loads(as_json.getvalue())["branches"][1]["stale"] == ["prompts/compacted.md"]


def test_log_prints_each_branch_with_its_messages(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    editor(monkeypatch, tmp_path, "path.write_text(path.read_text() + 'Be brief.\\n')")
    edit_profile(EditOptions(project, "prompts/compacted.md"), deps())
    entries = profile_log(GitProfiles(), "default")
    assert [branch for branch, _ in entries] == ["main", BRANCH]
    out = io.StringIO()
    render_log(entries, out)
    text = out.getvalue()
    assert "aerix profile edit: prompts/compacted.md\n      - prompts/compacted.md: edited by hand\n" in text
    with pytest.raises(ProfileError, match="has no branch model/nope"):
        profile_log(GitProfiles(), "default", "model/nope")
    with pytest.raises(ProfileError, match="there is no profile other yet"):
        profile_log(GitProfiles(), "other")


def test_removing_a_session_removes_its_branch_and_a_broken_profile_is_one_line() -> None:
    attach_profile(
        GitProfiles(),
        ProfileRequest("default", "smollm2-135m", "s1", __version__),
        EMBEDDED,
        EmbeddedPrompts(),
    )
    start = ev.SessionStart(
        seq=1, time=T0, session="s1", cwd="/w", project="p", model="m", prompt="x", aerix_version="0",
        profile="default", profile_branch="session/s1",
    )  # fmt: skip
    assert remove_session_branch(GitProfiles(), start) is None
    assert "session/s1" not in GitProfiles().open("default").refs.branches()
    assert remove_session_branch(GitProfiles(), start.model_copy(update={"profile": None})) is None
    location = GitProfiles().location("broken")
    location.write_text("not a repository")
    note = remove_session_branch(GitProfiles(), start.model_copy(update={"profile": "broken"}))
    assert note is not None and note.endswith("; its session/s1 branch was left")

"""``aerix tune`` and ``aerix profile sync`` as use cases: real git profiles, real session logs,
and a scripted reflection member in the real pool daemon (its answers chosen by each test, the
tokenizer, template and Json constraint real)."""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aerix import __version__
from aerix.adapters.clock import utc_now
from aerix.adapters.git.profile_repo import GitProfiles
from aerix.adapters.pool.autostart import AutostartPool
from aerix.adapters.pool.client import CaldrixPool
from aerix.adapters.project.project import ProjectFiles
from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.ports.pool import OpenedPool
from aerix.app.ports.profiles import ProfileObserver
from aerix.app.profiles.bases import ensure_model_base, seed_main
from aerix.app.profiles.runs import ProfileDeps
from aerix.app.profiles.sync import SyncOptions, run_sync
from aerix.app.profiles.tune import TuneOptions, run_tune
from aerix.app.profiles.writes import Write, commit_change
from aerix.app.sessions.writer import start_session
from aerix.domain import events as ev
from aerix.domain.bounds import REFLECTION_ANSWER_SLACK_TOKENS
from aerix.domain.profile import UPSTREAM_FILE, ProfileSnapshot, UpstreamEntry, blob_id
from aerix.domain.settings import PoolSettings
from tests.aerix.profile_world import EMBEDDED, git, hand_edit
from tests.caldrix.pool_harness import PoolProcess
from tests.default_model import default_model_path

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

MODEL = "smollm2-135m"
BRANCH = "model/smollm2-135m"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


# ---- the world: a project, sessions in the store, a scripted reflection member -------------------


class Heard(ProfileObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.artifacts: list[tuple[int, int, str]] = []
        self.tokens: list[str] = []
        self.diffs: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)

    def artifact(self, index: int, total: int, path: str) -> None:
        self.artifacts.append((index, total, path))

    def token(self, text: str) -> None:
        self.tokens.append(text)

    def diff(self, text: str) -> None:
        self.diffs.append(text)


def answer(text: str, reason: str = "clearer", *, ascii_only: bool = False) -> str:
    return json.dumps({"text": text, "reason": reason}, ensure_ascii=ascii_only)


@pytest.fixture
async def reflector(pool_process: PoolProcess, tmp_path: Path) -> AsyncIterator[Any]:
    """Load a scripted member under the model file's path (so ``tune.member`` can name it);
    ``await reflector(answers)`` loads it, and it is unloaded after the test."""
    pool = CaldrixPool(pool_process.socket_path)
    names: list[str] = []

    async def load(answers: list[str], ctx: int = 2048) -> str:
        script = tmp_path / f"reflect-{len(names)}.json"
        script.write_text(json.dumps(answers))
        name = f"reflect-{uuid.uuid4().hex[:8]}"
        await pool.members.load(
            name, str(default_model_path()), {"engine": "scripted", "script": str(script), "ctx": ctx}
        )
        names.append(name)
        return name

    yield load
    for name in names:
        await pool.members.unload(name)
    await pool.aclose()


@pytest.fixture
def project(tmp_path: Path, pool_process: PoolProcess) -> Path:
    root = tmp_path / "proj"
    (root / ".aerix").mkdir(parents=True)
    settings = {
        "pool": {"socket": str(pool_process.socket_path), "main": MODEL},
        "tune": {"member": str(default_model_path())},
        "context": {"max_new_tokens": 512},
    }
    (root / ".aerix" / "settings.json").write_text(json.dumps(settings))
    return root


def deps(pools: Any = None) -> ProfileDeps:
    return ProfileDeps(
        projects=ProjectFiles(),
        pools=pools or AutostartPool(),
        sessions=SessionFiles(),
        profiles=GitProfiles(),
        prompts=EmbeddedPrompts(),
        embedded=EMBEDDED,
        release=__version__,
        clock=utc_now,
    )


def record_session(
    session: str, day: int, events: list[tuple[type[ev.EventBase], dict[str, Any]]], **start: Any
) -> None:
    clock = iter(T0 + timedelta(days=day, seconds=n) for n in range(1000))
    fields = {
        "session": session,
        "cwd": "/work/demo",
        "project": "demo",
        "model": MODEL,
        "profile": "default",
        "prompt": "fix the failing test in calc.py",
        "aerix_version": __version__,
        **start,
    }
    writer = start_session(SessionFiles(), lambda: next(clock), **fields)
    try:
        for cls, values in events:
            writer.record(cls, **values)
    finally:
        writer.close()


ROUTED_AND_FAILED: list[tuple[type[ev.EventBase], dict[str, Any]]] = [
    (ev.RouteDecision, {"choice": "answer", "scores": {"answer": -0.2, "edit": -1.9}}),
    (ev.AgentSpawn, {"agent": "a1", "kind": "root"}),
    (ev.AgentEnd, {"agent": "a1", "outcome": "done", "turns": 1}),
    (ev.SessionEnd, {"outcome": "done"}),
]

EVERY_KIND: list[tuple[type[ev.EventBase], dict[str, Any]]] = [
    (ev.RouteDecision, {"choice": "edit", "scores": {"edit": -0.1}}),
    (ev.AgentSpawn, {"agent": "a1", "kind": "root"}),
    (
        ev.Message,
        {"agent": "a1", "role": "assistant", "turn": 1, "text": "{", "parse_error": "no JSON object found"},
    ),
    (ev.Compaction, {"agent": "a1", "replaced": [], "tokens_before": 900, "tokens_after": 400}),
    (
        ev.AgentSpawn,
        {"agent": "a1.c2", "parent": "a1", "kind": "implementer", "brief": "fix calc.py", "check": "pytest"},
    ),
    (ev.AgentEnd, {"agent": "a1.c2", "outcome": "done", "turns": 2}),
    (ev.AgentSpawn, {"agent": "a1.c2.v1", "parent": "a1", "kind": "verifier", "brief": "fix calc.py"}),
    (ev.AgentEnd, {"agent": "a1.c2.v1", "outcome": "done", "verdict": "fail", "reason": "pytest fails"}),
    (ev.AgentEnd, {"agent": "a1", "outcome": "failed", "reason": "verification failed after 1 attempts"}),
    (ev.SessionEnd, {"outcome": "failed", "exit_code": 1, "reason": "verification failed after 1 attempts"}),
]

#: A revision of routing.md the reflector proposes: within the length guard's bounds (half to
#: twice the release's text).
ROUTING = (
    "Sort the user's request into one of four kinds and reply with its one word:\n"
    "edit - any change to files; prefer it whenever a file changes, also for a task that says what\n"
    "code should do and names the file\n"
    "answer - a general question answered without touching files\n"
    "investigate - a question about this repository that needs reading files or running commands\n"
    "plan - a larger piece of work across many files, planned and split first\n"
)


def _repo() -> Any:
    repo = GitProfiles().find("default")
    assert repo is not None
    return repo


# ---- tune -----------------------------------------------------------------------------------------


async def test_a_revision_that_passes_the_guards_is_one_commit_on_the_model_base(
    project: Path, reflector: Any
) -> None:
    record_session("s1", 1, ROUTED_AND_FAILED)
    record_session("s2", 2, ROUTED_AND_FAILED, model="another-model")  # not this model's
    await reflector([answer(ROUTING, "edit was under-used in these sessions")])
    heard = Heard()
    report = await run_tune(TuneOptions(project), deps(), heard)

    assert report.sessions == 1 and report.branch == BRANCH and report.refused == []
    assert [rev.path for rev in report.revisions] == ["prompts/routing.md"]
    assert heard.artifacts == [(1, 1, "prompts/routing.md")]
    assert "".join(heard.tokens) == answer(ROUTING, "edit was under-used in these sessions")
    repo = _repo()
    head = repo.objects.read(repo.refs.head(BRANCH))
    assert report.commit == head.commit and head.text("prompts/routing.md") == ROUTING
    assert head.upstream["prompts/routing.md"].hash == blob_id(EMBEDDED["routing"])
    assert head.upstream["prompts/routing.md"].release == __version__
    message = git(repo.path, "log", "-1", "--format=%B", BRANCH)
    assert message.startswith(f"aerix tune: 1 revision from 1 sessions of {MODEL}")
    assert "- prompts/routing.md: edit was under-used in these sessions" in message
    assert repo.objects.read(repo.refs.head("main")).text("prompts/routing.md") == EMBEDDED["routing"]
    assert "prompts/system.md" in report.without_evidence  # a done request: no failure to learn from


async def test_each_guard_refuses_its_revision_with_the_reason(project: Path, reflector: Any) -> None:
    record_session("s1", 1, EVERY_KIND)
    brief, verifier = EMBEDDED["brief"], EMBEDDED["verifier"]
    compacted = (
        "Older tool results were replaced by markers to make room. Read the files again if you need them.\n"
    )
    await reflector(
        [
            answer("<|im_start|>system\n" + EMBEDDED["system"]),  # system.md: markup
            answer("answer, edit"),  # routing.md: length
            answer(EMBEDDED["planner"].replace("{tools}", "the planning tools")),  # planner.md: placeholders
            answer(brief.replace("Do the task", "Do the task \x07"), ascii_only=True),  # brief.md: text
            answer(verifier),  # verifier.md: differs
            answer(compacted, "say what was replaced"),  # compacted.md: passes
        ]
    )
    report = await run_tune(TuneOptions(project), deps(), Heard())
    refused = {item.path: item.reason for item in report.refused}
    assert set(refused) == {f"prompts/{n}.md" for n in ("system", "routing", "planner", "brief", "verifier")}
    assert refused["prompts/system.md"].startswith("markup: contains chat-template markup '<|im_start|>'")
    assert refused["prompts/routing.md"].startswith("length: 12 characters, outside")
    assert refused["prompts/planner.md"] == "placeholders: drops {tools}, which the code fills in"
    assert refused["prompts/brief.md"].startswith("text: holds the control character U+0007")
    assert refused["prompts/verifier.md"] == "differs: the same as the current text"
    assert [rev.path for rev in report.revisions] == ["prompts/compacted.md"]
    repo = _repo()
    head = repo.objects.read(repo.refs.head(BRANCH))
    assert head.text("prompts/compacted.md") == compacted and head.tuned_paths == ("prompts/compacted.md",)


async def test_a_hand_edit_during_the_run_is_not_overwritten(
    project: Path, reflector: Any, tmp_path: Path
) -> None:
    record_session("s1", 1, EVERY_KIND)
    compacted = (
        "Older tool results were replaced by markers to make room. Read the files again if you need them.\n"
    )
    await reflector(
        [
            answer(EMBEDDED["system"] + "Check your work before you finish.\n"),
            answer(ROUTING),
            answer("x"),
            answer("x"),
            answer("x"),
            answer(compacted),
        ]
    )

    class EditsByHand(Heard):
        def artifact(self, index: int, total: int, path: str) -> None:
            super().artifact(index, total, path)
            if path == "prompts/routing.md":  # while the run reflects, someone edits by hand
                hand_edit(_repo().path, BRANCH, "prompts/routing.md", "my own routing\n", tmp_path / "clone")

    report = await run_tune(TuneOptions(project), deps(), EditsByHand())
    refused = {item.path: item.reason for item in report.refused}
    assert refused["prompts/routing.md"] == (
        f"it changed on {BRANCH} during the run (a hand edit?); not overwritten"
    )
    assert sorted(rev.path for rev in report.revisions) == ["prompts/compacted.md", "prompts/system.md"]
    repo = _repo()
    head = repo.objects.read(repo.refs.head(BRANCH))
    assert head.text("prompts/routing.md") == "my own routing\n"
    assert head.text("prompts/compacted.md") == compacted
    assert git(repo.path, "log", "--format=%s", "-2", BRANCH).splitlines()[1] == "by hand"


async def test_dry_run_prints_a_diff_per_revision_and_leaves_every_ref_alone(
    project: Path, reflector: Any
) -> None:
    seed_main(GitProfiles().open("default"), EMBEDDED, __version__)
    ensure_model_base(_repo(), MODEL, _repo().refs.head("main"))
    before = _repo().refs.branches()
    record_session("s1", 1, ROUTED_AND_FAILED)
    await reflector([answer(ROUTING)])
    heard = Heard()
    report = await run_tune(TuneOptions(project, dry_run=True), deps(), heard)
    assert _repo().refs.branches() == before and report.commit is None
    [diff] = heard.diffs
    assert diff.startswith("--- a/prompts/routing.md\n+++ b/prompts/routing.md\n")
    assert (
        "+answer - a general question answered without touching files\n" in diff
        and "-Sort the user's request to a coding agent into one of four kinds" in diff
    )


async def test_dry_run_on_a_profile_that_does_not_exist_creates_nothing(
    project: Path, reflector: Any
) -> None:
    record_session("s1", 1, ROUTED_AND_FAILED)
    await reflector([answer(ROUTING)])
    heard = Heard()
    report = await run_tune(TuneOptions(project, dry_run=True), deps(), heard)
    assert GitProfiles().find("default") is None and report.commit is None
    assert [rev.path for rev in report.revisions] == ["prompts/routing.md"] and len(heard.diffs) == 1


async def test_a_reflection_cut_by_the_token_limit_is_refused(project: Path, reflector: Any) -> None:
    settings = json.loads((project / ".aerix" / "settings.json").read_text())
    settings["context"]["max_new_tokens"] = 16
    (project / ".aerix" / "settings.json").write_text(json.dumps(settings))
    record_session("s1", 1, ROUTED_AND_FAILED)
    await reflector([answer(ROUTING)])
    report = await run_tune(TuneOptions(project), deps(), Heard())
    assert [(r.path, r.reason) for r in report.refused] == [
        ("prompts/routing.md", "the answer was cut at 16 tokens before its JSON closed")
    ]
    assert report.commit is None


async def test_a_reflection_that_repeats_a_sentence_is_stopped_early_and_refused(
    project: Path, reflector: Any
) -> None:
    """The pool's guard stops a looping answer within a few repeats (not at its token bound), and
    the revision is refused with the guard's reason."""
    record_session("s1", 1, ROUTED_AND_FAILED)
    looping = " ".join(["It is a new version of the original system."] * 300)
    await reflector([answer(looping)])
    heard = Heard()
    report = await run_tune(TuneOptions(project), deps(), heard)
    [refused] = report.refused
    assert refused.path == "prompts/routing.md"
    match = re.fullmatch(
        r"the answer was stopped after (\d+) tokens: the same (\d+)-token span repeated \d+ times",
        refused.reason,
    )
    assert match is not None, refused.reason
    stopped_after, period = int(match.group(1)), int(match.group(2))
    assert stopped_after < 128 and 5 <= period <= 16
    assert len(heard.tokens) == stopped_after  # one token frame per token of this ASCII answer
    assert report.commit is None


async def test_a_reflection_asks_no_more_than_the_length_guard_could_accept(
    project: Path, reflector: Any
) -> None:
    """routing.md is short: an answer past twice its tokens (plus the JSON and a reason) could
    never pass the length guard, so the reflection is cut there, well under max_new_tokens."""
    settings = json.loads((project / ".aerix" / "settings.json").read_text())
    settings["context"]["max_new_tokens"] = 1024
    (project / ".aerix" / "settings.json").write_text(json.dumps(settings))
    record_session("s1", 1, ROUTED_AND_FAILED)
    chooser = random.Random(3)
    words = [
        f"{chooser.choice(['route', 'edit', 'plan', 'answer', 'read', 'look'])}{n % 97}" for n in range(900)
    ]
    rambling = "\n".join(" ".join(words[n : n + 9]) for n in range(0, len(words), 9))
    await reflector([answer(rambling)], ctx=4096)
    report = await run_tune(TuneOptions(project), deps(), Heard())
    [refused] = report.refused
    match = re.fullmatch(r"the answer was cut at (\d+) tokens before its JSON closed", refused.reason)
    assert match is not None, refused.reason
    assert REFLECTION_ANSWER_SLACK_TOKENS < int(match.group(1)) < 1024


async def test_evidence_past_the_window_is_cut_to_fit(project: Path, reflector: Any) -> None:
    long_prompt = "please " * 60
    for day in range(20):
        record_session(f"s{day}", day, ROUTED_AND_FAILED, prompt=f"{day} {long_prompt}")
    await reflector([answer(ROUTING)], ctx=1024)
    report = await run_tune(TuneOptions(project, sessions=20), deps(), Heard())
    assert report.sessions == 20 and [rev.path for rev in report.revisions] == ["prompts/routing.md"]


# ---- sync -----------------------------------------------------------------------------------------


OLD_ROUTING = "Classify the request: answer, edit, investigate or plan. One word.\n"


def _tuned_on_an_older_release() -> str:
    """A model base whose routing.md was tuned from an older release's text (kept on main)."""
    repo = GitProfiles().open("default")
    seed_main(repo, {**EMBEDDED, "routing": OLD_ROUTING}, "0.0.9")
    seed_main(repo, EMBEDDED, __version__)
    ensure_model_base(repo, MODEL, repo.refs.head("main"))
    entry = UpstreamEntry(blob_id(OLD_ROUTING), "0.0.9", "2026-01-01T00:00:00+00:00")

    def tune(base: ProfileSnapshot) -> Write:
        text = "Classify the request: answer, edit, investigate or plan. One word, lower case.\n"
        return Write(base.with_texts({"prompts/routing.md": text}, {"prompts/routing.md": entry}), "tuned")

    commit = commit_change(repo, BRANCH, tune)
    assert commit is not None
    return commit


async def test_sync_reconciles_a_stale_tuned_text_and_records_the_new_hash(
    project: Path, reflector: Any
) -> None:
    _tuned_on_an_older_release()
    reconciled = EMBEDDED["routing"] + "Answer in lower case.\n"
    await reflector([answer(reconciled, "kept lower case")])
    heard = Heard()
    report = await run_sync(SyncOptions(project), deps(), heard)
    assert report.stale == ["prompts/routing.md"] and report.refused == []
    assert heard.artifacts == [(1, 1, "prompts/routing.md")]
    repo = _repo()
    head = repo.objects.read(repo.refs.head(BRANCH))
    assert report.commit == head.commit and head.text("prompts/routing.md") == reconciled
    assert head.upstream["prompts/routing.md"].hash == blob_id(EMBEDDED["routing"])
    assert (
        git(repo.path, "log", "-1", "--format=%s", BRANCH)
        == f"aerix {__version__}: sync {BRANCH} with the release's texts\n"
    )


class NoPool:
    """A pool starter for a run that must not bind one: opening it fails the test."""

    async def open(self, settings: PoolSettings) -> OpenedPool:
        raise AssertionError("the run bound a pool")


async def test_sync_with_nothing_stale_binds_no_pool(project: Path) -> None:
    repo = GitProfiles().open("default")
    ensure_model_base(repo, MODEL, seed_main(repo, EMBEDDED, __version__))
    report = await run_sync(SyncOptions(project), deps(NoPool()), Heard())
    assert report.stale == [] and report.commit is None


async def test_tune_syncs_the_model_base_first(project: Path, reflector: Any) -> None:
    _tuned_on_an_older_release()
    record_session("s1", 1, ROUTED_AND_FAILED)
    reconciled = EMBEDDED["routing"] + "Answer in lower case.\n"
    await reflector([answer(reconciled, "synced"), answer(ROUTING, "tuned")])
    report = await run_tune(TuneOptions(project), deps(), Heard())
    assert report.sync is not None and [rev.path for rev in report.sync.revisions] == ["prompts/routing.md"]
    assert [rev.previous for rev in report.revisions] == [reconciled]
    repo = _repo()
    assert git(repo.path, "log", "--format=%s", "-2", BRANCH).splitlines() == [
        f"aerix tune: 1 revision from 1 sessions of {MODEL}",
        f"aerix {__version__}: sync {BRANCH} with the release's texts",
    ]
    head = repo.objects.read(repo.refs.head(BRANCH))
    assert head.text("prompts/routing.md") == ROUTING
    assert head.upstream["prompts/routing.md"].hash == blob_id(EMBEDDED["routing"])
    assert UPSTREAM_FILE in head.files


@pytest.mark.model
async def test_a_reflection_model_the_pool_lacks_is_loaded_for_the_run_and_unloaded(
    project: Path, pool_process: PoolProcess
) -> None:
    """``--member`` names a model no member serves: it is loaded (the real model, through
    llama.cpp) as ``reflect``, reflects, and is unloaded when the run ends. What a 135M model
    writes is its own affair: every prompt asked about is revised or refused with a reason."""
    settings = json.loads((project / ".aerix" / "settings.json").read_text())
    settings["context"]["max_new_tokens"] = 48
    settings["tune"] = {"member_flags": {"ctx": 2048}}
    (project / ".aerix" / "settings.json").write_text(json.dumps(settings))
    record_session("s1", 1, ROUTED_AND_FAILED)
    # The same file under a reference no loaded member has (the scripted members use the plain path).
    reference = f"{default_model_path().parent}/./{default_model_path().name}"
    report = await run_tune(TuneOptions(project, member=reference), deps(), Heard())
    assert report.reflector == reference
    assert len(report.revisions) + len(report.refused) == 1
    assert all(item.reason for item in report.refused)
    pool = CaldrixPool(pool_process.socket_path)
    try:
        assert "reflect" not in {member.name for member in await pool.members.loaded()}
    finally:
        await pool.aclose()

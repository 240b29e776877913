"""A profile's contents, as values: the paths a commit holds, the branch names, ``upstream.json``.

A profile commit holds ``prompts/<name>.md`` (the prompt texts), ``skills/<name>.md`` and
``agents/<name>.md`` (overlays: a text that replaces the named skill's or agent definition's
body) and ``upstream.json``, which says for each tuned path which text of the release it was
derived from: ``{"prompts/routing.md": {"hash": "<git blob id>", "release": "0.1.0", "time":
"2026-03-01T09:12:44+00:00"}}``. The hash is git's blob id of that upstream text, so
``git show <hash>`` prints it while the repository still holds it (``main`` holds every
release's embedded set). A path the profile never tuned (not in ``upstream.json``) follows the
release's own text, whatever copy of it the commit holds.

Branches: ``main`` (the embedded prompts of the releases that ran), ``model/<model>`` (a
model's base, made from ``main``), ``session/<id>`` (the commit a session reads from).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

MAIN_BRANCH = "main"
MODEL_BRANCH_PREFIX = "model/"
SESSION_BRANCH_PREFIX = "session/"
UPSTREAM_FILE = "upstream.json"
PROMPTS_DIR = "prompts"
SKILLS_DIR = "skills"
AGENTS_DIR = "agents"
ARTIFACT_SUFFIX = ".md"
#: How many characters of a commit id aerix shows wherever it names one: the screen's profile
#: row, the profile's notes and errors, the profile commands' output.
SHORT_COMMIT_CHARS = 12

ArtifactKind = Literal["prompt", "skill", "agent"]
_KIND_OF_DIR: dict[str, ArtifactKind] = {PROMPTS_DIR: "prompt", SKILLS_DIR: "skill", AGENTS_DIR: "agent"}

#: A profile name is a folder name: ``<name>.git`` under ``$XDG_DATA_HOME/aerix/profiles``.
PROFILE_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
PROFILE_NAME_RULE = (
    "a profile name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
)
#: What may stand in one component of a git ref name as it is; anything else is replaced.
_REF_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$")
_REF_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
_REF_HASH_CHARS = 8


class ProfilePathError(ValueError):
    """A path that is not one a profile holds (``prompts/``, ``skills/`` or ``agents/`` + ``.md``)."""


def valid_profile_name(name: str) -> bool:
    return (
        bool(PROFILE_NAME_PATTERN.match(name)) and not name.endswith((".git", ".lock")) and ".." not in name
    )


def ref_component(name: str) -> str:
    """``name`` as one component of a git ref. A name that is already safe (``smollm2-135m``,
    ``qwen2.5-7b``) stays as it is; any other (a path, a URL, ``hf:owner/repo/file.gguf``) has
    each run of unsafe characters replaced by ``-`` and a short hash of the whole appended, so two
    different names never share a branch."""
    if _REF_SAFE.match(name) and not name.endswith(".lock"):
        return name
    cleaned = _REF_UNSAFE_RUN.sub("-", name).strip("-.")
    cleaned = re.sub(r"\.{2,}", ".", cleaned).removesuffix(".lock") or "x"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_REF_HASH_CHARS]
    return f"{cleaned}-{digest}"


def model_branch(model: str) -> str:
    """The model base of ``model``: ``model/<model>``."""
    return MODEL_BRANCH_PREFIX + ref_component(model)


def short_commit(commit: str) -> str:
    """``commit`` as aerix shows it: its first :data:`SHORT_COMMIT_CHARS` characters."""
    return commit[:SHORT_COMMIT_CHARS]


def session_branch(session_id: str) -> str:
    return SESSION_BRANCH_PREFIX + ref_component(session_id)


def prompt_path(name: str) -> str:
    return f"{PROMPTS_DIR}/{name}{ARTIFACT_SUFFIX}"


def overlay_path(kind: ArtifactKind, name: str) -> str:
    folder = {"prompt": PROMPTS_DIR, "skill": SKILLS_DIR, "agent": AGENTS_DIR}[kind]
    return f"{folder}/{name}{ARTIFACT_SUFFIX}"


@dataclass(frozen=True)
class ArtifactPath:
    """A path of a profile commit that aerix reads: its kind and the name it is for."""

    kind: ArtifactKind
    name: str

    @property
    def path(self) -> str:
        return overlay_path(self.kind, self.name)


def parse_artifact_path(path: str, prompt_names: Iterable[str] = ()) -> ArtifactPath:
    """``prompts/routing.md``, ``skills/deploy.md``, ``agents/reviewer.md``; a bare prompt name
    (``routing`` or ``routing.md``) means ``prompts/``. Anything else is refused by name."""
    text = path.strip().strip("/")
    folder, _, rest = text.rpartition("/")
    stem = rest.removesuffix(ARTIFACT_SUFFIX)
    if not folder and stem in set(prompt_names):
        return ArtifactPath("prompt", stem)
    kind = _KIND_OF_DIR.get(folder)
    if kind is None or not rest.endswith(ARTIFACT_SUFFIX) or not stem or "/" in stem:
        raise ProfilePathError(
            f"{path!r} is not a profile path; give prompts/<name>.md, skills/<name>.md or agents/<name>.md"
        )
    return ArtifactPath(kind, stem)


def artifact_of(path: str) -> ArtifactPath | None:
    """The artifact a commit path is, or None for any other file (``upstream.json``, a README)."""
    try:
        return parse_artifact_path(path)
    except ProfilePathError:
        return None


def blob_id(text: str) -> str:
    """git's id of a blob holding ``text`` as UTF-8 (what ``git hash-object`` prints)."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


# ---- upstream.json ------------------------------------------------------------------------------


@dataclass(frozen=True)
class UpstreamEntry:
    """Where a tuned path came from: the blob id of the upstream text it was derived from (None
    when there was none to track), the aerix release that wrote it and when (ISO 8601)."""

    hash: str | None
    release: str
    time: str

    def to_json(self) -> dict[str, Any]:
        return {"hash": self.hash, "release": self.release, "time": self.time}


class UpstreamUnreadable(ValueError):
    """``upstream.json`` is not the object of entries it should be."""


def parse_upstream(data: bytes) -> dict[str, UpstreamEntry]:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UpstreamUnreadable(f"{UPSTREAM_FILE} is not JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise UpstreamUnreadable(f"{UPSTREAM_FILE} is not an object of paths")
    entries: dict[str, UpstreamEntry] = {}
    for path, entry in raw.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("release", ""), str):
            raise UpstreamUnreadable(f"{UPSTREAM_FILE}: the entry of {path!r} is not an object")
        digest = entry.get("hash")
        if digest is not None and not isinstance(digest, str):
            raise UpstreamUnreadable(f"{UPSTREAM_FILE}: the hash of {path!r} is not a string")
        entries[path] = UpstreamEntry(digest, str(entry.get("release", "")), str(entry.get("time", "")))
    return entries


def render_upstream(entries: Mapping[str, UpstreamEntry]) -> bytes:
    data = {path: entries[path].to_json() for path in sorted(entries)}
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


# ---- one commit's contents ----------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileSnapshot:
    """One commit of a profile, read: every file's bytes, and ``upstream.json`` parsed.

    ``upstream`` is None when ``upstream.json`` does not parse (``upstream_problem`` says why):
    then nothing can be called stale, and every text the commit holds is used as it stands."""

    commit: str | None
    files: Mapping[str, bytes] = field(default_factory=dict)
    upstream: Mapping[str, UpstreamEntry] | None = field(default_factory=dict)
    upstream_problem: str | None = None

    @classmethod
    def of(cls, commit: str | None, files: Mapping[str, bytes]) -> ProfileSnapshot:
        raw = files.get(UPSTREAM_FILE)
        if raw is None:
            return cls(commit, dict(files), {})
        try:
            return cls(commit, dict(files), parse_upstream(raw))
        except UpstreamUnreadable as problem:
            return cls(commit, dict(files), None, str(problem))

    def text(self, path: str) -> str | None:
        """The file's text, or None when the commit lacks it or it is not UTF-8."""
        data = self.files.get(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def tunes(self, path: str) -> bool:
        """Whether this commit's text of ``path`` is the profile's own (else the release's)."""
        if path not in self.files:
            return False
        return self.upstream is None or path in self.upstream

    @property
    def tuned_paths(self) -> tuple[str, ...]:
        return tuple(sorted(path for path in self.files if artifact_of(path) and self.tunes(path)))

    def effective(self, path: str, upstream_text: str | None) -> str | None:
        """The text aerix uses for ``path``: the commit's when it tunes the path and reads as
        UTF-8, else ``upstream_text`` (the release's prompt, the skill's own body)."""
        if self.tunes(path):
            text = self.text(path)
            if text is not None:
                return text
        return upstream_text

    def stale(self, upstream_text: Callable[[str], str | None]) -> tuple[str, ...]:
        """Tuned paths whose recorded upstream hash no longer matches the upstream text now
        (``upstream_text(path)``; None = nothing to compare with, never stale)."""
        if self.upstream is None:
            return ()
        found = []
        for path in self.tuned_paths:
            entry = self.upstream.get(path)
            now = upstream_text(path)
            if (
                entry is not None
                and entry.hash is not None
                and now is not None
                and blob_id(now) != entry.hash
            ):
                found.append(path)
        return tuple(found)

    def overlays(self, kind: ArtifactKind) -> dict[str, str]:
        """The tuned overlays of one kind, by the name they replace."""
        result = {}
        for path in self.tuned_paths:
            artifact = artifact_of(path)
            text = self.text(path)
            if artifact is not None and artifact.kind == kind and text is not None:
                result[artifact.name] = text
        return result

    def with_texts(self, texts: Mapping[str, str], upstream: Mapping[str, UpstreamEntry]) -> dict[str, bytes]:
        """This commit's files with ``texts`` written over them and ``upstream`` entries set: the
        files of the commit that records a change."""
        files = dict(self.files)
        for path, text in texts.items():
            files[path] = text.encode("utf-8")
        if self.upstream is None:  # unreadable: keep every text it holds as the profile's own
            entries = {path: UpstreamEntry(None, "", "") for path in self.tuned_paths}
        else:
            entries = dict(self.upstream)
        entries.update(upstream)
        files[UPSTREAM_FILE] = render_upstream(entries)
        return files

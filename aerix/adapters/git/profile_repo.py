"""Profiles as bare git repositories: ``$XDG_DATA_HOME/aerix/profiles/<name>.git``.

Bare, because branches move only by compare-and-swap of their refs and there is no working tree
to get out of step. Every git call goes through ``aerix.adapters.git.git_runner``, bounded by
:data:`~aerix.domain.bounds.GIT_TIMEOUT_SECS`: reads are ``rev-parse``, ``for-each-ref``,
``ls-tree`` and one ``cat-file --batch``; a commit is plumbing (``hash-object``, a scratch index
with ``update-index`` and ``write-tree``, ``commit-tree``); the swap is ``update-ref <branch>
<new> <old>``, which git refuses when the branch is not at ``<old>``.

Errors leave as aerix's own: a repository or object git calls broken (its ``fatal``, status 128)
is :class:`~aerix.errors.ProfileUnusable`; any other failure, or a git that overran its bound,
:class:`~aerix.errors.ProfileGitFailed`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aerix.adapters.git.commit_files_cache import CommitFilesCache
from aerix.adapters.git.git_runner import GitFailed, GitOutput, call_git
from aerix.adapters.paths import data_home
from aerix.domain import bounds
from aerix.domain.profile import MAIN_BRANCH, ProfileSnapshot, short_commit
from aerix.errors import ProfileError, ProfileGitFailed, ProfileUnusable

if TYPE_CHECKING:
    from aerix.app.ports.profiles import ProfileCommit

#: Who the commits aerix writes are by (a hand edit through git keeps the user's own identity).
AUTHOR_ENV = {
    "GIT_AUTHOR_NAME": "aerix",
    "GIT_AUTHOR_EMAIL": "aerix@localhost",
    "GIT_COMMITTER_NAME": "aerix",
    "GIT_COMMITTER_EMAIL": "aerix@localhost",
}
ZERO_ID = "0" * 40
_BLOB_MODE = 0o100644
#: update-ref's words for "the ref was not where you said" or "another writer holds it now".
_RACE_WORDS = ("but expected", "reference already exists", "File exists", "unable to resolve reference")
_LOG_SEPARATOR = "\x1e"
#: git's status for its own ``fatal:`` (a repository or object it cannot use).
_GIT_FATAL = 128


def profiles_root() -> Path:
    """``$XDG_DATA_HOME/aerix/profiles``."""
    return data_home() / "profiles"


class GitProfiles:
    """:class:`aerix.app.ports.ProfileStore` over bare repositories in one folder."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else profiles_root()

    def location(self, name: str) -> Path:
        return self.root / f"{name}.git"

    def find(self, name: str) -> GitProfile | None:
        path = self.location(name)
        if not os.path.lexists(path):
            return None
        return GitProfile(name, path)

    def open(self, name: str) -> GitProfile:
        path = self.location(name)
        if not os.path.lexists(path):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ProfileUnusable(name, path, exc.strerror or str(exc)) from exc
            try:
                init = ("init", "--bare", "--quiet", f"--initial-branch={MAIN_BRANCH}", str(path))
                _checked(name, path, init, in_repository=False)
            except ProfileError:
                # Another aerix may have been creating it at the same moment: use theirs if it is there.
                if not os.path.lexists(path):
                    raise
        return GitProfile(name, path)


class GitProfile:
    """:class:`aerix.app.ports.profiles.ProfileRepository` for one bare repository: its branches
    (``refs``) and its objects (``objects``)."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        git = _Git(name, path)
        if git("rev-parse", "--is-bare-repository").text.strip() != "true":
            raise ProfileUnusable(name, path, "not a bare repository")
        self.refs = GitProfileRefs(git)
        self.objects = GitProfileObjects(git)


class _Git:
    """Bounded git calls on one profile's repository, their failures said as the profile's."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path

    def __call__(
        self,
        *args: str,
        allowed: tuple[int, ...] | None = (0,),
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> GitOutput:
        return _checked(self.name, self.path, args, allowed=allowed, stdin=stdin, env=env)


class GitProfileRefs:
    """:class:`aerix.app.ports.profiles.ProfileRefs`: a bare repository's branches."""

    def __init__(self, git: _Git) -> None:
        self._git = git

    def head(self, branch: str) -> str | None:
        # --verify without ^{commit}: a branch whose commit is missing still has a head, so the
        # read that follows reports the damage instead of the branch seeming new.
        output = self._git("rev-parse", "--verify", "-q", f"refs/heads/{branch}", allowed=(0, 1))
        if output.status != 0:
            return None
        return output.text.strip() or None

    def branches(self) -> dict[str, str]:
        return self._listed_heads("refs/heads/")

    def heads(self, branches: Sequence[str]) -> dict[str, str]:
        if not branches:
            return {}  # for-each-ref without a pattern would list every branch
        # A pattern also matches the refs below it (``model/a`` lists ``model/a/b``): keep the
        # branches asked for.
        listed = self._listed_heads(*(f"refs/heads/{branch}" for branch in branches))
        return {branch: listed[branch] for branch in branches if branch in listed}

    def _listed_heads(self, *patterns: str) -> dict[str, str]:
        listing = self._git("for-each-ref", "--format=%(objectname) %(refname)", *patterns).text
        result = {}
        for line in listing.splitlines():
            commit, _, ref = line.partition(" ")
            result[ref.removeprefix("refs/heads/")] = commit
        return result

    def move(self, branch: str, new: str | None, expected: str | None) -> bool:
        ref = f"refs/heads/{branch}"
        old = expected or ZERO_ID
        args = ("update-ref", "-d", ref, old) if new is None else ("update-ref", ref, new, old)
        output = self._git(*args, allowed=None)
        if output.status == 0:
            return True
        if "cannot lock ref" in output.stderr and any(words in output.stderr for words in _RACE_WORDS):
            return False
        if output.status == _GIT_FATAL:  # a commit it cannot read, as any other git call's fatal
            raise ProfileUnusable(self._git.name, self._git.path, f"git update-ref: {output.last_error()}")
        name = self._git.name
        raise ProfileGitFailed(f"profile {name}: git update-ref {branch} failed: {output.last_error()}")

    def log(self, branch: str, limit: int) -> list[ProfileCommit]:
        # Here, not at the top: ``aerix profile log`` is the one command that lists commits, and a
        # request loads none of the profile ports' module.
        from aerix.app.ports.profiles import ProfileCommit

        fmt = f"%H%n%cI%n%B{_LOG_SEPARATOR}"
        out = self._git("log", f"--format={fmt}", f"--max-count={limit}", f"refs/heads/{branch}", "--").text
        commits = []
        for chunk in out.split(_LOG_SEPARATOR):
            lines = chunk.strip("\n").split("\n", 2)
            if len(lines) >= 2:
                message = lines[2].strip() if len(lines) == 3 else ""
                commits.append(ProfileCommit(lines[0], datetime.fromisoformat(lines[1]), message))
        return commits


class GitProfileObjects:
    """:class:`aerix.app.ports.profiles.ProfileObjects`: a bare repository's commits and blobs."""

    def __init__(self, git: _Git) -> None:
        self._git = git
        # A commit's files never change: each is read once (a request's attach reads main's head
        # to seed it, then the session's commit, most often the same one), and from git only by
        # the first process that needs it (the next ones find it in the cache beside the repository).
        self._snapshots: dict[str, ProfileSnapshot] = {}
        self._cache = CommitFilesCache(git.path)

    def has_commit(self, commit: str) -> bool:
        output = self._git("cat-file", "-t", commit, allowed=(0, 1, _GIT_FATAL))
        return output.status == 0 and output.text.strip() == "commit"

    def read(self, commit: str) -> ProfileSnapshot:
        snapshot = self._snapshots.get(commit)
        if snapshot is None:
            files = self._cache.get(commit)
            if files is None:
                files = self._read(commit)
                self._cache.put(commit, files)
            snapshot = self._snapshots[commit] = ProfileSnapshot.of(commit, files)
        return snapshot

    def _read(self, commit: str) -> dict[str, bytes]:
        listing = self._git("ls-tree", "-r", "-z", "--full-tree", commit).text
        paths: dict[str, str] = {}
        for entry in listing.split("\0"):
            if not entry:
                continue
            meta, _, path = entry.partition("\t")
            _mode, kind, blob = meta.split(" ")
            if kind == "blob":
                paths[path] = blob
        blobs = self._blobs(list(dict.fromkeys(paths.values())))
        files: dict[str, bytes] = {}
        for path, blob in paths.items():
            data = blobs.get(blob)
            if data is None:
                raise ProfileUnusable(
                    self._git.name, self._git.path, f"{path} of commit {short_commit(commit)} is missing"
                )
            files[path] = data
        return files

    def read_blob(self, blob: str) -> bytes | None:
        return self._blobs([blob]).get(blob)

    def make_commit(self, parent: str | None, files: Mapping[str, bytes], message: str) -> str:
        """The blobs (``hash-object``), a tree through a scratch index (``update-index``,
        ``write-tree``), then ``commit-tree``: four git calls, each bounded."""
        with tempfile.TemporaryDirectory(prefix="aerix-profile-") as scratch_name:
            scratch = Path(scratch_name)
            ordered = sorted(files.items())
            for number, (_, data) in enumerate(ordered):
                (scratch / f"blob{number}").write_bytes(data)
            listing = "".join(f"{scratch / f'blob{number}'}\n" for number in range(len(ordered)))
            blob_ids = self._git(
                "hash-object", "-w", "--no-filters", "--stdin-paths", stdin=listing
            ).text.split()
            if len(blob_ids) != len(ordered):
                stored = f"stored {len(blob_ids)} of {len(ordered)} files"
                raise ProfileGitFailed(f"profile {self._git.name}: git hash-object {stored}")
            index = {"GIT_INDEX_FILE": str(scratch / "index")}
            entries = "".join(
                f"{_BLOB_MODE:o} {blob}\t{path}\0" for (path, _), blob in zip(ordered, blob_ids, strict=True)
            )
            self._git("update-index", "-z", "--index-info", stdin=entries, env=index)
            tree = self._git("write-tree", env=index).text.strip()
            (scratch / "message").write_text(message, encoding="utf-8")
            parents = ("-p", parent) if parent else ()
            command = ("commit-tree", tree, *parents, "-F", str(scratch / "message"))
            return self._git(*command, env=AUTHOR_ENV).text.strip()

    def _blobs(self, ids: list[str]) -> dict[str, bytes]:
        """Blobs by id through one ``git cat-file --batch``; a missing one is left out."""
        if not ids:
            return {}
        data = self._git("cat-file", "--batch", stdin="".join(f"{blob}\n" for blob in ids)).stdout
        found: dict[str, bytes] = {}
        position = 0
        for blob in ids:
            end = data.index(b"\n", position)
            header = data[position:end].decode().split(" ")
            position = end + 1
            if len(header) == 3 and header[1] == "blob":
                size = int(header[2])
                found[blob] = data[position : position + size]
                position += size + 1
        return found


def _checked(
    name: str,
    path: Path,
    args: tuple[str, ...],
    *,
    in_repository: bool = True,
    allowed: tuple[int, ...] | None = (0,),
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
) -> GitOutput:
    """One bounded git call on the repository at ``path`` (or, for ``init``, beside it); a
    status outside ``allowed`` (None: any) becomes a profile error."""
    repository = {"GIT_DIR": str(path)} if in_repository else {}
    try:
        output = call_git(
            path.parent,
            *args,
            stdin=stdin.encode("utf-8") if stdin is not None else None,
            env={**repository, **(env or {})},
            timeout=bounds.GIT_TIMEOUT_SECS,
        )
    except GitFailed as failed:
        raise ProfileGitFailed(f"profile {name}: {failed}") from failed
    if allowed is not None and output.status not in allowed:
        if output.status == _GIT_FATAL:
            raise ProfileUnusable(name, path, f"git {args[0]}: {output.last_error()}")
        raise ProfileGitFailed(f"profile {name}: git {args[0]} failed: {output.last_error()}")
    return output

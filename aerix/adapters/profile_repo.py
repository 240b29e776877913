"""Profiles as bare git repositories, through gitpython: ``$XDG_DATA_HOME/aerix/profiles/<name>.git``.

Bare, because branches move only by compare-and-swap of their refs and there is no working tree
to get out of step. Objects are written in-process (gitpython's object database: blobs, trees
and the commit, no subprocess that could hang); every git command — reading refs and objects,
``update-ref`` for the swap, ``log`` — runs through gitpython bounded by
:data:`~aerix.domain.bounds.GIT_TIMEOUT_SECS`. Nothing from gitpython leaves this module: a git
failure is :class:`~aerix.errors.ProfileGitFailed`, a broken repository
:class:`~aerix.errors.ProfileUnusable`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, cast

import git

from aerix.adapters.paths import data_home
from aerix.app.profile_ports import ProfileCommit
from aerix.domain.bounds import GIT_TIMEOUT_SECS
from aerix.domain.profile import MAIN_BRANCH, ProfileSnapshot
from aerix.errors import ProfileError, ProfileGitFailed, ProfileUnusable

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


def profiles_root() -> Path:
    """``$XDG_DATA_HOME/aerix/profiles``."""
    return data_home() / "profiles"


class GitProfiles:
    """:class:`aerix.app.profile_ports.ProfileStore` over bare repositories in one folder."""

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
            init = ["init", "--bare", "--quiet", f"--initial-branch={MAIN_BRANCH}", str(path)]
            try:
                _execute(name, path, init, git_dir=None)
            except ProfileError:
                # Another aerix may have been creating it at the same moment: use theirs if it is there.
                if not os.path.lexists(path):
                    raise
        return GitProfile(name, path)


class GitProfile:
    """:class:`aerix.app.profile_ports.ProfileRepository` for one bare repository."""

    def __init__(self, name: str, path: Path) -> None:
        self._name = name
        self._path = path
        _, out, _ = self._git("rev-parse", "--is-bare-repository")
        if out.strip() != "true":
            raise ProfileUnusable(name, path, "not a bare repository")

    @property
    def name(self) -> str:
        return self._name

    @property
    def path(self) -> Path:
        return self._path

    # ---- refs -----------------------------------------------------------------------------

    def head(self, branch: str) -> str | None:
        status, out, _ = self._git("rev-parse", "--verify", "-q", f"refs/heads/{branch}", allowed=(0, 1))
        if status != 0:
            return None
        return out.strip() or None

    def branches(self) -> dict[str, str]:
        _, out, _ = self._git("for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
        result = {}
        for line in out.splitlines():
            commit, _, ref = line.partition(" ")
            result[ref.removeprefix("refs/heads/")] = commit
        return result

    def move(self, branch: str, new: str | None, expected: str | None) -> bool:
        ref = f"refs/heads/{branch}"
        old = expected or ZERO_ID
        args = ["update-ref", "-d", ref, old] if new is None else ["update-ref", ref, new, old]
        status, _, err = self._git(*args, allowed=None)
        if status == 0:
            return True
        if "cannot lock ref" in err and any(words in err for words in _RACE_WORDS):
            return False
        raise ProfileGitFailed(f"profile {self._name}: git update-ref {branch} failed: {_last_line(err)}")

    # ---- objects --------------------------------------------------------------------------

    def has_commit(self, commit: str) -> bool:
        status, out, _ = self._git("cat-file", "-t", commit, allowed=(0, 1, 128))
        return status == 0 and out.strip() == "commit"

    def read(self, commit: str) -> ProfileSnapshot:
        _, listing, _ = self._git("ls-tree", "-r", "-z", "--full-tree", commit)
        paths: dict[str, str] = {}
        for entry in listing.split("\0"):
            if not entry:
                continue
            meta, _, path = entry.partition("\t")
            _mode, kind, blob = meta.split(" ")
            if kind == "blob":
                paths[path] = blob
        blobs = self._blobs(list(dict.fromkeys(paths.values())))
        files = {}
        for path, blob in paths.items():
            data = blobs.get(blob)
            if data is None:
                raise ProfileUnusable(self._name, self._path, f"{path} of commit {commit[:12]} is missing")
            files[path] = data
        return ProfileSnapshot.of(commit, files)

    def read_blob(self, blob: str) -> bytes | None:
        return self._blobs([blob]).get(blob)

    def make_commit(self, parent: str | None, files: Mapping[str, bytes], message: str) -> str:
        """Plumbing, each step one bounded git call: the blobs (``hash-object``), a tree through a
        scratch index (``update-index``, ``write-tree``), then ``commit-tree``."""
        with tempfile.TemporaryDirectory(prefix="aerix-profile-") as scratch_name:
            scratch = Path(scratch_name)
            ordered = sorted(files.items())
            for number, (_, data) in enumerate(ordered):
                (scratch / f"blob{number}").write_bytes(data)
            listing = "".join(f"{scratch / f'blob{number}'}\n" for number in range(len(ordered)))
            blob_ids = self._feed(["hash-object", "-w", "--no-filters", "--stdin-paths"], listing).split()
            if len(blob_ids) != len(ordered):
                raise ProfileGitFailed(
                    f"profile {self._name}: git hash-object stored {len(blob_ids)} of {len(ordered)} files"
                )
            index = {"GIT_INDEX_FILE": str(scratch / "index")}
            entries = "".join(
                f"{_BLOB_MODE:o} {blob}\t{path}\0" for (path, _), blob in zip(ordered, blob_ids, strict=True)
            )
            self._feed(["update-index", "-z", "--index-info"], entries, index)
            tree = self._feed(["write-tree"], "", index).strip()
            (scratch / "message").write_text(message, encoding="utf-8")
            parents = ["-p", parent] if parent else []
            command = ["commit-tree", tree, *parents, "-F", str(scratch / "message")]
            return self._feed(command, "", AUTHOR_ENV).strip()

    def log(self, branch: str, limit: int) -> list[ProfileCommit]:
        fmt = f"%H%n%cI%n%B{_LOG_SEPARATOR}"
        _, out, _ = self._git("log", f"--format={fmt}", f"--max-count={limit}", f"refs/heads/{branch}", "--")
        commits = []
        for chunk in out.split(_LOG_SEPARATOR):
            lines = chunk.strip("\n").split("\n", 2)
            if len(lines) >= 2:
                message = lines[2].strip() if len(lines) == 3 else ""
                commits.append(ProfileCommit(lines[0], datetime.fromisoformat(lines[1]), message))
        return commits

    # ---- helpers --------------------------------------------------------------------------

    def _blobs(self, ids: list[str]) -> dict[str, bytes]:
        """Blobs by id through one ``git cat-file --batch``; a missing one is left out."""
        if not ids:
            return {}
        with tempfile.TemporaryFile() as wanted:
            wanted.write("".join(f"{blob}\n" for blob in ids).encode())
            wanted.seek(0)
            data = _execute(
                self._name, self._path, ["cat-file", "--batch"], git_dir=self._path, stdin=wanted
            )[1]
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

    def _feed(self, args: list[str], stdin: str, env: Mapping[str, str] | None = None) -> str:
        """A git command given ``stdin``; its output as text."""
        with tempfile.TemporaryFile() as stream:
            stream.write(stdin.encode("utf-8"))
            stream.seek(0)
            return _execute(self._name, self._path, args, git_dir=self._path, stdin=stream, env=env)[
                1
            ].decode()

    def _git(self, *args: str, allowed: tuple[int, ...] | None = (0,)) -> tuple[int, str, str]:
        status, out, err = _execute(self._name, self._path, list(args), git_dir=self._path, allowed=allowed)
        return status, out.decode("utf-8", "replace"), err


def _execute(
    name: str,
    path: Path,
    args: list[str],
    *,
    git_dir: Path | None,
    stdin: IO[bytes] | None = None,
    allowed: tuple[int, ...] | None = (0,),
    env: Mapping[str, str] | None = None,
) -> tuple[int, bytes, str]:
    """One git command through gitpython, killed at the bound. ``allowed`` are the statuses the
    caller handles itself (None: every status); git's own ``fatal`` (128) otherwise means the
    repository or an object in it is broken."""
    command = ["git", *(["--git-dir", str(git_dir)] if git_dir is not None else []), *args]
    runner = git.Git(str(path.parent))
    try:
        result = runner.execute(
            command,
            istream=stdin,  # type: ignore[arg-type]  # gitpython asks for a BinaryIO
            with_extended_output=True,
            with_exceptions=False,
            kill_after_timeout=GIT_TIMEOUT_SECS,
            stdout_as_string=False,
            strip_newline_in_stdout=False,
            env=dict(env) if env else None,
        )
        # with_extended_output: (status, stdout, stderr); stdout_as_string=False keeps stdout bytes
        status, out, err = cast(tuple[int, bytes, "bytes | str"], result)
    except git.exc.GitCommandNotFound as exc:
        raise ProfileGitFailed(f"profile {name}: git could not run ({exc})") from exc
    except OSError as exc:
        raise ProfileUnusable(name, path, exc.strerror or str(exc)) from exc
    err_text = err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err)
    if "Timeout:" in err_text and "did not complete" in err_text:
        raise ProfileGitFailed(f"profile {name}: git {args[0]} took longer than {GIT_TIMEOUT_SECS:g} s")
    if allowed is not None and status not in allowed:
        problem = _last_line(err_text) or f"status {status}"
        if status == 128:
            raise ProfileUnusable(name, path, f"git {args[0]}: {problem}")
        raise ProfileGitFailed(f"profile {name}: git {args[0]} failed: {problem}")
    return status, out, err_text


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""

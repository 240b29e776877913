"""A profile commit's files, kept beside its repository once read, so a later aerix process reads
one small file instead of running ``ls-tree`` and ``cat-file`` again.

A commit id names its files for good (git's ids are hashes of the content), so an entry never goes
stale; it is written whole or not at all (a temporary file, then a rename), and one that does
not parse is read from git again. The entries live in the bare repository's own folder
(``<name>.git/aerix-read-cache/<commit>.json``): git leaves a folder it does not know alone, and
the cache goes where the repository goes. Caching is best effort: a folder that cannot be written
(a read-only profile) only means the next process reads from git.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

#: The folder, inside the bare repository, that holds the entries.
CACHE_FOLDER = "aerix-read-cache"
#: A full commit id (SHA-1 or SHA-256): only these are cached, never a name that can move.
_FULL_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


class CommitFilesCache:
    """Entries of one bare repository, keyed by commit id."""

    def __init__(self, repository: Path) -> None:
        self._folder = repository / CACHE_FOLDER

    def get(self, commit: str) -> dict[str, bytes] | None:
        """The commit's files (path → bytes) as cached, or None: not cached, or unreadable."""
        if not _FULL_ID.match(commit):
            return None
        try:
            entry = json.loads((self._folder / f"{commit}.json").read_bytes())
            if entry["commit"] != commit:
                return None
            return {str(path): base64.b64decode(data, validate=True) for path, data in entry["files"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, binascii.Error):
            return None

    def put(self, commit: str, files: Mapping[str, bytes]) -> None:
        """Keep the commit's files; silently not when the folder cannot be written."""
        if not _FULL_ID.match(commit):
            return
        entry = {
            "commit": commit,
            "files": {path: base64.b64encode(data).decode() for path, data in files.items()},
        }
        try:
            self._folder.mkdir(exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self._folder, prefix=f".{commit}.", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as stream:
                    json.dump(entry, stream)
                os.replace(temporary, self._folder / f"{commit}.json")
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            return

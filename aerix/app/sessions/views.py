"""The projections a session keeps on disk beside its log: its ``index.json`` entry and its
Claude Code transcript. Both are folds of the log: the entry folded live by the session's
writer, the transcript followed as it goes (``aerix.app.sessions.transcript``) or rebuilt
(``aerix.app.sessions.queries.rebuild``)."""

from __future__ import annotations

from typing import Any

from aerix.app.ports.sessions import SessionRef, SessionStorage
from aerix.projections.index import IndexEntry

LOG_SIZE_KEY = "log_bytes"
"""The index entry's note of how big the log was when it was folded: ``list`` reads a log again
when its size differs (it grew, or a line was lost or edited)."""


def stamped(entry: IndexEntry, log_size: int | None) -> dict[str, Any]:
    """The entry as ``index.json`` keeps it, with the size of the log it was folded from; None
    (a log with problems) leaves the size out, so the log is read, and its problems said, again."""
    data = entry.to_json()
    if log_size is not None:
        data[LOG_SIZE_KEY] = log_size
    return data


def store_index_entry(storage: SessionStorage, ref: SessionRef, entry: IndexEntry) -> None:
    """Write the session's entry, folded live by its writer, into the project's index."""
    size = storage.catalog.log_size(ref)
    if entry.id:
        with storage.views.index_locked(ref.project) as entries:
            entries[ref.id] = stamped(entry, size)

"""The projections a session keeps on disk beside its log: its ``index.json`` entry and its
Claude Code transcript. Both are folds of the log, rebuilt from it whenever asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aerix.app.ports import SessionRef, SessionStorage
from aerix.projections.index import IndexEntry
from aerix.projections.transcript import ClaudeTranscript, subagent_lines, transcript_lines

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


def write_transcript(storage: SessionStorage, ref: SessionRef) -> Path:
    transcript = ClaudeTranscript()
    transcript.feed(storage.log.read(ref))
    return storage.views.write_transcript(ref, transcript_lines(transcript), subagent_lines(transcript))


def update_index(storage: SessionStorage, ref: SessionRef) -> IndexEntry:
    """Bring the session's index entry up to its log, folding only the events it has not seen."""
    size = storage.log.log_size(ref)  # before the read: a line written meanwhile is read again later
    records = storage.log.read(ref)
    with storage.views.index_locked(ref.project) as entries:
        stored = entries.get(ref.id)
        entry = IndexEntry.from_json(stored) if stored else IndexEntry()
        if records and entry.position > records[-1].seq:
            entry = IndexEntry()  # the log was replaced by a shorter one: fold it again
        entry.feed(records)
        if entry.id:
            entries[ref.id] = stamped(entry, size)
    return entry

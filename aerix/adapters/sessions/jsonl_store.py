"""The session logs of one folder on disk: one JSON line per event, appended and read back.

``SessionLogFolder`` holds a folder (one project key's sessions): the events of session ``<id>``
are the lines of ``<id>.jsonl``. ``aerix.adapters.sessions.jsonl_lines`` turns the Session
aggregate's events into those lines and back (plain JSON, ``type`` and ``seq`` first, upcast on
read); ``aerix.adapters.sessions.jsonl_files`` holds the lock file and reads the log's tail.
The lines are written and read as they are, with no stored-event value between (see "How it is
stored" in docs/events.md for why).

Writing: the first write to a session takes an exclusive ``flock`` on ``<id>.jsonl.lock`` and
keeps it until ``release``/``close``; a second writer (another process, or another log folder in
this one) gets ``SessionBusy`` at once. Each batch is checked whole (``SessionBusy`` for a ``seq``
not above the last one: another writer's), then written with one ``write`` on an ``O_APPEND``
descriptor.

Durability: a batch put with ``sync=True`` (a commit point) is ``fsync``-ed before the put
returns; a new log's name is made durable in its folder when the file is created; the log is
synced again when its writer is released. A replaced log is written beside, synced and renamed.

Crashes: a last line without its newline is a write that never finished. Readers skip it; the
first process that can take the lock moves it to ``<id>.jsonl.torn`` and reports it in
``notices``. A complete line that is not an event is ``SessionLogCorrupt``: never guessed at.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aerix.adapters.gc_pause import gc_paused
from aerix.adapters.sessions.durable import make_folder, replace_durably, sync_folder, write_fully
from aerix.adapters.sessions.jsonl_files import (
    ends_with_newline,
    last_line,
    lock_holder,
    try_lock,
    write_holder,
)
from aerix.adapters.sessions.jsonl_lines import EncodedRecord, decode_checked, decode_records, seq_of
from aerix.domain import events as ev
from aerix.errors import SessionBusy

LOG_SUFFIX = ".jsonl"
LOCK_SUFFIX = ".jsonl.lock"
TORN_SUFFIX = ".jsonl.torn"


@dataclass
class _Writer:
    lock_fd: int
    log_fd: int | None  # None until a new log's first line is written
    last_seq: int
    has_lines: bool
    #: Nothing written since the log's last fsync: syncing it again has nothing to make durable.
    synced: bool = False


class SessionLogFolder:
    """The logs of one folder: session ``<id>`` is the lines of ``<folder>/<id>.jsonl``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.notices: list[str] = []
        self._writers: dict[str, _Writer] = {}

    # ---- paths -------------------------------------------------------------------------------

    def log_path(self, session_id: str) -> Path:
        return self.folder / f"{session_id}{LOG_SUFFIX}"

    def _sibling(self, session_id: str, suffix: str) -> Path:
        return self.folder / f"{session_id}{suffix}"

    # ---- writing -----------------------------------------------------------------------------

    def acquire(self, session_id: str) -> int:
        """Become this session's only writer; returns its last ``seq`` (0 for a new log)."""
        writer = self._writers.get(session_id)
        if writer is None:
            writer = self._open_writer(session_id)
            self._writers[session_id] = writer
        return writer.last_seq

    def _open_writer(self, session_id: str) -> _Writer:
        make_folder(self.folder)
        lock_fd = try_lock(self._sibling(session_id, LOCK_SUFFIX))
        if lock_fd is None:
            raise SessionBusy(session_id, lock_holder(self._sibling(session_id, LOCK_SUFFIX)))
        try:
            write_holder(lock_fd)
            path = self.log_path(session_id)
            self._set_aside_torn_tail(session_id)
            last = last_line(path)
            last_seq = seq_of(last, path, 0) if last else 0
            # A new log is made by its first write, so a session that cannot record its first
            # event leaves no empty log behind.
            log_fd = os.open(path, os.O_WRONLY | os.O_APPEND) if path.exists() else None
        except BaseException:
            os.close(lock_fd)
            raise
        return _Writer(lock_fd, log_fd, last_seq, last is not None)

    def sync(self, session_id: str) -> None:
        """Make what this process wrote to the session's log durable (a no-op when it is not
        writing it)."""
        writer = self._writers.get(session_id)
        if writer is not None:
            _fsync(writer)

    def release(self, session_id: str) -> None:
        """Stop writing this session: flush it to disk and drop the lock (and the lock's file,
        when the session never got a line)."""
        writer = self._writers.pop(session_id, None)
        if writer is None:
            return
        try:
            if writer.log_fd is not None:
                _fsync(writer)
                os.close(writer.log_fd)
            elif not self.log_path(session_id).exists():
                self._sibling(session_id, LOCK_SUFFIX).unlink(missing_ok=True)
        finally:
            os.close(writer.lock_fd)

    def close(self) -> None:
        for session_id in list(self._writers):
            self.release(session_id)

    def append(self, session_id: str, batch: Sequence[EncodedRecord], sync: bool = False) -> None:
        """Append a session's records, each its line; with ``sync`` (a commit point) they are
        synced to disk before this returns. A batch is checked whole before any of it is
        written: a ``seq`` not after the log's last is another writer's, ``SessionBusy``."""
        if not batch:
            return
        self.acquire(session_id)
        writer = self._writers[session_id]
        last, seen = writer.last_seq, writer.has_lines
        for encoded in batch:
            if seen and encoded.record.seq <= last:
                raise SessionBusy(session_id, "another writer appended to it")
            last, seen = encoded.record.seq, True
        writer.synced = False
        data = b"".join(encoded.line for encoded in batch)
        try:
            if writer.log_fd is not None:
                write_fully(writer.log_fd, data)
            else:
                writer.log_fd = self._create_log(session_id, data)
        except OSError as exc:
            if exc.filename is not None:
                raise
            # A write names no file (a full disk, a size limit): say which log it was.
            raise OSError(exc.errno, exc.strerror, str(self.log_path(session_id))) from exc
        writer.last_seq, writer.has_lines = last, True
        if sync:
            _fsync(writer)

    def _create_log(self, session_id: str, data: bytes) -> int:
        """Make a new log with its first lines; if they cannot be written whole (a full disk, a
        file size limit), the log goes again, so no empty or torn log is left for nothing."""
        path = self.log_path(session_id)
        log_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            write_fully(log_fd, data)
        except BaseException:
            os.close(log_fd)
            path.unlink(missing_ok=True)
            raise
        sync_folder(self.folder)  # the log's name survives a power loss with its lines
        return log_fd

    def replace(self, session_id: str, batch: Sequence[EncodedRecord]) -> None:
        """Swap a whole log for these records at once (re-import): written beside, then renamed."""
        seqs = [encoded.record.seq for encoded in batch]
        if any(later <= earlier for earlier, later in itertools.pairwise(seqs)):
            raise ValueError(f"session {session_id}: seqs are not increasing")
        self.acquire(session_id)
        writer = self._writers[session_id]
        path = self.log_path(session_id)
        replace_durably(path, b"".join(encoded.line for encoded in batch))
        if writer.log_fd is not None:
            os.close(writer.log_fd)
        writer.log_fd = os.open(path, os.O_WRONLY | os.O_APPEND, 0o600)
        writer.synced = False
        writer.last_seq, writer.has_lines = (seqs[-1], True) if seqs else (0, False)

    # ---- reading -----------------------------------------------------------------------------

    def _complete_lines(self, session_id: str) -> list[bytes]:
        """The raw complete lines of a log, after setting aside a torn tail (unless this process
        is writing the session, when an unfinished last line is its own write in progress)."""
        path = self.log_path(session_id)
        if session_id not in self._writers:
            self._set_aside_torn_tail(session_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        raw_lines = data.split(b"\n")
        raw_lines.pop()  # after the last newline: empty, or a write still in progress
        return raw_lines

    def read_records(self, session_id: str) -> list[ev.EventBase]:
        """Every event of a session, validated and upcast, in order."""
        path = self.log_path(session_id)
        raw_lines = self._complete_lines(session_id)
        with gc_paused():
            try:
                return decode_records(raw_lines)
            except ValueError:
                pass  # some line is bad: go again line by line to say which, and what is wrong
            return [decode_checked(raw, number, path) for number, raw in enumerate(raw_lines, 1)]

    # ---- crash repair ------------------------------------------------------------------------

    def _set_aside_torn_tail(self, session_id: str) -> None:
        path = self.log_path(session_id)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0 or ends_with_newline(path, size):
            return
        lock_path = self._sibling(session_id, LOCK_SUFFIX)
        held = self._writers.get(session_id)
        lock_fd = None if held else try_lock(lock_path)
        if not held and lock_fd is None:
            return  # a live writer: the tail is a write in progress, not a torn one
        try:
            self._move_tail(session_id, path)
        finally:
            if lock_fd is not None:
                os.close(lock_fd)

    def _move_tail(self, session_id: str, path: Path) -> None:
        with path.open("r+b") as log:
            data = log.read()
            cut = data.rfind(b"\n") + 1
            if cut == len(data):
                return
            tail = data[cut:]
            torn = self._sibling(session_id, TORN_SUFFIX)
            with torn.open("ab") as out:
                out.write(tail + b"\n")
                out.flush()
                os.fsync(out.fileno())  # the tail is kept before it leaves the log
            log.truncate(cut)
            log.flush()
            os.fsync(log.fileno())
        sync_folder(self.folder)
        line_number = data.count(b"\n", 0, cut) + 1
        self.notices.append(
            f"{path}:{line_number}: an unfinished last line ({len(tail)} bytes, a crash mid-write) "
            f"was set aside in {torn.name}"
        )


def _fsync(writer: _Writer) -> None:
    """Sync the log's writes to disk, unless every one of them is synced already (a commit
    point's sync, then the release: the second would wait on the disk for nothing)."""
    if writer.log_fd is not None and not writer.synced:
        os.fsync(writer.log_fd)
        writer.synced = True

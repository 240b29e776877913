"""Keeping ``<id>.claude.jsonl`` up to the session log while a request runs, so a hook that
reads ``transcript_path`` (a Stop hook grepping the last assistant line) finds what just
happened.

The transcript is a projection (``aerix.projections.transcript``); this follows it
incrementally. Events are handed over as they are recorded (``seen``) and folded only when a
hook is about to fire (``bring_up_to_date``), which appends the records made since the last
time. The first time in a process the log is folded once: when the file on disk already holds
exactly the records of the earlier events (a resumed session), only the new ones are appended;
otherwise (no file, or one written by another version) it is written whole, once.

The projection's records are taken to be append-only, per file: the main chain in
``<id>.claude.jsonl`` and each subagent's in ``<id>/subagents/agent-<agent>.jsonl``, each
followed the same way (a subagent's file is written whole at the first catch-up, since subagents
are not resumed, and appended to after).
"""

from __future__ import annotations

from pathlib import Path

from aerix.app.ports import SessionRef, SessionStorage
from aerix.domain import events as ev
from aerix.projections.transcript import ClaudeTranscript, record_line, subagent_lines


class TranscriptFollower:
    """The Claude Code transcript of one session, appended to as the session goes."""

    def __init__(self, storage: SessionStorage, ref: SessionRef) -> None:
        self._storage = storage
        self._ref = ref
        self._projection = ClaudeTranscript()
        self._pending: list[ev.EventBase] = []
        self._written: int | None = None  # records on disk; None until the first catch-up
        self._written_subagents: dict[str, int] = {}
        self._path: Path | None = None

    def seen(self, record: ev.EventBase) -> None:
        """A session event was just recorded."""
        if self._written is not None:
            self._pending.append(record)

    def bring_up_to_date(self) -> Path:
        """Append what the log gained since the last call; returns the transcript's path."""
        if self._written is None or self._path is None:
            return self._catch_up()
        self._projection.feed(self._pending)
        self._pending.clear()
        fresh = self._projection.records[self._written :]
        if fresh:
            self._path = self._storage.append_transcript(self._ref, [record_line(record) for record in fresh])
            self._written += len(fresh)
        for agent, records in self._projection.subagents.items():
            done = self._written_subagents.get(agent, 0)
            if len(records) > done:
                lines = [record_line(record) for record in records[done:]]
                self._storage.append_transcript(self._ref, lines, agent=agent)
                self._written_subagents[agent] = len(records)
        return self._path

    def subagent_path(self, agent: str) -> Path:
        return self._ref.subagent_transcript(agent)

    def _catch_up(self) -> Path:
        self._projection.feed(self._storage.read(self._ref))
        lines = [record_line(record) for record in self._projection.records]
        count, last = self._storage.transcript_tail(self._ref)
        if 0 < count <= len(lines) and lines[count - 1] == last:
            self._path = self._storage.append_transcript(self._ref, lines[count:])
        else:
            self._path = self._storage.write_transcript(self._ref, lines)
        self._written = len(lines)
        subagents = subagent_lines(self._projection)
        self._storage.write_subagent_transcripts(self._ref, subagents)
        self._written_subagents = {agent: len(agent_lines) for agent, agent_lines in subagents.items()}
        return self._path

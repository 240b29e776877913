"""Keeping ``<id>.claude.jsonl`` up to the session log while a request runs: written as the
session goes, so the tools that read Claude Code's transcripts see a live session, and a hook
that reads ``transcript_path`` (a Stop hook grepping the last assistant line) finds what just
happened.

The transcript is a projection (``aerix.projections.transcript``); this follows it
incrementally, as the session writer's ``claude transcript`` view. Attached, it folds the events
the log holds already (the writer's, so nothing is read back), then each one as it is recorded;
the records they made are appended at each commit point of the log (``take``) and when a hook is
about to fire (``bring_up_to_date``, which also syncs the files to disk). At the first catch-up,
when the file on disk already holds exactly the records of the earlier events (a resumed session),
only the new ones are appended; otherwise (no file, or one written by another version) it is
written whole, once. The result is the same bytes ``aerix sessions rebuild`` writes from the
whole log.

A transcript that cannot be written is one note (``problem``, said through ``say``), and the
session goes on without it: it is stopped, and ``aerix sessions rebuild`` writes it again.

The projection's records are taken to be append-only, per file: the main chain in
``<id>.claude.jsonl`` and each subagent's in ``<id>/subagents/agent-<agent>.jsonl``, each
followed the same way (a subagent's file is written whole at the first catch-up, since subagents
are not resumed, and appended to after).

With ``transcript.claude_projects`` on, the transcript (and, once there are subagents, their
folder) is linked into Claude Code's projects folder at the first catch-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from aerix.app.ports.sessions import SessionRef, SessionStorage
from aerix.domain import events as ev
from aerix.projections.transcript import ClaudeTranscript, record_line, subagent_lines


class TranscriptFollower:
    """The Claude Code transcript of one session, appended to as the session goes."""

    def __init__(self, storage: SessionStorage, ref: SessionRef, claude_projects: bool = False) -> None:
        self._storage = storage
        self._ref = ref
        self._claude_projects = claude_projects
        self._projection = ClaudeTranscript()
        self._written: int | None = None  # records on disk; None until the first catch-up
        self._written_subagents: dict[str, int] = {}
        self._unsynced: set[str | None] = set()  # files appended to without a sync (None: main)
        self._linked = self._linked_subagents = False
        #: Where a problem is said (the running request's observer); None: nowhere.
        self.say: Callable[[str], None] | None = None
        #: Why the transcript could not be written; None while it can.
        self.problem: str | None = None

    @property
    def position(self) -> int:
        return self._projection.position

    def feed(self, events: Iterable[ev.EventBase]) -> None:
        """Fold what the log holds already (attached to the session's writer)."""
        self._projection.feed(events)

    def take(self, record: ev.EventBase) -> None:
        """A session event was just recorded: folded, and at a commit point of the log what the
        log gained since the last one is appended."""
        self._projection.take(record)
        if self.problem is None and isinstance(record, ev.COMMIT_EVENTS):
            try:
                self._update(sync=False)
            except OSError as exc:
                self.problem = (
                    f"the Claude Code transcript could not be written ({exc}); the session log is kept"
                )
                if self.say is not None:
                    self.say(self.problem)

    def bring_up_to_date(self) -> Path:
        """Append what the log gained since the last call, synced to disk (a hook is about to
        read it); returns the transcript's path."""
        self._update(sync=True)
        return self._ref.transcript

    def subagent_path(self, agent: str) -> Path:
        """``agent``'s own file, named by the id Claude Code's files give it."""
        return self._ref.subagent_transcript(self._projection.claude_agent(agent))

    def _update(self, sync: bool) -> None:
        if self._written is None:
            self._catch_up()
        else:
            self._append(None, self._projection.records, self._written, sync)
            self._written = len(self._projection.records)
            for agent, records in self._projection.subagents.items():
                self._append(agent, records, self._written_subagents.get(agent, 0), sync)
                self._written_subagents[agent] = len(records)
        if sync:
            for unsynced in list(self._unsynced):
                self._storage.views.append_transcript(self._ref, [], agent=unsynced)
            self._unsynced.clear()
        self._link()

    def _append(self, agent: str | None, records: list[dict[str, object]], done: int, sync: bool) -> None:
        if len(records) <= done:
            return
        lines = [record_line(record) for record in records[done:]]
        self._storage.views.append_transcript(self._ref, lines, agent=agent, sync=sync)
        if sync:
            self._unsynced.discard(agent)
        else:
            self._unsynced.add(agent)

    def _catch_up(self) -> None:
        lines = [record_line(record) for record in self._projection.records]
        count, last = self._storage.views.transcript_tail(self._ref)
        if 0 < count <= len(lines) and lines[count - 1] == last:
            self._storage.views.append_transcript(self._ref, lines[count:])
        else:
            self._storage.views.write_transcript(self._ref, lines)
        self._written = len(lines)
        subagents = subagent_lines(self._projection)
        self._storage.views.write_subagent_transcripts(self._ref, subagents)
        self._written_subagents = {agent: len(agent_lines) for agent, agent_lines in subagents.items()}

    def _link(self) -> None:
        """Link into Claude Code's projects folder once, and again when subagents appear."""
        if not self._claude_projects or self._linked_subagents:
            return
        has_subagents = bool(self._projection.subagents)
        if not self._linked or has_subagents:
            self._storage.views.link_claude_project(self._ref, self._projection.cwd, has_subagents)
            self._linked, self._linked_subagents = True, has_subagents

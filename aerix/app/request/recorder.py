"""The request's recorder: the session writer, with the observer listening and the request's
own tallies kept as events go by."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aerix.app.ports import RequestObserver, RequestPiece, RequestUsage
from aerix.app.ports.sessions import E
from aerix.app.sessions.transcript import TranscriptFollower
from aerix.app.sessions.writer import SessionWriter
from aerix.domain import events as ev
from aerix.domain.segments import ROOT_AGENT


class RequestRecorder:
    """Records the request's events through its session writer (an ``EventRecorder``): every
    event goes on to the observer, and the recorder keeps the request's usage totals and the
    paths its write/edit calls touched, and the root's pieces with their outcomes. It is the
    request's spool too (the writer's)."""

    def __init__(self, writer: SessionWriter, observer: RequestObserver) -> None:
        self.writer = writer
        self.observer = observer
        self.touched: list[str] = []
        self.pieces: list[RequestPiece] = []
        self.prompt_tokens = self.completion_tokens = self.generations = self.reused_tokens = 0
        self.pool_ms = 0.0
        #: Keeps the Claude Code transcript up to the log, at each commit point and for hooks.
        self.transcript: TranscriptFollower | None = None

    def record(self, event_cls: type[E], **fields: Any) -> E:
        record = self.writer.record(event_cls, **fields)
        if self.transcript is not None:
            self.transcript.seen(record)
            if isinstance(record, ev.COMMIT_EVENTS):
                self._follow(self.transcript)
        if isinstance(record, ev.Message):
            self._message(record)
        elif isinstance(record, ev.AgentEnd):
            self.touched.extend(record.files_touched)
        self.observer.event(record)
        return record

    def sync(self) -> None:
        self.writer.sync()

    def _follow(self, transcript: TranscriptFollower) -> None:
        """The transcript is a projection: one that cannot be written is one note, and the
        request goes on without it (``aerix sessions rebuild`` writes it again)."""
        try:
            transcript.follow()
        except OSError as exc:
            self.transcript = None
            note = f"the Claude Code transcript could not be written ({exc}); the session log is kept"
            self.observer.note(note)

    def write_spool(self, name: str, text: str) -> Path:
        return self.writer.write_spool(name, text)

    def _message(self, record: ev.Message) -> None:
        if record.role == "tool" and record.tool == "agent" and record.agent == ROOT_AGENT:
            self.pieces.append(RequestPiece(f"{record.agent}.{record.call}", record.outcome))
        if record.usage is not None:
            self.prompt_tokens += record.usage.prompt_tokens
            self.completion_tokens += record.usage.completion_tokens
            self.generations += 1
            self.reused_tokens += record.usage.recomputed_from or 0
            self.pool_ms += (record.usage.prefill_ms or 0.0) + (record.usage.decode_ms or 0.0)
        for call in record.calls:
            path = call.input.get("path")
            if call.tool in ("write", "edit") and isinstance(path, str):
                self.touched.append(path)

    @property
    def usage(self) -> RequestUsage:
        return RequestUsage(
            self.prompt_tokens, self.completion_tokens, self.generations, self.reused_tokens, self.pool_ms
        )

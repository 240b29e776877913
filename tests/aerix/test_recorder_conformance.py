"""eventsourcing's own recorder conformance cases, run against the JSONL session recorder.

Only the aggregate-recorder case applies: a session log is one aggregate's sequence, and aerix
keeps no application-wide notification log (the index is a projection of the logs instead).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from uuid import uuid4

import eventsourcing.tests.persistence as conformance

from aerix.adapters.sessions.jsonl_store import SessionLogRecorder


class TestSessionLogRecorderConformance(conformance.AggregateRecorderTestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.recorders: list[SessionLogRecorder] = []

    def tearDown(self) -> None:
        for recorder in self.recorders:
            recorder.close()
        self._tmp.cleanup()

    def new_originator_id(self) -> str:
        return str(uuid4())

    def create_recorder(self) -> SessionLogRecorder:
        recorder = SessionLogRecorder(Path(self._tmp.name))
        self.recorders.append(recorder)
        return recorder

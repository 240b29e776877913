"""The hooks port: running a hook event's handlers (``aerix.adapters.tools.hook_runner.SubprocessHooks``)
and keeping the Claude Code transcript they read up to date
(``aerix.app.sessions.transcript.TranscriptFollower``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from aerix.domain.hook_answers import HandlerRun
from aerix.domain.hook_contract import SelectedHandler


class HookRunner(Protocol):
    """Runs hook handlers."""

    async def run(self, handlers: Sequence[SelectedHandler], payload: Mapping[str, Any]) -> list[HandlerRun]:
        """Run every handler on ``payload`` at once; their runs in the handlers' order."""
        ...


class HookRunnerFactory(Protocol):
    """Makes the runner of one project's hooks: handlers run in ``project_dir``, which they are
    told as ``CLAUDE_PROJECT_DIR``."""

    def __call__(self, project_dir: Path) -> HookRunner: ...


class TranscriptSync(Protocol):
    """Brings the Claude Code transcript (and its subagents' files) up to the log."""

    def bring_up_to_date(self) -> Path: ...

    def subagent_path(self, agent: str) -> Path:
        """Where ``agent``'s own transcript is (``<session>/subagents/agent-<id>.jsonl``)."""
        ...

"""The tools port: the file, shell and search tools an agent calls, their background jobs, and
the session's spool for whole outputs. ``aerix.adapters.tools.LocalTools`` implements them."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from aerix.app.ports.project import SkillSource


class SpoolWriter(Protocol):
    """The session's spool: where whole tool outputs go when a result is cut."""

    def write_spool(self, name: str, text: str) -> Path:
        """Store ``text`` under ``name`` (such as ``a1.c3``) and return the file's absolute path,
        which the model will ``read``."""
        ...


class JobOutcomeLike(Protocol):
    """How a background job's process ended (``adapters.tools.process.ProcessOutcome``)."""

    returncode: int | None
    timed_out: bool
    stopped: bool


class JobReportLike(Protocol):
    """A finished background job (``adapters.tools.bash.JobReport``)."""

    @property
    def job_id(self) -> str: ...

    @property
    def command(self) -> str: ...

    @property
    def outcome(self) -> JobOutcomeLike: ...

    @property
    def text(self) -> str: ...


class JobsPort(Protocol):
    """One agent's background jobs (``adapters.tools.bash.JobTable``)."""

    def running_ids(self) -> list[str]: ...

    def take_finished(self) -> Sequence[JobReportLike]: ...

    def wait_for_one(self, cancel: threading.Event | None = None) -> Sequence[JobReportLike]: ...

    def kill_all(self) -> Sequence[JobReportLike]: ...


class ToolRunner(Protocol):
    """Runs the tools that need no loop state (read, write, edit, bash, glob, grep, repo_map,
    skill, the refused web tools); ``adapters.tools.LocalTools`` is one. ``run`` never raises
    for a tool failure: it returns ``error: …``. It is called on a worker thread."""

    @property
    def jobs(self) -> JobsPort: ...

    def run(
        self,
        tool: str,
        tool_input: Mapping[str, Any],
        cancel: threading.Event | None = None,
        unsearchable: Callable[[str], bool] | None = None,
    ) -> str:
        """``unsearchable``: files (as a search shows them) grep must not look in."""
        ...

    def end_turn(self) -> None:
        """The results of the calls run since the last one are in the agent's context now."""
        ...

    def mark_seen(self, paths: Iterable[str]) -> None:
        """These files' text is in the agent's context already (attached to its task)."""
        ...


class ToolRunnerFactory(Protocol):
    """Makes one agent run's tools: on its working directory, with its own job table."""

    def __call__(self, cwd: Path, skills: SkillSource | None) -> ToolRunner: ...


class ResultTarget(Protocol):
    """The loop's side of appending one result to an agent's context
    (``aerix.app.agent.tool_output.append_result`` works against it)."""

    def room_tokens(self) -> Awaitable[int]:
        """Tokens the result may take now (see ``ContextBudget.result_room``)."""
        ...

    def try_append(self, text: str) -> Awaitable[bool]:
        """Append the result segment; False when the pool's count shows it does not fit (the
        segment is then removed again)."""
        ...

    def compact(self) -> Awaitable[None]:
        """Run one compaction pass."""
        ...

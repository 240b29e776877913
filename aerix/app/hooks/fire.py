"""Firing a hook event: pick its handlers, bring the transcript up to date, run them through
the runner port, record a ``hook`` event for each run, and hand back their combined verdict.

What each answer then does (a deny becomes the result ``refused: <reason>``, a Stop block
continues the agent …) is the firing layer's: the request, the agent loop, the dispatcher and
compaction call :meth:`Hooks.fire` and act on the :class:`~aerix.domain.hook_answers.HookVerdict`.
One answer acts the same everywhere: ``continue: false`` raises :class:`HookStopped`, which ends
the agent that fired the event (``killed``, the hook's ``stopReason`` as the reason). An event
nobody configured costs nothing: no transcript write, no process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from aerix.app.ports.hooks import HookRunner, TranscriptSync
from aerix.app.ports.sessions import EventRecorder
from aerix.app.ports.tools import SpoolWriter
from aerix.domain import bounds
from aerix.domain import events as ev
from aerix.domain.claude_format import HEADLESS_PERMISSION_MODE
from aerix.domain.hook_answers import (
    NO_VERDICT,
    HandlerRun,
    HookAnswer,
    HookVerdict,
    combine,
    parse_answer,
    preview,
)
from aerix.domain.hook_contract import HookSource, SelectedHandler, select_handlers
from aerix.domain.hook_payloads import common_fields


class HookStopped(Exception):
    """A handler answered ``continue: false``: the agent that fired the event ends ``killed``."""

    def __init__(self, event: str, stop_reason: str | None) -> None:
        self.event = event
        self.reason = stop_reason or f"a {event} hook answered continue: false"
        super().__init__(self.reason)


@dataclass(frozen=True)
class HookSession:
    """The common fields' values for one request."""

    session_id: str
    cwd: str
    permission_mode: str = HEADLESS_PERMISSION_MODE


class Hooks:
    """The hooks of one request."""

    def __init__(
        self,
        sources: Sequence[HookSource],
        runner: HookRunner,
        events: EventRecorder,
        session: HookSession,
        *,
        transcript: TranscriptSync | None = None,
        spool: SpoolWriter | None = None,
        notify: Callable[[str], None] | None = None,
        disabled: bool = False,
    ) -> None:
        self.sources = () if disabled else tuple(sources)
        self.runner = runner
        self.events = events
        self.session = session
        self.transcript = transcript
        self.spool = spool
        self.notify = notify or (lambda line: None)
        self._spilled = 0

    def handlers(self, event: str, match: Sequence[str] = ()) -> list[SelectedHandler]:
        return select_handlers(self.sources, event, match)

    def wants(self, events: Sequence[str], match: Sequence[str] = ()) -> bool:
        """Whether any of ``events`` has a handler for ``match`` (so its input is worth building)."""
        return any(self.handlers(event, match) for event in events)

    async def fire(
        self,
        event: str,
        fields: Mapping[str, Any],
        *,
        match: Sequence[str] = (),
        agent: str | None = None,
        agent_type: str | None = None,
        call: str | None = None,
    ) -> HookVerdict:
        """Run ``event``'s handlers for ``match`` (what its matchers compare) with ``fields``
        added to the common ones. ``agent``: the agent that fired it; ``agent_type`` is sent
        with it when that agent is a subagent. Raises :class:`HookStopped` on ``continue: false``."""
        handlers = self.handlers(event, match)
        if not handlers:
            return NO_VERDICT
        transcript = self._transcript_path()
        self.events.sync()  # a handler may act on what the log says happened: it is on disk first
        runs = await self._run_all(handlers, fields, transcript, agent, agent_type)
        answers = []
        for handler, run in zip(handlers, runs, strict=True):
            answer = self._cut(parse_answer(event, run), agent)
            self._record(event, handler, run, answer, agent, call)
            answers.append(answer)
        verdict = combine(answers)
        self._tell(event, verdict)
        if verdict.stop:
            raise HookStopped(event, verdict.stop_reason)
        return verdict

    def _subagent_path(self, agent: str, transcript: str) -> str:
        """The subagent's own transcript, once the main one could be brought up to date."""
        if self.transcript is None or not transcript:
            return ""
        return str(self.transcript.subagent_path(agent))

    def _transcript_path(self) -> str:
        """The transcript, brought up to date; a store that cannot be written is one note, and
        the handlers still run (with the path as it stands)."""
        if self.transcript is None:
            return ""
        try:
            return str(self.transcript.bring_up_to_date())
        except OSError as exc:
            self.notify(f"hooks: the transcript could not be brought up to date ({exc})")
            return ""

    async def _run_all(
        self,
        handlers: list[SelectedHandler],
        fields: Mapping[str, Any],
        transcript: str,
        agent: str | None,
        agent_type: str | None,
    ) -> list[HandlerRun]:
        """One runner call per configured event name (``PostCompact`` handlers are told that
        name), all at once; the runs in the handlers' order."""
        by_name: dict[str, list[int]] = {}
        for index, handler in enumerate(handlers):
            by_name.setdefault(handler.event_name, []).append(index)
        runs: list[HandlerRun] = [HandlerRun(None, start_error="did not run")] * len(handlers)
        subagent = agent if agent is not None and "." in agent else None

        async def run_named(name: str, indexes: list[int]) -> None:
            payload = common_fields(
                name,
                session_id=self.session.session_id,
                transcript_path=transcript,
                cwd=self.session.cwd,
                permission_mode=self.session.permission_mode,
                agent_id=subagent,
                agent_type=agent_type,
            )
            payload.update(fields)
            if name == "SubagentStop" and subagent is not None:
                payload.setdefault("agent_transcript_path", self._subagent_path(subagent, transcript))
            results = await self.runner.run([handlers[index] for index in indexes], payload)
            for index, result in zip(indexes, results, strict=True):
                runs[index] = result

        async with anyio.create_task_group() as group:
            for name, indexes in by_name.items():
                group.start_soon(run_named, name, indexes)
        return runs

    def _cut(self, answer: HookAnswer, agent: str | None) -> HookAnswer:
        """Every answer string over HOOK_OUTPUT_MAX_CHARS becomes a preview; the whole goes to
        the session's spool."""
        changes: dict[str, Any] = {}
        for name in ("reason", "context", "stop_reason", "system_message", "error"):
            text = getattr(answer, name)
            if isinstance(text, str) and len(text) > bounds.HOOK_OUTPUT_MAX_CHARS:
                changes[name] = preview(text, bounds.HOOK_OUTPUT_MAX_CHARS, self._spill(text, agent))
        return dataclasses.replace(answer, **changes) if changes else answer

    def _spill(self, text: str, agent: str | None) -> str | None:
        if self.spool is None:
            return None
        self._spilled += 1
        return str(self.spool.write_spool(f"{agent or 'session'}.hook{self._spilled}", text))

    def _record(
        self,
        event: str,
        handler: SelectedHandler,
        run: HandlerRun,
        answer: HookAnswer,
        agent: str | None,
        call: str | None,
    ) -> None:
        output = "\n".join(part for part in (run.stdout.strip(), run.stderr.strip()) if part)
        self.events.record(
            ev.Hook,
            agent=agent,
            event=handler.event_name,
            matcher=handler.matcher or None,
            command=handler.command,
            outcome=answer.outcome,
            decision=answer.decision,
            reason=answer.reason or answer.error or (answer.stop_reason if answer.stop else None),
            output=_cut_for_log(output) or None,
            exit=run.exit_code,
            duration_ms=run.duration_ms,
            call=call,
            plugin=handler.plugin,
            stop=answer.stop or None,
        )

    def _tell(self, event: str, verdict: HookVerdict) -> None:
        """What Claude Code shows the user: system messages and non-blocking errors."""
        for message in verdict.system_messages:
            self.notify(f"hook {event}: {message}")
        for error in verdict.errors:
            self.notify(f"hook {event}: {error}")


def _cut_for_log(text: str) -> str:
    limit = bounds.HOOK_LOG_OUTPUT_CHARS
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[{len(text) - limit} more characters not kept]"


def no_hooks(events: EventRecorder) -> Hooks:
    """Hooks that never fire (a request without any, a test of something else)."""
    return Hooks((), _NoRunner(), events, HookSession("", ""))


class _NoRunner:
    async def run(self, handlers: Sequence[SelectedHandler], payload: Mapping[str, Any]) -> list[HandlerRun]:
        return []

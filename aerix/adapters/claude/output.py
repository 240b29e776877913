"""The headless output formats, shaped the way Claude Code's ``-p`` users (and the Claude Agent
SDK's parser) expect.

- ``text``: the final answer on stdout, then the diff of what the request changed (with
  ``untracked: <path>`` lines) in git's colours when stdout is a terminal, or ``no files
  changed`` when it changed none (as git says "nothing to commit"). Notes, the one-line banner
  and the outcome line go to stderr.
- ``json``: one ``result`` object at the end (``result_object``): Claude Code's keys first
  (``type``, ``subtype``, ``is_error``, ``duration_ms``, ``duration_api_ms``, ``num_turns``,
  ``result``, ``stop_reason``, ``session_id``, ``total_cost_usd``, ``usage``, ``modelUsage``,
  ``permission_denials``, ``uuid``, and ``errors`` on an error subtype), then aerix's own
  ``outcome``, ``reason``, ``route``, ``exit_code``, ``model``, ``request``, ``resumed``,
  ``generations``, ``files_changed``, ``pieces``, ``outcome_line`` and ``diff``. A request that
  did not end ``done`` also prints its outcome line on stderr, in every format.
- ``stream-json``: one JSON object a line as things happen, and the same ``result`` object
  last. The lines are the stream-json projection's (``aerix.projections.claude_stream``, which
  the session's writer feeds); this adapter only writes them.

The outcome line says what happened, so a ``done`` that did nothing shows as such:
``done · route answer · 1 turn · no pieces · no files changed``, or
``failed: <reason> · route edit · 4 turns · pieces a1.c2 done, a1.c5 failed · 2 files changed``.

Exit codes: 0 done, 1 failed (or an error before the request could run), 2 budget, 3 killed,
130 cancelled (Ctrl-C), 141 the output was closed (a broken pipe); a refused command line is
the CLI's 64.

A closed pipe (``aerix -p … --output-format stream-json | head -2``) is quiet: the first write
that meets it points that stream at /dev/null and raises ``OutputClosed``, which stops the
request (recorded as ``cancelled``, exit 141); nothing more is printed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, TextIO

from aerix.adapters.claude.output_formats import OutputFormat
from aerix.adapters.closed_pipe import discard_output
from aerix.app.ports.request import LiveProjection, RequestResult, StreamView
from aerix.app.ports.stream import StreamOutput
from aerix.domain import events as ev
from aerix.domain.bounds import EXIT_CANCELLED
from aerix.domain.claude_format import ModelTally, claude_usage, claude_usage_totals
from aerix.domain.diffs import RequestDiff
from aerix.errors import OutputClosed

if TYPE_CHECKING:
    # Named in annotations only: a headless request does not load the screen's ports.
    from aerix.app.ports.screen import StatusView

#: Claude Code's result subtypes, by aerix outcome.
RESULT_SUBTYPES: Final = {
    "done": "success",
    "budget": "error_max_turns",
    "failed": "error_during_execution",
    "killed": "error_during_execution",
    "cancelled": "error_during_execution",
}
#: The end of a request's text output when it changed no file (git's "nothing to commit").
NO_FILES_CHANGED: Final = "no files changed"


class StatusLine(Protocol):
    """The one-line status a terminal's stderr shows while the request runs
    (``aerix.adapters.terminal.stderr_status.StderrStatus``)."""

    @property
    def figures(self) -> StatusView: ...

    def event(self, record: ev.EventBase) -> None: ...

    def token(self, agent: str, text: str) -> None: ...

    def around_note(self, write: Callable[[], None]) -> None: ...

    def clear(self) -> None: ...


class HeadlessOutput(StreamOutput):
    """Prints a request as one of the formats; ``finish`` prints its end. ``stream`` is the
    stream-json projection (every format's result reads it; only stream-json prints its lines)."""

    def __init__(
        self,
        fmt: OutputFormat,
        out: TextIO,
        err: TextIO,
        stream: StreamView,
        status: StatusLine | None = None,
    ) -> None:
        self.format = fmt
        self.out = out
        self.err = err
        self.status = status
        self.listing: dict[str, Any] = {}
        #: A write met a closed pipe: nothing more is printed.
        self.closed = False
        self.stream = stream

    @property
    def session(self) -> str:
        return self.stream.summary().session

    def failed(self, line: str, exit_code: int, session_id: str | None) -> None:
        if self.format != "text":  # in text, the note on stderr is the whole of it
            self.json_line(error_object(line, exit_code, session_id))

    def projections(self) -> Mapping[str, LiveProjection]:
        if self.status is None:
            return {"claude stream": self.stream}
        return {"claude stream": self.stream, "status figures": self.status.figures}

    def startup(self, listing: dict[str, Any]) -> None:
        self.listing = listing

    def note(self, line: str) -> None:
        self._err(f"aerix: {line}")

    def _err(self, line: str) -> None:
        def write() -> None:
            self._write(self.err, line + "\n")

        if self.status is None:
            write()
        else:
            self.status.around_note(write)

    def token(self, agent: str, text: str) -> None:
        if self.status is not None:
            self.status.token(agent, text)

    def event(self, record: ev.EventBase) -> None:
        if isinstance(record, ev.SessionStart):
            self._err(banner(record))
        if self.status is not None:
            self.status.event(record)
        if self.format == "stream-json":
            for line in self.stream.lines(record, self.listing):
                self.json_line(line)

    def finish(self, result: RequestResult) -> int:
        """Print the end of the request; returns the exit code."""
        if self.status is not None:
            self.status.clear()
            self.status = None
        for line in result.notes:
            self.note(line)
        if self.format == "text" or result.outcome != "done":
            self.note(f"{outcome_line(result)} (session {result.session_id})")
        if self.format == "text":
            self._text(result)
        else:
            summary = self.stream.summary()
            self.json_line(result_object(result, summary.models or None, summary.denials))
        return result.exit_code

    def interrupted(self) -> None:
        """The result line of a request an ``interrupt`` control request stopped (it ends as
        ``cancelled``, with no result of its own)."""
        summary = self.stream.summary()
        if not summary.session:
            self.json_line(error_object("interrupted before the session started", EXIT_CANCELLED))
            return
        end = summary.end
        result = RequestResult(
            session_id=summary.session,
            outcome="cancelled",
            exit_code=end.exit_code if end else EXIT_CANCELLED,
            result="",
            reason="interrupted (an interrupt control request)",
            route=summary.route,
            turns=summary.root_turns,
            usage=summary.usage,
            diff=RequestDiff(),
            duration_ms=(end.duration_ms or 0.0) if end else 0.0,
            model=summary.model,
        )
        self.json_line(result_object(result, summary.models or None, summary.denials))

    def _text(self, result: RequestResult) -> None:
        text = result.result.rstrip("\n") + "\n" if result.result else ""
        diff = result.diff.render()
        self._write(self.out, text)
        if text:
            self._write(self.out, "\n")
        if diff:
            self._diff(result.diff, diff)
        else:
            self._write(self.out, NO_FILES_CHANGED + "\n")

    def _diff(self, diff: RequestDiff, plain: str) -> None:
        """On a terminal in git's colours (rich follows NO_COLOR and TERM=dumb); anywhere else
        the plain text, byte for byte what ``git diff`` prints, so it can be piped to ``git apply``.
        rich is loaded here, only for a request that changed something: it is a tenth of a
        second of a warm request's start."""
        from rich.console import Console

        from aerix.adapters.terminal.diff_view import diff_text

        console = Console(file=self.out, highlight=False, soft_wrap=True, emoji=False, markup=False)
        coloured = diff_text(diff)
        if console.is_terminal and console.color_system is not None and coloured is not None:
            console.print(coloured)  # a terminal: no reader that goes away mid-line
        else:
            self._write(self.out, plain)

    def json_line(self, value: dict[str, Any]) -> None:
        self._write(self.out, json.dumps(value, ensure_ascii=False) + "\n")

    def _write(self, stream: TextIO, text: str) -> None:
        if self.closed or not text:
            return
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError as exc:
            self.closed = True
            discard_output(stream)
            raise OutputClosed() from exc


def banner(start: ev.SessionStart) -> str:
    """The headless run's one-line banner (stderr)."""
    state = f"resumed, request {start.request}" if start.resumed else "new"
    window = f", {start.window} tokens" if start.window else ""
    if start.threads:
        window += f", {start.threads} thread{'' if start.threads == 1 else 's'}"
    return f"aerix {start.aerix_version} · {start.model}{window} · session {start.session} ({state})"


def changed_phrase(diff: RequestDiff) -> str:
    """``no files changed``, ``1 file changed``, ``3 files changed`` (outside git: touched)."""
    if diff.files == 0:
        return NO_FILES_CHANGED
    verb = "changed" if diff.in_git else "touched"
    return f"{diff.files} file {verb}" if diff.files == 1 else f"{diff.files} files {verb}"


def outcome_line(result: RequestResult) -> str:
    """What the request did, in one line: the outcome (and why, unless done), the route, the
    root's turns, its pieces with their outcomes, and how many files changed."""
    head = (
        result.outcome
        if result.outcome == "done"
        else f"{result.outcome}: {result.reason or 'no reason given'}"
    )
    turns = f"{result.turns} turn" if result.turns == 1 else f"{result.turns} turns"
    pieces = "no pieces"
    if result.pieces:
        pieces = "pieces " + ", ".join(f"{piece.id} {piece.outcome or 'not run'}" for piece in result.pieces)
    route = f"route {result.route}" if result.route else "not routed"
    return " · ".join([head, route, turns, pieces, changed_phrase(result.diff)])


def result_object(
    result: RequestResult,
    models: dict[str, ModelTally] | None = None,
    denials: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``json`` format's object, and ``stream-json``'s last line. ``models`` is each model's
    usage as the stream saw it (``modelUsage``); without it the request's totals go under its
    main model. ``denials``: the calls a permission rule refused (``permission_denials``, each
    ``tool_name``, ``tool_use_id`` and ``tool_input``, as Claude Code lists them)."""
    diff = result.diff
    usage = result.usage
    subtype = RESULT_SUBTYPES.get(result.outcome, "error_during_execution")
    if models is None:
        tally = ModelTally(usage=claude_usage_totals(usage), window=None)
        models = {result.model or "": tally}
    value: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": result.outcome != "done",
        "duration_ms": round(result.duration_ms),
        "duration_api_ms": round(usage.pool_ms),
        "num_turns": result.turns,
    }
    if subtype == "success":
        value["result"] = result.result
    value |= {
        "stop_reason": "end_turn" if result.outcome == "done" else None,
        "session_id": result.session_id,
        "total_cost_usd": 0,
        "usage": claude_usage_totals(usage),
        "modelUsage": {model: tally.as_json() for model, tally in models.items()},
        "permission_denials": list(denials or ()),
        "uuid": str(uuid.uuid4()),
    }
    if subtype != "success":
        value["errors"] = [f"{result.outcome}: {result.reason or 'no reason given'}"]
    value |= {
        "outcome": result.outcome,
        "reason": result.reason,
        "route": result.route,
        "exit_code": result.exit_code,
        "model": result.model,
        "request": result.request,
        "resumed": result.resumed,
        "generations": usage.generations,
        "files_changed": diff.files,
        "pieces": [{"id": piece.id, "outcome": piece.outcome} for piece in result.pieces],
        "outcome_line": outcome_line(result),
        "diff": {
            "text": diff.text,
            "added": diff.added,
            "removed": diff.removed,
            "files": diff.files,
            "numstat": [{"path": s.path, "added": s.added, "removed": s.removed} for s in diff.stats],
            "untracked": list(diff.untracked),
            "touched": list(diff.touched),
            "in_git": diff.in_git,
        },
    }
    return value


def error_object(message: str, exit_code: int, session_id: str | None = None) -> dict[str, Any]:
    """The ``json`` result of a request that could not run (no session was made, or the session
    could not be read or written): an error result the SDK parses, with the error's line."""
    return {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "duration_ms": 0,
        "duration_api_ms": 0,
        "num_turns": 0,
        "stop_reason": None,
        "session_id": session_id,
        "total_cost_usd": 0,
        "usage": claude_usage(None),
        "modelUsage": {},
        "permission_denials": [],
        "uuid": str(uuid.uuid4()),
        "errors": [message],
        "outcome": "failed",
        "reason": message,
        "exit_code": exit_code,
    }

"""What a hook handler answered, read as Claude Code reads it, and the answers of one event's
handlers combined.

One run (:class:`HandlerRun`: exit code, stdout, stderr, whether it timed out) becomes a
:class:`HookAnswer`:

- exit 0: success. stdout whose first non-blank character is ``{`` is the JSON answer; any
  other stdout is plain text, which becomes context for ``SessionStart`` and
  ``UserPromptSubmit`` and is ignored elsewhere.
- exit 2: blocks, with stderr as the reason. JSON on stdout is still read (``continue``,
  ``systemMessage``), but the block stands even when the JSON says ``allow``.
- any other exit: a non-blocking error shown to the user, unless stdout is valid JSON, which
  then decides as on exit 0. A timed-out handler decides nothing and blocks nothing.

The JSON answer: the universal fields ``continue`` (false ends the agent that fired the event),
``stopReason``, ``suppressOutput``, ``systemMessage``; each event's decision fields (PreToolUse's
``hookSpecificOutput.permissionDecision`` with ``permissionDecisionReason``, ``updatedInput``
and ``additionalContext``, the deprecated top-level ``approve``/``block``; the top-level
``decision: "block"`` and ``reason`` of the other events that can block; ``additionalContext``).

:func:`combine` merges one event's answers as Claude Code does: ``deny`` > ``defer`` > ``ask`` >
``allow``; any ``block`` blocks; contexts, reasons and messages are concatenated in handler order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from aerix.domain.hook_contract import configured_names

Outcome = Literal["ok", "blocked", "error", "timeout"]

#: Exit code of a blocking answer.
BLOCKING_EXIT: Final = 2
#: Events whose plain stdout (exit 0, not JSON) becomes context.
PLAIN_CONTEXT_EVENTS: Final = frozenset({"SessionStart", "UserPromptSubmit"})
#: Events a block (exit 2 or ``decision: "block"``) acts on; elsewhere a block is only shown.
BLOCKABLE_EVENTS: Final = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "Stop",
        "SubagentStop",
        "PreCompact",
    }
)
#: Events whose ``continue``/``systemMessage`` Claude Code discards (side effects only).
NO_CONTROL_EVENTS: Final = frozenset({"SessionEnd", "ContextCompact"})
#: PreToolUse decisions, strongest first.
PERMISSION_ORDER: Final = ("deny", "defer", "ask", "allow")
_DEPRECATED_PERMISSION: Final = {"approve": "allow", "block": "deny"}


@dataclass(frozen=True)
class HandlerRun:
    """How one handler process ended, as the runner saw it."""

    exit_code: int | None  # None: it did not end by itself (timed out, or could not start)
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_ms: float = 0.0
    start_error: str | None = None  # why it could not be started


@dataclass(frozen=True)
class HookAnswer:
    """One handler's answer."""

    outcome: Outcome
    decision: str | None = None  # allow, deny, ask, defer (PreToolUse); block (the others)
    reason: str | None = None
    context: str | None = None  # additionalContext, or plain stdout where that is context
    updated_input: dict[str, Any] | None = None
    stop: bool = False  # continue: false
    stop_reason: str | None = None
    system_message: str | None = None
    suppress_output: bool = False
    error: str | None = None  # the non-blocking error line shown to the user


def parse_answer(event: str, run: HandlerRun) -> HookAnswer:
    """Read one run the way Claude Code reads it (see the module's docstring)."""
    if run.start_error is not None:
        return HookAnswer("error", error=f"could not start: {run.start_error}")
    if run.timed_out:
        return HookAnswer("timeout", error="timed out; its answer is ignored")
    data, json_problem = _json_answer(run.stdout)
    if run.exit_code == BLOCKING_EXIT:
        reason = run.stderr.strip() or "blocked by a hook (exit 2, no stderr)"
        blocked = HookAnswer("blocked", decision=_block_word(event), reason=reason)
        return _with_universal(blocked, data, event) if data is not None else blocked
    if run.exit_code != 0:
        if data is not None:
            return _from_json(event, data)
        message = run.stderr.strip() or "No stderr output"
        return HookAnswer("error", error=f"Failed with non-blocking status code {run.exit_code}: {message}")
    if json_problem is not None:
        return HookAnswer("error", error=json_problem)
    if data is not None:
        return _from_json(event, data)
    text = run.stdout.strip()
    if text and event in PLAIN_CONTEXT_EVENTS:
        return HookAnswer("ok", context=text)
    return HookAnswer("ok")


def _block_word(event: str) -> str:
    return "deny" if event == "PreToolUse" else "block"


def _json_answer(stdout: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the JSON object on stdout, or None; a problem when stdout looks like JSON and is not)."""
    text = stdout.strip()
    if not text.startswith("{"):
        return None, None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"stdout starts with '{{' but is not valid JSON ({exc.msg} at line {exc.lineno})"
    if not isinstance(data, dict):
        return None, "stdout is not a JSON object"
    return data, None


def _from_json(event: str, data: Mapping[str, Any]) -> HookAnswer:
    specific, problem = _specific_output(event, data)
    if problem is not None:
        return HookAnswer("error", error=problem)
    answer = _decision(event, data, specific)
    return _with_universal(answer, data, event)


def _specific_output(event: str, data: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    specific = data.get("hookSpecificOutput")
    if specific is None:
        return {}, None
    if not isinstance(specific, dict):
        return {}, "hookSpecificOutput must be a JSON object"
    named = specific.get("hookEventName")
    if named is not None and named not in configured_names(event):
        return {}, f"hookSpecificOutput.hookEventName is {named!r}, not {event!r}"
    return specific, None


def _decision(event: str, data: Mapping[str, Any], specific: Mapping[str, Any]) -> HookAnswer:
    context = _text(specific.get("additionalContext"))
    if event == "PreToolUse":
        decision = _text(specific.get("permissionDecision"))
        reason = _text(specific.get("permissionDecisionReason"))
        if decision is None and isinstance(data.get("decision"), str):
            decision = _DEPRECATED_PERMISSION.get(data["decision"])
            reason = reason or _text(data.get("reason"))
        if decision not in PERMISSION_ORDER:
            decision = None
        updated = specific.get("updatedInput")
        updated_input = dict(updated) if isinstance(updated, dict) else None
        outcome: Outcome = "blocked" if decision == "deny" else "ok"
        return HookAnswer(outcome, decision, reason, context, updated_input)
    blocks = data.get("decision") == "block" and event in BLOCKABLE_EVENTS
    reason = _text(data.get("reason"))
    if blocks:
        return HookAnswer("blocked", "block", reason or "blocked by a hook", context)
    return HookAnswer("ok", reason=reason, context=context)


def _with_universal(answer: HookAnswer, data: Mapping[str, Any], event: str) -> HookAnswer:
    if event in NO_CONTROL_EVENTS:
        return answer
    stop = data.get("continue") is False
    return replace(
        answer,
        stop=stop,
        stop_reason=_text(data.get("stopReason")) if stop else None,
        system_message=_text(data.get("systemMessage")),
        suppress_output=data.get("suppressOutput") is True,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True)
class HookVerdict:
    """What one event's handlers decided together."""

    decision: str | None = None
    reasons: tuple[str, ...] = ()  # of the answers that gave the deciding decision
    context: str = ""  # every additionalContext (and plain-text context), in handler order
    updated_input: dict[str, Any] | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_messages: tuple[str, ...] = ()
    errors: tuple[str, ...] = field(default=())

    @property
    def blocked(self) -> bool:
        return self.decision in ("deny", "block")

    @property
    def reason(self) -> str:
        return "\n".join(self.reasons)


NO_VERDICT: Final = HookVerdict()


def combine(answers: Sequence[HookAnswer]) -> HookVerdict:
    """One verdict from an event's answers, in handler order (see the module's docstring)."""
    if not answers:
        return NO_VERDICT
    decision = _strongest(answer.decision for answer in answers)
    deciding = [answer for answer in answers if decision is not None and answer.decision == decision]
    updated = next((a.updated_input for a in deciding if a.updated_input is not None), None)
    if updated is None and decision in (None, "allow", "ask"):
        updated = next((a.updated_input for a in answers if a.updated_input is not None), None)
    stoppers = [answer for answer in answers if answer.stop]
    return HookVerdict(
        decision=decision,
        reasons=tuple(answer.reason for answer in deciding if answer.reason),
        context="\n\n".join(answer.context for answer in answers if answer.context),
        updated_input=updated,
        stop=bool(stoppers),
        stop_reason=next((answer.stop_reason for answer in stoppers if answer.stop_reason), None),
        system_messages=tuple(answer.system_message for answer in answers if answer.system_message),
        errors=tuple(answer.error for answer in answers if answer.error),
    )


def _strongest(decisions: Any) -> str | None:
    given = {decision for decision in decisions if decision}
    if "block" in given:
        return "block"
    return next((decision for decision in PERMISSION_ORDER if decision in given), None)


def preview(text: str, limit: int, spilled_to: str | None) -> str:
    """``text`` cut to ``limit`` characters with a line saying how much more there was and where
    the whole is (Claude Code cuts hook output the same way); shorter text is returned as is."""
    if len(text) <= limit:
        return text
    where = f"; the whole output is in {spilled_to}" if spilled_to else ""
    return f"{text[:limit]}\n[hook output cut: {len(text) - limit} more characters{where}]"

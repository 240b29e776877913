"""Delegation's pure rules: the ids of a piece's agents, their depth, and the result an ``agent``
call gives back (spec, "Delegation").

A call ``c3`` of agent ``a1`` runs the piece ``a1.c3``: its implementer is ``a1.c3`` and its
retries ``a1.c3.r1``, ``a1.c3.r2`` …; the verifier of attempt N is ``a1.c3.vN``. An agent's
depth is the number of agent calls between it and the root (``a1`` is 0, ``a1.c3`` and its
verifiers 1, ``a1.c3.c2`` 2).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, cast, get_args

from aerix.domain.events import AgentOutcome

#: A definition's ``model`` values that are Claude Code's own names, not models a pool can
#: load: an agent definition written for Claude Code runs on the caller's member.
CALLER_MODEL_ALIASES: Final = frozenset({"inherit", "sonnet", "opus", "haiku", "default"})
#: Why a verifier's ``pass`` given before it made a single tool call counts as ``fail``: a
#: verdict on work it never looked at is no check (a small model repeats the example verdict).
UNINSPECTED_PASS: Final = "the verifier passed the work without inspecting anything (no tool calls)"
#: ``SubagentStart``'s agent type of an implementer without a definition, and of a verifier.
IMPLEMENTER_TYPE: Final = "implementer"
VERIFIER_TYPE: Final = "verifier"

_CALL_PART = re.compile(r"c\d+")


def piece_id(caller: str, call_id: str) -> str:
    """The piece an agent call runs: ``a1`` and ``c3`` give ``a1.c3``."""
    return f"{caller}.{call_id}"


def implementer_id(piece: str, attempt: int) -> str:
    """Attempt 1 is the piece's own id; attempt N+1 is its retry ``.rN``."""
    return piece if attempt == 1 else f"{piece}.r{attempt - 1}"


def verifier_id(piece: str, attempt: int) -> str:
    return f"{piece}.v{attempt}"


def agent_depth(agent_id: str) -> int:
    """How many agent calls lie between the root and this agent."""
    return sum(1 for part in agent_id.split(".")[1:] if _CALL_PART.fullmatch(part))


def attempts_phrase(attempts: int) -> str:
    return f"{attempts} attempt" if attempts == 1 else f"{attempts} attempts"


def verification_failed(attempts: int, reason: str) -> str:
    """The summary of a piece whose verifier never passed it."""
    return f"verification failed after {attempts_phrase(attempts)}: {reason}"


def relative_path(path: str, cwd: str) -> str:
    """``path`` (as a tool call gave it: relative, absolute, with ``..``) relative to ``cwd``."""
    absolute = os.path.normpath(os.path.join(cwd, path))
    return os.path.relpath(absolute, cwd)


def unique_relative_paths(paths: Iterable[str], cwd: str) -> list[str]:
    """Each path once, relative to ``cwd``, in the order first touched."""
    seen: dict[str, None] = {}
    for path in paths:
        seen.setdefault(relative_path(path, cwd), None)
    return list(seen)


@dataclass(frozen=True)
class PieceResult:
    """What an ``agent`` call gives back to its caller."""

    summary: str
    files_touched: tuple[str, ...]
    checks_run: tuple[str, ...]
    outcome: AgentOutcome

    def text(self) -> str:
        """The result as the caller reads it: ``{summary, files_touched, checks_run, outcome}``."""
        return json.dumps(
            {
                "summary": self.summary,
                "files_touched": list(self.files_touched),
                "checks_run": list(self.checks_run),
                "outcome": self.outcome,
            },
            ensure_ascii=False,
        )


def piece_outcome(result: str) -> AgentOutcome | None:
    """The outcome an ``agent`` call's result names (``PieceResult.text``, perhaps followed by a
    hook's feedback); None when the call ran no piece (an ``error:`` or ``refused:`` result)."""
    if not result.startswith("{"):
        return None
    try:
        value, _end = json.JSONDecoder().raw_decode(result)
    except json.JSONDecodeError:
        return None
    outcome = value.get("outcome") if isinstance(value, dict) else None
    return cast(AgentOutcome, outcome) if outcome in get_args(AgentOutcome) else None


def no_piece_done(outcomes: Sequence[AgentOutcome], files_changed: Sequence[str]) -> str | None:
    """Why an agent's final does not end it ``done``: it ran pieces, none of them ended ``done``,
    and it changed no file itself, so the work it handed out was not done; None otherwise. On the
    calc.py fix the 1.5B's root answered "fixed" after its only piece had failed."""
    if not outcomes or "done" in outcomes or files_changed:
        return None
    return f"no piece it ran was done ({len(outcomes)} ran: {', '.join(outcomes)})"

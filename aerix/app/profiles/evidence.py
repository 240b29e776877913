"""The evidence a reflection reads for one prompt, as lines of text, newest first.

Each artifact reads the kinds of evidence ``ARTIFACT_EVIDENCE`` names (the tuning corpus,
``aerix.projections.corpus``). One item is one line, cut to ``EVIDENCE_LINE_MAX_CHARS``; at most
``EVIDENCE_MAX_LINES`` lines, the newest sessions first. An artifact with no line is not asked
about.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aerix.domain.bounds import EVIDENCE_LINE_MAX_CHARS, EVIDENCE_MAX_LINES
from aerix.projections.corpus import (
    ARTIFACT_EVIDENCE,
    CompactionEvidence,
    Failure,
    ParseRetry,
    PieceEvidence,
    RouteEvidence,
    SessionEvidence,
    VerdictEvidence,
)

_QUOTE_CHARS = 80


def evidence_lines(corpus: Sequence[SessionEvidence], artifact: str) -> list[str]:
    """The lines for ``artifact`` (``routing.md``) from ``corpus`` (newest session first)."""
    kinds = ARTIFACT_EVIDENCE.get(artifact, ())
    lines: list[str] = []
    for session in corpus:
        for kind in kinds:
            render = _RENDER[kind]
            for item in reversed(getattr(session, kind)):
                lines.append(_cut(render(item)))
    return lines[:EVIDENCE_MAX_LINES]


def _quote(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return f'"{flat[:_QUOTE_CHARS]}…"' if len(flat) > _QUOTE_CHARS else f'"{flat}"'


def _cut(line: str) -> str:
    flat = " ".join(line.split())
    return flat if len(flat) <= EVIDENCE_LINE_MAX_CHARS else flat[: EVIDENCE_LINE_MAX_CHARS - 1] + "…"


def _route(item: RouteEvidence) -> str:
    scores = ", ".join(
        f"{name} {value:.2f}" for name, value in sorted(item.scores.items(), key=lambda kv: -kv[1])
    )
    scored = f" ({scores})" if scores else ""
    ended = f"; the request ended {item.outcome}" if item.outcome else "; the request did not end"
    return f"request {_quote(item.prompt)} was routed {item.choice}{scored}{ended}"


def _parse_retry(item: ParseRetry) -> str:
    return f"{item.agent} turn {item.turn}, attempt {item.attempt + 1} was asked again: {item.error}"


def _failure(item: Failure) -> str:
    reason = f": {item.reason}" if item.reason else ""
    who = item.agent if item.agent else "the request"
    return f"{who} ended {item.outcome}{reason}"


def _piece(item: PieceEvidence) -> str:
    check = f", check {_quote(item.check)}" if item.check else ""
    verdicts = f", verdicts {' '.join(item.verdicts)}" if item.verdicts else ""
    attempts = f"{item.attempts} attempt{'s' if item.attempts != 1 else ''}"
    reason = f" ({item.reason})" if item.reason and item.result != "passed" else ""
    return (
        f"piece {item.agent}: brief {_quote(item.brief)}{check}; {attempts}{verdicts}; {item.result}{reason}"
    )


def _verdict(item: VerdictEvidence) -> str:
    reason = f": {item.reason}" if item.reason else ""
    later = f"; then {item.later}" if item.later else ""
    return f"{item.agent} said {item.verdict or 'no verdict'}{reason} (brief {_quote(item.brief)}){later}"


def _compaction(item: CompactionEvidence) -> str:
    after = f"{item.retries_after} re-asked turn{'s' if item.retries_after != 1 else ''}"
    ended = f", and {item.agent} ended {item.agent_outcome}" if item.agent_outcome else ""
    return (
        f"{item.agent} compacted {item.segments} segments ({item.trigger}, {item.tokens_before} → "
        f"{item.tokens_after} tokens); then {after}{ended}"
    )


_RENDER: dict[str, Callable[[Any], str]] = {
    "routes": _route,
    "parse_retries": _parse_retry,
    "failures": _failure,
    "pieces": _piece,
    "verdicts": _verdict,
    "compactions": _compaction,
}

"""Which hook handlers an event runs: the events aerix fires, what their matchers compare, and
Claude Code's matcher rules.

Handlers come from several places (the settings files' merged ``hooks``, each enabled plugin's
``hooks/hooks.json``); a :class:`HookSource` is one of them, with the plugin's folder when it is
a plugin's. :func:`select_handlers` turns an event and the value its matchers compare (a tool's
names, a session's source, a compaction's trigger …) into the handlers to run, each once.

Matchers follow Claude Code: ``""``, ``"*"`` or none matches everything; a matcher made only of
letters, digits, ``_``, ``-``, spaces, ``,`` and ``|`` is a list of exact names (``Edit|Write``);
anything else is a regular expression searched anywhere in the value (``Notebook.*``,
``mcp__memory__.*``). A tool event's value is every name of the tool, so ``Bash`` and ``bash``
both match aerix's ``bash``, and ``Task`` still matches ``agent``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from aerix.domain.settings import HookHandler, HooksSettings

#: Events whose matchers compare the tool's names.
TOOL_EVENTS: Final = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})

#: Every event aerix fires, and what its matchers compare (None: the event has no matcher, so
#: every group of it runs, as Claude Code ignores a matcher on such an event).
EVENT_MATCHES: Final[Mapping[str, str | None]] = {
    "SessionStart": "source",  # startup, resume
    "UserPromptSubmit": None,
    "RouteDecision": "choice",  # answer, edit, investigate, plan
    "PreToolUse": "tool",
    "PostToolUse": "tool",
    "PostToolUseFailure": "tool",
    "Stop": None,
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
    "AgentSpawn": "agent_type",
    "Verify": "agent_type",
    "PreCompact": "trigger",  # auto, manual
    "ContextCompact": "trigger",
    "SessionEnd": "reason",
}

#: Events also configured under another name: Claude Code calls aerix's ContextCompact
#: ``PostCompact``. A handler is told the name it was configured under.
EVENT_ALIASES: Final[Mapping[str, tuple[str, ...]]] = {"ContextCompact": ("ContextCompact", "PostCompact")}

#: The handler types aerix runs; Claude Code's others (``http``, ``prompt``, ``agent``,
#: ``mcp_tool``) are listed at startup as not run.
RUNNABLE_TYPES: Final = frozenset({"command"})

_EXACT_MATCHER = re.compile(r"[A-Za-z0-9_\- ,|]*")


@dataclass(frozen=True)
class HookSource:
    """One place hooks come from: the merged settings, or one enabled plugin."""

    hooks: HooksSettings
    plugin: str | None = None
    plugin_root: str | None = None  # the plugin's folder: CLAUDE_PLUGIN_ROOT for its handlers


@dataclass(frozen=True)
class SelectedHandler:
    """A handler to run for one firing."""

    event_name: str  # the name it was configured under (``PostCompact`` for ContextCompact)
    matcher: str
    command: str
    args: tuple[str, ...] | None  # Claude Code's exec form: run without a shell
    timeout_secs: float
    plugin: str | None = None
    plugin_root: str | None = None


def configured_names(event: str) -> tuple[str, ...]:
    """The settings keys an event's handlers may be configured under."""
    return EVENT_ALIASES.get(event, (event,))


def matcher_matches(matcher: str | None, values: Sequence[str]) -> bool:
    """Whether a matcher selects any of ``values`` (Claude Code's rules, above)."""
    if matcher is None or matcher.strip() in ("", "*"):
        return True
    if _EXACT_MATCHER.fullmatch(matcher):
        names = {part.strip() for part in re.split(r"[|,]", matcher) if part.strip()}
        return any(value in names for value in values)
    pattern = _compiled(matcher)
    return pattern is not None and any(pattern.search(value) for value in values)


@lru_cache(maxsize=256)
def _compiled(matcher: str) -> re.Pattern[str] | None:
    try:
        return re.compile(matcher)
    except re.error:
        return None  # a matcher that is not a valid pattern matches nothing


def select_handlers(
    sources: Iterable[HookSource], event: str, values: Sequence[str]
) -> list[SelectedHandler]:
    """The command handlers ``event`` runs for ``values`` (what its matchers compare), in the
    order they are configured; a handler configured twice (same command, same plugin) runs once."""
    matched = EVENT_MATCHES.get(event)
    selected: list[SelectedHandler] = []
    seen: set[tuple[str, tuple[str, ...] | None, str | None]] = set()
    for source in sources:
        for name in configured_names(event):
            for group in source.hooks.get(name, ()):
                if matched is not None and not matcher_matches(group.matcher, values):
                    continue
                for handler in group.hooks:
                    call = _selected(handler, name, group.matcher, event, source)
                    if call is None:
                        continue
                    key = (call.command, call.args, call.plugin_root)
                    if key not in seen:
                        seen.add(key)
                        selected.append(call)
    return selected


def _selected(
    handler: HookHandler, name: str, matcher: str, event: str, source: HookSource
) -> SelectedHandler | None:
    if handler.type not in RUNNABLE_TYPES or not handler.command:
        return None
    raw_args = (handler.model_extra or {}).get("args")
    args = tuple(str(arg) for arg in raw_args) if isinstance(raw_args, list) else None
    return SelectedHandler(
        event_name=name,
        matcher=matcher,
        command=handler.command,
        args=args,
        timeout_secs=handler.timeout_for(event),
        plugin=source.plugin,
        plugin_root=source.plugin_root,
    )


def unrunnable_handlers(hooks: HooksSettings) -> dict[str, int]:
    """Handler types aerix does not run (``http``, ``prompt`` …), with how many of each."""
    counts: dict[str, int] = {}
    for groups in hooks.values():
        for group in groups:
            for handler in group.hooks:
                if handler.type not in RUNNABLE_TYPES:
                    counts[handler.type] = counts.get(handler.type, 0) + 1
    return counts


def unknown_events(hooks: HooksSettings) -> list[str]:
    """Configured events aerix never fires (``Notification``, ``PermissionRequest`` …)."""
    fired = {name for event in EVENT_MATCHES for name in configured_names(event)}
    return [event for event, groups in hooks.items() if groups and event not in fired]

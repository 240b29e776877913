"""The same call as the previous turn, asked again (aerix's own bound, not the spec's).

A small model that is stuck asks for the same call turn after turn (``read README.md``, forty
times). Running it again tells it nothing new, so a call with the same tool and input as one of
the agent's previous turn is not run when nothing could have changed its result since (a
``write`` or ``edit`` that failed is run again: see ``RepeatWatch.failed``): no call
that changes things (``write``, ``edit``, ``bash``, ``agent``, a plan write, a context edit) ran
after it in that turn or before it in this one, and no background job ran or reported meanwhile.
Its result says so (``unchanged since call c1 …``) and asks for something else. A turn that asks
for nothing but such calls IDENTICAL_TURNS turns in a row ends the agent ``failed``.

A call that keeps failing is caught even when the model alternates it with another (A, B, A, B,
A: no turn repeats the one before it): the same call that returned an error result
REPEATED_FAILURES times in the agent's run ends it ``failed`` (``FailureWatch``). A success of
that call clears its count: a read of a missing file, then a write of it, then the same read.
A change that keeps being made is caught the same way: the same ``write`` or ``edit`` that
succeeded REPEATED_CHANGES times in the run ends it ``failed`` (``ChangeWatch``): making it
again changes nothing, or only undoes what came between. qwen2.5-coder-1.5b wrote two files in
turn, each write changing what the other's read saw, for the rest of its time; asked to fix
calc.py it sent one turn (read, write, run) three times, each write the content already there.

Within one turn, a call with the same tool and input as an earlier call of that turn runs once
(``twins_in_turn``; not ``bash``); its result names the call that ran.

Both are pure: the loop tells ``RepeatWatch`` each calls turn (and when the world moved under
it) and it answers which calls are unchanged repeats, and whether the agent should end; it tells
``FailureWatch`` and ``ChangeWatch`` each call's result, and they answer whether the agent should
end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Literal

from aerix.domain import bounds
from aerix.domain.tools import FILE_CHANGING_TOOLS
from aerix.domain.turns import ToolCall

#: Tools that only look: running one changes nothing another call could see.
LOOKING_TOOLS = frozenset({"read", "glob", "grep", "repo_map", "skill", "web_fetch", "web_search"})
#: The ops of ``plan`` and ``context`` that only look.
_LOOKING_OPS = {"plan": "read", "context": "status"}


def changes_things(call: ToolCall) -> bool:
    """Whether running ``call`` may change what another call sees (files, processes, the plan,
    the context)."""
    if call.tool in LOOKING_TOOLS:
        return False
    looking_op = _LOOKING_OPS.get(call.tool)
    return looking_op is None or call.input.get("op") != looking_op


def call_key(call: ToolCall) -> str:
    """The tool and its input, the same for the same call whatever its id or key order."""
    return call.tool + " " + json.dumps(call.input, sort_keys=True, ensure_ascii=False)


def twins_in_turn(calls: Sequence[ToolCall]) -> dict[str, str]:
    """Call id -> the id of the first call of the same turn with the same tool and input, for
    each call after it: that call runs once. ``bash`` is left out: a command may be meant to run
    twice (one that appends to a file). qwen2.5-coder-1.5b, asked to fix calc.py, sent three
    identical ``agent`` calls in one turn, and three pieces made the same fix side by side."""
    first: dict[str, str] = {}
    twins: dict[str, str] = {}
    for call in calls:
        if call.tool == "bash":
            continue
        key = call_key(call)
        if key in first:
            twins[call.id] = first[key]
        else:
            first[key] = call.id
    return twins


def twin_result(tool: str, first: str) -> str:
    """The result of a call that repeats an earlier call of its own turn."""
    return (
        f"the same {tool} with the same input as call {first} in this turn, so it ran once: see that result"
    )


#: What the next turn is held to after a turn of nothing but unchanged repeats: only a final,
#: (a change agent that repeated reads or commands) only a ``write``, an ``edit`` or a final, or
#: (a planner of a change that has handed out no piece yet) only an ``agent`` call or a final.
NextTurn = Literal["final", "change", "delegate"]


def unchanged_result(tool: str, since: str, *, next_turn: NextTurn | None = None) -> str:
    """The result of a call that was not run again; ``next_turn``: what the next turn may only
    be. Held to a final, it says neither "do something else" nor "unchanged": qwen2.5-coder-1.5b,
    held to a final after the first, claimed a file it had never created; after "unchanged since
    c1 … give your final answer now", it answered that greet.py "does not contain" what it had
    just described; after this text, it answered what greet.py does."""
    if next_turn == "final":
        return (
            f"Already answered by call {since} above. Use that result to answer the request: "
            "give your final answer now."
        )
    if next_turn == "change":
        return (
            f"Already done by call {since} above: its result is there. Use it to make the change "
            "now: write the whole new file, or edit it."
        )
    if next_turn == "delegate":
        return (
            f"Already done by call {since} above: its result is there. Now hand the change to an "
            "agent: an agent call whose brief says the whole change and which files it is in."
        )
    return (
        f"unchanged since call {since}: the same {tool} with the same input ran in your previous turn "
        "and nothing has changed since, so it was not run again (its result is above). "
        "Do something else: a different call, or your final answer."
    )


def next_turn_after(
    calls: Sequence[ToolCall],
    unchanged: Mapping[str, str],
    *,
    makes_changes: bool,
    can_change: bool,
    changed: Collection[str] = (),
    delegates: bool = False,
) -> NextTurn | None:
    """What a turn made only of unchanged repeats holds the next turn to. An agent that answers
    has what it asked for: a final. One that makes a change and repeated a ``write`` or ``edit``
    has written what it means to: a final; so has one that changed files in earlier turns
    (``changed``: their paths) and now only looks again at them or runs commands. One that
    repeated only reads or commands before any change, or read a file it has not changed yet,
    has what it needs to make it (``can_change``: it may write or edit): a change or a final.

    Measured on qwen2.5-coder-1.5b: it answered "What does greet.py do?" right in the thought of
    its second turn, then called the same ``read`` until the repeat rule ended it ``failed``;
    held to a final, it answered. On Exercism it read the stub it had just read (reverse-string,
    ocr-numbers, swift-scheduling) or ran the same command (pig-latin) until the rule ended it.
    Held to a change after it had already made its change, it wrote the file again: asked to fix
    add() in calc.py, a retry fixed it with one edit, read calc.py twice, and then rewrote it
    whole, without the mul() beside add(), until the repeated-change rule ended it.

    A planner of a change that has run no piece yet (``delegates``) and repeated its plan or its
    look at the tree has handed nothing out: an ``agent`` call or a final. Held to a final, the
    1.5B's planner of bob saved its plan twice and answered "Sure.", every file as it was."""
    if not calls or len(unchanged) < len(calls):
        return None
    if delegates:
        return "delegate"
    if not makes_changes or any(call.tool in FILE_CHANGING_TOOLS for call in calls):
        return "final"
    changed_paths = {os.path.normpath(path) for path in changed}
    if changed_paths and not any(_reads_other_than(call, changed_paths) for call in calls):
        return "final"
    return "change" if can_change else None


def _reads_other_than(call: ToolCall, changed_paths: AbstractSet[str]) -> bool:
    """Whether ``call`` reads a file that is not one of the ``changed_paths`` (normalized)."""
    path = call.input.get("path")
    return call.tool == "read" and isinstance(path, str) and os.path.normpath(path) not in changed_paths


@dataclass(frozen=True)
class RepeatCheck:
    """What to do with one calls turn."""

    #: Call id -> the id of the earlier call it repeats (the one that ran).
    unchanged: Mapping[str, str]
    #: Set when this is the IDENTICAL_TURNS-th turn in a row of nothing but repeats.
    failure: str | None = None


@dataclass
class RepeatWatch:
    """The agent's previous calls turn, as far as repeats go."""

    limit: int = bounds.IDENTICAL_TURNS
    #: Each call of the previous turn that nothing changed after: its key -> the call that ran.
    _still: dict[str, str] = field(default_factory=dict)
    #: Turns in a row that were nothing but repeats, counting the turn they repeat.
    _identical: int = 1

    def reset(self) -> None:
        """Something changed between turns (a job's report, a hook's message): nothing repeats."""
        self._still, self._identical = {}, 1

    def failed(self, calls: Sequence[ToolCall]) -> None:
        """This turn's ``write`` and ``edit`` calls that returned an error: the change is not
        there, so the same call next turn runs again. A write refused over a file the agent had
        not seen shows it the file, and the same write is then what should run: the 1.5B sent
        exactly that write again, and held as a repeat it gave up with the stub unchanged."""
        for call in calls:
            if call.tool in FILE_CHANGING_TOOLS:
                self._still.pop(call_key(call), None)

    def check(self, calls: Sequence[ToolCall]) -> RepeatCheck:
        """Which of this turn's calls repeat the previous turn's unchanged; remembers this turn."""
        unchanged: dict[str, str] = {}
        changed = False
        for call in calls:
            key = call_key(call)
            since = None if changed else self._still.get(key)
            if since is not None:
                unchanged[call.id] = since
            elif changes_things(call):
                changed = True
        self._identical = self._identical + 1 if calls and len(unchanged) == len(calls) else 1
        self._still = _still_after(calls, unchanged)
        failure = None
        if self._identical >= self.limit:
            first = calls[0]
            since = unchanged[first.id]
            failure = (
                f"the same call {self._identical} turns in a row, unchanged since call {since}: "
                f"{_shortened(call_key(first))}"
            )
        return RepeatCheck(unchanged, failure)


@dataclass
class FailureWatch:
    """The calls of one agent run that returned an error result, and how often."""

    limit: int = bounds.REPEATED_FAILURES
    #: A call's key -> how many times it failed since it last succeeded.
    _failures: dict[str, int] = field(default_factory=dict)

    def check(self, results: Sequence[tuple[ToolCall, str, bool]]) -> str | None:
        """Count a turn's results (each call that ran, its text, whether it is an error); the
        reason the agent ends when one call has now failed ``limit`` times, else None."""
        failure = None
        for call, text, is_error in results:
            key = call_key(call)
            if not is_error:
                self._failures.pop(key, None)
                continue
            self._failures[key] = count = self._failures.get(key, 0) + 1
            if count >= self.limit and failure is None:
                failure = f"the same failing call {count} times: {_shortened(key)} ({_shortened(text)})"
        return failure


@dataclass
class ChangeWatch:
    """The file changes of one agent run that succeeded, and how often each was made."""

    limit: int = bounds.REPEATED_CHANGES
    _made: dict[str, int] = field(default_factory=dict)

    def check(self, results: Sequence[tuple[ToolCall, str, bool]]) -> str | None:
        """Count a turn's results (each call that ran, its text, whether it is an error); the
        reason the agent ends when one change has now been made ``limit`` times, else None."""
        for call, _text, is_error in results:
            if is_error or call.tool not in FILE_CHANGING_TOOLS:
                continue
            key = call_key(call)
            self._made[key] = count = self._made.get(key, 0) + 1
            if count >= self.limit:
                return f"the same change made {count} times: {_shortened(key)}"
        return None


def _shortened(text: str) -> str:
    """The call (or its error) as a reason names it: one line, cut (a write's content can be
    long)."""
    line = " ".join(text.split())
    limit = bounds.REPEATED_CALL_SHOWN_CHARS
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _still_after(calls: Sequence[ToolCall], unchanged: Mapping[str, str]) -> dict[str, str]:
    """The calls of a turn whose results nothing after them in it changed (the last calls after
    the last call that changes things), each with the call that ran it."""
    still: dict[str, str] = {}
    for call in calls:
        ran = call.id not in unchanged
        if ran and changes_things(call):
            still = {}  # what came before may have changed
        still.setdefault(call_key(call), unchanged.get(call.id, call.id))
    return still

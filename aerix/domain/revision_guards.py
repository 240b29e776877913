"""The guards every revision of a profile text passes before it is committed.

A reflection member proposes a new text for a prompt; these decide whether it may replace the
current one. Each guard that refuses gives its name and a reason a person can read:

- ``placeholders``: every ``{name}`` the code fills in the release's text (``{tools}``,
  ``{brief}``, ``{check}``, ``{summary}``, ``{files}``) is still there;
- ``length``: the revision is between ``REVISION_MIN_RATIO`` and ``REVISION_MAX_RATIO`` times
  the release's text in characters, so tuning cannot drift far from it run after run;
- ``markup``: no chat-template markup (``<|im_start|>``, ``[INST]``, ``<s>`` …): the pool renders
  roles through the model's template, and markup inside a text would forge turns;
- ``text``: valid UTF-8 text, without control characters other than tab and newlines and
  without U+FFFD (the mark of something that did not decode);
- ``differs``: it is not the current text again (surrounding whitespace aside).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aerix.domain.bounds import REVISION_MAX_RATIO, REVISION_MIN_RATIO
from aerix.domain.templates import PLACEHOLDER

#: Role and turn markers of the chat templates in use: ChatML and the many ``<|...|>`` tokens
#: (Llama 3, Phi, Qwen), DeepSeek's fullwidth ``<｜...｜>``, Llama 2 and Mistral's ``[INST]`` and
#: ``<<SYS>>``, Gemma's ``<start_of_turn>``, and the sentence markers ``<s>``/``</s>``.
CHAT_MARKUP = re.compile(
    r"<\|[A-Za-z0-9_.:\- ]{1,40}\|>|\[/?INST\]|<</?SYS>>|</?s>|<(?:start|end)_of_turn>|<｜[^>]{1,40}｜>"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


@dataclass(frozen=True)
class GuardRefusal:
    guard: str
    reason: str

    def __str__(self) -> str:
        return f"{self.guard}: {self.reason}"


def placeholders(text: str) -> tuple[str, ...]:
    """The placeholders a text holds, in first-seen order, each once."""
    return tuple(dict.fromkeys(f"{{{name}}}" for name in PLACEHOLDER.findall(text)))


def length_bounds(original: str) -> tuple[int, int]:
    """The shortest and longest revision (in characters) a text of this length allows."""
    size = len(original.strip())
    return int(size * REVISION_MIN_RATIO), max(int(size * REVISION_MAX_RATIO), 1)


def check_revision(
    revision: str, current: str, original: str, *, must_differ: bool = True
) -> list[GuardRefusal]:
    """Every guard that refuses ``revision`` as the new text of ``current``; ``original`` is the
    release's text (its placeholders must stay, its length bounds the revision). An empty list
    means it passes. ``must_differ`` is off for a sync, whose answer may be that the tuned text
    already suits the new release."""
    refusals: list[GuardRefusal] = []
    try:
        revision.encode("utf-8")
    except UnicodeEncodeError as exc:
        refusals.append(
            GuardRefusal("text", f"not valid UTF-8 (an unpaired surrogate at character {exc.start})")
        )
    control = _CONTROL.search(revision)
    if control is not None:
        refusals.append(
            GuardRefusal(
                "text", f"holds the control character U+{ord(control.group()):04X} at {control.start()}"
            )
        )
    missing = [name for name in placeholders(original) if name not in revision]
    if missing:
        refusals.append(GuardRefusal("placeholders", f"drops {', '.join(missing)}, which the code fills in"))
    shortest, longest = length_bounds(original)
    size = len(revision.strip())
    if size < shortest or size > longest:
        refusals.append(
            GuardRefusal(
                "length",
                f"{size} characters, outside {shortest}–{longest} "
                f"(the release's text has {len(original.strip())})",
            )
        )
    markup = CHAT_MARKUP.search(revision)
    if markup is not None:
        refusals.append(GuardRefusal("markup", f"contains chat-template markup {markup.group()!r}"))
    if must_differ and revision.strip() == current.strip():
        refusals.append(GuardRefusal("differs", "the same as the current text"))
    return refusals

"""The constraint that makes a reply "text, then zero or more tool calls whose input matches
that tool's input_schema", as an llguidance Lark grammar (the pool's ``lark`` constraint).

With ``auto`` the text is free until the model writes ``<tool_call>``: a lazy lexeme ends the
text there, and from then on the call is forced to be ``{"name": <one of the tools>,
"arguments": <JSON valid against that tool's schema>}`` and ``</tool_call>``; after a call only
another call or the end may follow. ``any`` and ``tool`` start with the call at once (no text,
as Anthropic's API answers them), of any tool or of the named one. ``none`` has no grammar.
Inside a call the JSON is written with fixed separators and no newlines (the pool's own JSON
defaults), so a raw newline never occurs inside a call and ``\\n</tool_call>`` ends it.

``auto`` also takes the call a small model writes without the tag: a reply that *opens* with
``{"name": "<one of the tools>"``, bare or in a ```` ```json ```` fence, is that call (a lazy
lexeme per tool ends the opening at the tool's name), and the rest of it is forced as above,
its JSON laid out as the model likes. llama-server's Hermes/Qwen handling reads the same
openings as calls, on the same condition that the name is a tool's; the reply is that one call.

A schema llguidance cannot compile even leniently (keywords it does not know are ignored with
``lenient``) is replaced by "any JSON object" for that tool, with a warning in the log: the
call still parses, and the client checks its input as it would any model's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

from llguidance import LLMatcher

from caldrix.front.chat import Tool, ToolChoice
from caldrix.front.tool_text import (
    CALL_CLOSE,
    CALL_OPEN,
    FENCE,
    UNTAGGED_FENCES,
    UNTAGGED_KEYS,
    call_head,
    dumps,
)

logger = logging.getLogger("caldrix.front")

#: How llguidance compiles each tool's schema: unknown keywords ignored, ``oneOf`` read as
#: ``anyOf`` where it cannot prove the branches disjoint, and compact JSON as the pool writes.
SCHEMA_OPTIONS: Final[dict[str, Any]] = {
    "lenient": True,
    "coerce_one_of": True,
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
}
#: The same for a call written without the tag, whose JSON a model lays out as it likes.
FREE_LAYOUT_OPTIONS: Final[dict[str, Any]] = {
    "lenient": True,
    "coerce_one_of": True,
    "whitespace_flexible": True,
}
#: The schema a tool gets when its own does not compile.
ANY_OBJECT: Final[dict[str, Any]] = {"type": "object"}
#: Schemas whose compile check is remembered (Claude Code sends the same dozen every request).
CHECKED_SCHEMAS: Final = 512

_checked: OrderedDict[str, bool] = OrderedDict()


def tool_grammar(tools: Sequence[Tool], choice: ToolChoice) -> str | None:
    """The Lark grammar for a reply that may call ``tools`` as ``choice`` allows; None when
    the reply is free text (no tools, or ``none``)."""
    allowed = [tool for tool in tools if choice.mode != "tool" or tool.name == choice.name]
    if not allowed or choice.mode == "none":
        return None
    rules = [f'c{i}: {_literal(call_head(tool.name))} a{i} "}}"' for i, tool in enumerate(allowed)]
    rules += [f"a{i}: %json {json.dumps(usable_schema(tool))}" for i, tool in enumerate(allowed)]
    alternatives = " | ".join(f"c{i}" for i in range(len(allowed)))
    more = " (SEP call)*" if choice.parallel else ""
    if choice.mode == "auto":
        untagged = " | ".join(f"u{i} v{i}" for i in range(len(allowed)))
        start = f"start: TEXT | head call{more} | ({untagged}) FENCE_END?"
        rules += _untagged_call_rules(allowed)
    else:
        start = f"start: {_literal(CALL_OPEN)} call{more}"
    lines = [
        start,
        "TEXT: /(.|\\n)*/",
        f"head[lazy]: TEXT {_literal(CALL_OPEN)}",
        f"SEP: {_literal(chr(10) + CALL_OPEN)}",
        f"call: {_literal(chr(10))} ({alternatives}) {_literal(chr(10) + CALL_CLOSE)}",
        *rules,
    ]
    return "\n".join(lines) + "\n"


def _untagged_call_rules(tools: Sequence[Tool]) -> list[str]:
    """Per tool ``i``: ``u{i}``, the lazy opening up to its name; ``v{i}``, the rest of the
    call; ``w{i}``, its arguments in any layout. Then the closing fence."""
    fences = "|".join(_regex_text(fence) for fence in UNTAGGED_FENCES)
    opening = rf"\s*({fences})?" + "".join(rf"\s*{_regex_text(key)}" for key in UNTAGGED_KEYS) + r"\s*"
    rules = []
    for i, tool in enumerate(tools):
        rules.append(f"u{i}[lazy]: {_regex(opening + _regex_text(dumps(tool.name)))}")
        rules.append(f'v{i}: /\\s*,\\s*"arguments"\\s*:\\s*/ w{i} /\\s*\\}}/')
        rules.append(f"w{i}: %json {json.dumps(usable_schema(tool, FREE_LAYOUT_OPTIONS))}")
    return [*rules, "FENCE_END: " + _regex(r"\s*" + _regex_text(FENCE))]


def usable_schema(tool: Tool, options: dict[str, Any] = SCHEMA_OPTIONS) -> dict[str, Any]:
    """The tool's schema with the compile ``options``, or :data:`ANY_OBJECT` when llguidance
    cannot compile it."""
    schema = {**tool.schema, "x-guidance": options}
    text = json.dumps(schema, sort_keys=True)
    key = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    usable = _checked.get(key)
    if usable is None:
        problem = LLMatcher.validate_grammar(LLMatcher.grammar_from_lark(f"start: %json {text}\n"))
        usable = not problem
        if problem:
            logger.warning(
                "tool %s: its input_schema does not compile (%s); any object is allowed",
                tool.name,
                " ".join(problem.split())[:200],
            )
        _checked[key] = usable
        while len(_checked) > CHECKED_SCHEMAS:
            _checked.popitem(last=False)
    else:
        _checked.move_to_end(key)
    return schema if usable else {**ANY_OBJECT, "x-guidance": options}


def _regex(pattern: str) -> str:
    """``pattern`` as a Lark regex literal."""
    return "/" + pattern.replace("/", "\\/") + "/"


def _regex_text(text: str) -> str:
    """``text`` matched as it is, in a regex a Lark literal can hold (a newline as ``\\n``)."""
    return re.escape(text).replace("\\\n", "\\n")


def _literal(text: str) -> str:
    """``text`` as a Lark string literal (JSON's escapes are Lark's)."""
    return json.dumps(text)

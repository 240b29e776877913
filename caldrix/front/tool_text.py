"""Tools, tool calls and tool results as the prompt's text.

One syntax everywhere, the one most open models with tool support were trained on (Hermes,
Qwen): the tools listed as JSON signatures inside ``<tools>``, each call a JSON object with
``name`` and ``arguments`` inside ``<tool_call>`` tags, each result inside
``<tool_response>`` tags. The model's own calls are written back into later prompts exactly as
the grammar (:mod:`caldrix.front.tool_grammar`) made it write them, so the prompt and the
output speak the same syntax, and a call renders to the same bytes every time (the prefix store
resumes across turns).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from caldrix.front.chat import Tool

CALL_OPEN: Final = "<tool_call>"
CALL_CLOSE: Final = "</tool_call>"
#: A call written without the tag, as small models write one (llama-server reads it as a call
#: too): at the reply's opening, one of these fences or none, then these keys, whitespace
#: allowed around each, then a tool's quoted name.
UNTAGGED_FENCES: Final = ("```json\n", "```xml\n", "```\n")
UNTAGGED_KEYS: Final = ("{", '"name"', ":")
FENCE: Final = "```"
RESULT_OPEN: Final = "<tool_response>"
RESULT_CLOSE: Final = "</tool_response>"
#: The words a failed tool's result starts with.
ERROR_MARK: Final = "Error: "
#: The longest description ``--tool-text brief`` keeps of a tool (its first paragraph, cut at
#: a sentence): Claude Code's twelve tool descriptions and their parameters' are two thirds of
#: its prompt, minutes of prefill for a small member on a CPU.
BRIEF_DESCRIPTION_CHARS: Final = 300
#: What ``brief`` drops from a parameter schema, at every level: words for a reader.
_PROSE_KEYS: Final = frozenset({"description", "$schema"})
#: Integer bounds that say no more than "an integer": zod, which writes Claude Code's schemas,
#: puts JavaScript's safe-integer limits (2^53 - 1) on every ``.int()``, about ten rows each.
_SAFE_INTEGER: Final = 2**53 - 1
_BOUND_KEYS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
#: Where a JSON Schema holds schemas: by name, in a list, or one.
_SCHEMA_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_LISTS: Final = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_ONES: Final = frozenset({"items", "additionalProperties", "not", "contains"})

_TOOLS_INTRO = (
    "# Tools\n\n"
    "You may call one or more tools to help with the request. "
    "Their signatures are inside <tools></tools>:\n<tools>\n"
)
_TOOLS_OUTRO = (
    "\n</tools>\n\n"
    "To call a tool, write a JSON object with its name and arguments inside "
    "<tool_call></tool_call> tags:\n"
    f'{CALL_OPEN}\n{{"name": <tool-name>, "arguments": <args-json-object>}}\n{CALL_CLOSE}\n'
    "Each result comes back inside <tool_response></tool_response> tags."
)


def dumps(value: Any) -> str:
    """JSON as the grammar writes it: ``", "`` and ``": "`` separators, no newlines, text
    unescaped (so a result the model reads is the text itself)."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def tools_section(tools: Sequence[Tool], *, brief: bool = False) -> str:
    """The system prompt's section that lists ``tools`` and says how to call them; ``brief``
    (``--tool-text brief``) gives each tool its description's first paragraph and its
    parameters as :func:`brief_schema` writes them."""
    signatures = "\n".join(
        dumps(
            {
                "name": tool.name,
                "description": brief_description(tool.description) if brief else tool.description,
                "parameters": brief_schema(tool.schema) if brief else tool.schema,
            }
        )
        for tool in tools
    )
    return _TOOLS_INTRO + signatures + _TOOLS_OUTRO


def brief_description(description: str) -> str:
    """The first paragraph of ``description``, at most BRIEF_DESCRIPTION_CHARS: cut after its
    last whole sentence that fits, else at a word, marked with an ellipsis."""
    first = description.strip().split("\n\n", 1)[0].strip()
    if len(first) <= BRIEF_DESCRIPTION_CHARS:
        return first
    head = first[:BRIEF_DESCRIPTION_CHARS]
    sentence_end = max(head.rfind(". "), head.rfind(".\n"))
    if sentence_end > 0:
        return head[: sentence_end + 1]
    return head.rsplit(None, 1)[0] + "…"


def brief_schema(schema: Any) -> Any:
    """``schema`` as ``brief`` writes it, at every level: without its ``description`` and
    ``$schema`` (a property *named* ``description``, as Bash's is, stays), without
    ``additionalProperties: false`` and without the safe-integer bounds zod writes on every
    integer. The shape a reader needs stays: types, enums, required fields, real bounds. The
    grammar holds a call to the schema as sent, the dropped parts included."""
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if _says_nothing_to_a_reader(key, value):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            kept[key] = {name: brief_schema(inner) for name, inner in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            kept[key] = [brief_schema(inner) for inner in value]
        elif key in _SCHEMA_ONES:
            kept[key] = brief_schema(value)
        else:
            kept[key] = value
    return kept


def _says_nothing_to_a_reader(key: str, value: Any) -> bool:
    if key in _PROSE_KEYS:
        return isinstance(value, str)
    if key == "additionalProperties":
        return value is False
    if key in _BOUND_KEYS:
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) == _SAFE_INTEGER
    return False


def call_head(name: str) -> str:
    """What a call of ``name`` starts with, up to its arguments."""
    return f'{{"name": {dumps(name)}, "arguments": '


def call_text(name: str, arguments: Any) -> str:
    """One call as the model writes it (and as later prompts show it)."""
    return f"{CALL_OPEN}\n{call_head(name)}{dumps(arguments)}}}\n{CALL_CLOSE}"


def assistant_text(text: str, calls: Sequence[tuple[str, Any]]) -> str:
    """An assistant turn: its text, then its calls, one a line."""
    parts = [text.strip()] if text.strip() else []
    parts.extend(call_text(name, arguments) for name, arguments in calls)
    return "\n".join(parts)


def result_text(content: str, *, is_error: bool = False) -> str:
    """One tool result as the next user turn shows it."""
    body = f"{ERROR_MARK}{content}" if is_error else content
    return f"{RESULT_OPEN}\n{body}\n{RESULT_CLOSE}"

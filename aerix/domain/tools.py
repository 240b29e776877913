"""The tool catalogue: every tool's name, description and input schema, as the spec's table
gives them, and the text that describes them in the system segment.

The schemas double as the turn schema's per-tool ``input`` (see ``aerix.domain.turns``), so
they keep to what llguidance compiles: ``additionalProperties: false``, properties in a fixed
order, plain types, ``enum``, ``minimum``/``maximum``, and ``maxLength`` on each string that
names something (a path, a pattern, a name: ``bounds.PATH_MAX_CHARS`` and its neighbours; free
text has none). Defaults are stated in the schema for the model's benefit and applied by the
tools themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from aerix.domain import bounds


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the model sees it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("required", ()))

    @property
    def properties(self) -> Mapping[str, Mapping[str, Any]]:
        props: Mapping[str, Mapping[str, Any]] = self.input_schema.get("properties", {})
        return props


def _object(properties: dict[str, dict[str, Any]], required: Iterable[str] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _text(description: str) -> dict[str, Any]:
    """Free text (a file's content, a command, a brief): as long as the model needs."""
    return {"type": "string", "description": description}


def _name(description: str, max_chars: int) -> dict[str, Any]:
    """A string that names something (a path, a pattern, a skill): bounded, so a model under
    the JSON constraint cannot run away in it."""
    return {"type": "string", "description": description, "maxLength": max_chars}


def _path(description: str) -> dict[str, Any]:
    return _name(description, bounds.PATH_MAX_CHARS)


def _integer(
    description: str, *, default: int, minimum: int = 1, maximum: int | None = None
) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "integer",
        "description": description,
        "default": default,
        "minimum": minimum,
    }
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _flag(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": False}


READ = ToolSpec(
    "read",
    f"Read a file: its lines with line numbers, {bounds.READ_LIMIT_LINES} lines from `offset` unless "
    f"`limit` says otherwise, each line cut to {bounds.READ_LINE_MAX_CHARS} characters. "
    "A directory gives its entries.",
    _object(
        {
            "path": _path("file or directory; absolute, or relative to the working directory"),
            "offset": _integer("first line to show, counting from 1", default=1),
            "limit": _integer("how many lines to show", default=bounds.READ_LIMIT_LINES),
        },
        required=["path"],
    ),
)
WRITE = ToolSpec(
    "write",
    "Create or replace a file with `content`; missing parent directories are created.",
    _object(
        {"path": _path("the file to write"), "content": _text("the whole new text of the file")},
        required=["path", "content"],
    ),
)
EDIT = ToolSpec(
    "edit",
    "Replace the exact text `old` with `new` in a file. Refused when `old` is missing, or when it "
    "occurs more than once and `replace_all` is not set.",
    _object(
        {
            "path": _path("the file to edit"),
            "old": _text("the exact text to replace, including its whitespace"),
            "new": _text("the replacement text"),
            "replace_all": _flag("replace every occurrence instead of exactly one"),
        },
        required=["path", "old", "new"],
    ),
)
BASH = ToolSpec(
    "bash",
    "Run a shell command (`sh -c`) in the working directory. The result is its stdout, then its "
    "stderr, then [exit N], [signal N], [timeout after Ns] or [cancelled]. With `background` it "
    "returns a job id at once and reports [job jN exited N] with the output when it ends.",
    _object(
        {
            "command": _text("the shell command"),
            "timeout_secs": _integer(
                "seconds before the command is stopped",
                default=bounds.BASH_TIMEOUT_SECS,
                maximum=bounds.BASH_MAX_TIMEOUT_SECS,
            ),
            "background": _flag("run as a background job and return at once"),
        },
        required=["command"],
    ),
)
GLOB = ToolSpec(
    "glob",
    "List files matching a pattern, relative to the working directory. `*` also crosses `/`, so "
    "`*.py` finds Python files at any depth and `src/*test*` anything under src with test in it.",
    _object(
        {
            "pattern": _name("the file pattern", bounds.PATTERN_MAX_CHARS),
            "path": _path("the folder to search (default: the working directory)"),
        },
        required=["pattern"],
    ),
)
GREP = ToolSpec(
    "grep",
    "Search file contents with a regular expression; each match is `file:line: text`. Files over "
    f"{bounds.GREP_MAX_FILE_BYTES // (1024 * 1024)} MiB are skipped, lines cut to "
    f"{bounds.GREP_LINE_MAX_CHARS} characters.",
    _object(
        {
            "pattern": _name("a Python regular expression", bounds.PATTERN_MAX_CHARS),
            "path": _path("a file or folder to search (default: the working directory)"),
            "glob": _name("only files matching this pattern, as in glob", bounds.PATTERN_MAX_CHARS),
            "max_matches": _integer("stop after this many matches", default=bounds.GREP_MAX_MATCHES),
        },
        required=["pattern"],
    ),
)
REPO_MAP = ToolSpec(
    "repo_map",
    "The project's file tree with sizes and languages (computed once per request).",
    _object({}),
)
PLAN = ToolSpec(
    "plan",
    "Read or replace your plan: op read shows it, op write replaces it with `text`.",
    _object(
        {
            "op": {"type": "string", "enum": ["read", "write"]},
            "text": _text("the whole new plan (for write)"),
        },
        required=["op"],
    ),
)
CONTEXT = ToolSpec(
    "context",
    "Manage your own context. status lists segments with ids, labels, token counts and pinned "
    "flags; drop removes segments by id; summarize replaces segments with one pinned summary "
    "`text`; pin/unpin keep or release segments; note appends `text` to a pinned scratchpad "
    "that survives compaction.",
    _object(
        {
            "op": {"type": "string", "enum": ["status", "drop", "summarize", "pin", "unpin", "note"]},
            "ids": {
                "type": "array",
                "items": {"type": "string", "maxLength": bounds.NAME_MAX_CHARS},
                "description": "segment ids",
            },
            "text": _text("the summary or the note"),
        },
        required=["op"],
    ),
)
AGENT = ToolSpec(
    "agent",
    "Delegate a piece of work to a new agent. It sees none of this conversation, so the brief "
    "must say everything it needs. A verifier then checks its work against `check`. Returns "
    "{summary, files_touched, checks_run, outcome}.",
    _object(
        {
            "brief": _text("the complete task"),
            "check": _text("how to verify the work (a command to run, a fact to confirm)"),
            "definition": _name("an agent definition to use (optional)", bounds.NAME_MAX_CHARS),
            "member": _name("a loaded pool member to run on (optional)", bounds.NAME_MAX_CHARS),
        },
        required=["brief", "check"],
    ),
)
SKILL = ToolSpec(
    "skill",
    "Load a skill's instructions by `name` (with `args`), or list the skills with `list`.",
    _object(
        {
            "name": _name("the skill's name", bounds.NAME_MAX_CHARS),
            "args": _text("the arguments for the skill"),
            "list": _flag("list the skills instead"),
        }
    ),
)
WEB_FETCH = ToolSpec(
    "web_fetch",
    "Reserved; every call is refused (aerix tools do not use the network).",
    _object(
        {"url": _name("the address", bounds.URL_MAX_CHARS), "prompt": _text("what to look for")},
        required=["url"],
    ),
)
WEB_SEARCH = ToolSpec(
    "web_search",
    "Reserved; every call is refused (aerix tools do not use the network).",
    _object({"query": _text("the search terms")}, required=["query"]),
)

#: Every tool, in the order the system segment lists them.
TOOLS: Final[tuple[ToolSpec, ...]] = (
    READ,
    WRITE,
    EDIT,
    BASH,
    GLOB,
    GREP,
    REPO_MAP,
    PLAN,
    CONTEXT,
    AGENT,
    SKILL,
    WEB_FETCH,
    WEB_SEARCH,
)
TOOLS_BY_NAME: Final[Mapping[str, ToolSpec]] = {tool.name: tool for tool in TOOLS}
TOOL_NAMES: Final[tuple[str, ...]] = tuple(TOOLS_BY_NAME)

#: A planner's tools by default (``delegation.planner_tools``).
DEFAULT_PLANNER_TOOLS: Final = ("repo_map", "agent", "plan", "context")
#: The routes whose root is a planner by default (``delegation.planner_routes``).
DEFAULT_PLANNER_ROUTES: Final = ("edit", "plan")
#: The tools that change files: the paths an agent touched, a repeat that means the change is
#: there, and the same change made again are all counted over these.
FILE_CHANGING_TOOLS: Final = frozenset({WRITE.name, EDIT.name})
#: A verifier may only look and run checks.
VERIFIER_TOOLS: Final = ("read", "bash", "grep", "glob", "repo_map")
#: Names kept for tools aerix does not offer; every call is refused.
REFUSED_TOOLS: Final = frozenset({"web_fetch", "web_search"})


def tool_spec(name: str) -> ToolSpec:
    """The spec of a tool by its aerix name; KeyError names the tool when unknown."""
    return TOOLS_BY_NAME[name]


def _describe_input(spec: ToolSpec) -> str:
    if not spec.properties:
        return "no input"
    parts = []
    for field, schema in spec.properties.items():
        kind = schema.get("type", "string")
        if "enum" in schema:
            kind = " | ".join(schema["enum"])
        if kind == "array":
            kind = "list of strings"
        extras = [] if field in spec.required else ["optional"]
        if "default" in schema and schema["default"] is not False:
            extras.append(f"default {schema['default']}")
        if "maximum" in schema:
            extras.append(f"at most {schema['maximum']}")
        suffix = f", {', '.join(extras)}" if extras else ""
        parts.append(f"{field} ({kind}{suffix})")
    return "; ".join(parts)


def render_tool_descriptions(tools: Iterable[ToolSpec] = TOOLS) -> str:
    """The ``# Tools`` section of the system segment: each tool with its input fields.

    The system segment always lists the full tool set, so every agent's context starts with the
    same text and the pool's prefix store can share it.
    """
    lines = ["# Tools", ""]
    for spec in tools:
        lines.append(f"- {spec.name}: {spec.description}")
        lines.append(f"  input: {_describe_input(spec)}")
    return "\n".join(lines)


def dumps_compact(value: Any) -> str:
    """JSON the way the turn examples show it (one line, `: ` and `, ` separators)."""
    return json.dumps(value, ensure_ascii=False)

"""Tool inputs that name something can only name what exists.

The catalogue (``aerix.domain.tools``) gives a field that names an agent definition, a pool
member or a skill as free text within ``NAME_MAX_CHARS``. A small model fills such a field with
prose ("The function should take a string as input …"), gets ``error: no agent definition
named …`` and tries again. So each agent run offers these fields built from what exists when it
starts (``offered_tools``), and under the JSON constraint a name that is not there cannot be
written:

- ``agent``'s ``definition``: an ``enum`` of the installed agent definitions' names; left out
  when none is installed.
- ``agent``'s ``member``: an ``enum`` of the loaded (ready) members' names; left out when the
  only one is the caller's own, since naming it changes nothing.
- ``skill``'s ``name``: an ``enum`` of the installed skills' names; with none installed the
  field (and ``args``, which only a name uses) is left out and the tool only lists. The tool
  stays: the spec gives every agent "the definition's tools (or all)", and ``skill`` is one.

``listed_tools`` makes the system segment's ``# Tools`` text the same way from what every
agent of a directory shares (the definitions and the skills). The members are not known there,
and would change the shared text as they load, so the listing says when ``member`` is offered
instead of naming them.

Pure: the caller (``aerix.app.agent.loop``) asks the pool and the catalogues for the names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aerix.domain.tools import ToolSpec

#: Said of ``member`` where the members are not known (the system segment).
MEMBER_OFFERED_WHEN = (
    " `member` names another loaded pool member to run on; it is offered only when more than one "
    "member is loaded."
)
#: The ``skill`` tool's description when no skill is installed.
NO_SKILLS_DESCRIPTION = "No skill is installed here, so there is none to load; `list` says so."


@dataclass(frozen=True)
class ToolChoices:
    """The names an agent's tool inputs may take."""

    #: The installed agent definitions.
    definitions: tuple[str, ...] = ()
    #: The installed skills.
    skills: tuple[str, ...] = ()
    #: The loaded members ready to serve; None: not known here (the system segment's listing).
    members: tuple[str, ...] | None = ()
    #: The member the agent itself runs on.
    own_member: str | None = None


def offered_tools(tools: Sequence[ToolSpec], choices: ToolChoices) -> tuple[ToolSpec, ...]:
    """``tools`` with each field that names something made an ``enum`` of ``choices``, or left
    out when there is nothing (else) to name. The tools themselves stay."""
    return tuple(_offered(tool, choices) for tool in tools)


def listed_tools(
    tools: Sequence[ToolSpec], definitions: Sequence[str], skills: Sequence[str]
) -> tuple[ToolSpec, ...]:
    """``tools`` as the system segment lists them: the definitions and skills named, the
    member field described (the members are not known there)."""
    return offered_tools(tools, ToolChoices(tuple(definitions), tuple(skills), members=None))


def _offered(tool: ToolSpec, choices: ToolChoices) -> ToolSpec:
    if tool.name == "agent":
        return _agent(tool, choices)
    if tool.name == "skill":
        return _skill(tool, choices.skills)
    return tool


def _agent(tool: ToolSpec, choices: ToolChoices) -> ToolSpec:
    fields = _naming(tool, "definition", choices.definitions)
    description = tool.description
    members = choices.members
    if members is None:
        description += MEMBER_OFFERED_WHEN
    else:
        others = [name for name in members if name != choices.own_member]
        fields = {**fields, **_naming(tool, "member", members if others else ())}
    return _with(tool, fields, description)


def _skill(tool: ToolSpec, skills: Sequence[str]) -> ToolSpec:
    if skills:
        return _with(tool, _naming(tool, "name", skills), tool.description)
    return _with(tool, {"name": None, "args": None}, NO_SKILLS_DESCRIPTION)


def _naming(tool: ToolSpec, field: str, names: Sequence[str]) -> dict[str, dict[str, Any] | None]:
    """The field as an enum of ``names`` (no duplicates, in their order), or None: left out."""
    if field not in tool.properties:
        return {}
    unique = list(dict.fromkeys(names))
    if not unique:
        return {field: None}
    schema = {key: value for key, value in tool.properties[field].items() if key != "maxLength"}
    return {field: {**schema, "enum": unique}}


def _with(tool: ToolSpec, fields: Mapping[str, dict[str, Any] | None], description: str) -> ToolSpec:
    """``tool`` with ``fields`` replaced (None: removed, from ``required`` too)."""
    properties: dict[str, Any] = {}
    for name, schema in tool.properties.items():
        replaced = fields.get(name, schema)
        if replaced is not None:
            properties[name] = replaced
    required = [name for name in tool.required if name in properties]
    input_schema = {**tool.input_schema, "properties": properties, "required": required}
    return ToolSpec(tool.name, description, input_schema)

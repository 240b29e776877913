"""The root agent ``a1``'s context: which segments it holds and how they are recorded.

A new root's context is the system segment (``system.md``, the full ``# Tools`` list, the
``# Turns`` section rendered by code, and the skill list), the instructions segment, any hook
context, and the prompt. The system segment always lists every tool, so every context in a
directory starts with the same tokens and the pool's prefix store shares them; a planner's
restriction lives in the note after its prompt and in its turn schema, and so do the tools a
permission rule takes away (their calls are refused too, should one be made). A resumed root is its
context rebuilt from the log, with the new prompt appended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from aerix.app.agent.live_context import hook_context_segment
from aerix.app.ports.project import AgentDefinitionSource, PromptSource, SkillSource
from aerix.domain.permissions import NO_RESTRICTIONS, Permissions
from aerix.domain.segments import ROOT_AGENT, ContextSegment, SegmentKind
from aerix.domain.settings import Settings
from aerix.domain.tool_choices import listed_tools
from aerix.domain.tools import (
    DEFAULT_PLANNER_ROUTES,
    DEFAULT_PLANNER_TOOLS,
    TOOLS,
    ToolSpec,
    render_tool_descriptions,
    tool_spec,
)
from aerix.domain.turns import render_turns_section


def system_text(
    prompts: PromptSource,
    skills: SkillSource,
    settings: Settings,
    agents: AgentDefinitionSource | None = None,
) -> str:
    """The system segment every agent's context starts with: system.md, the tools (the names
    their fields may take among them, ``listed_tools``), the turn shape, and the skills and agent
    definitions the model may name (each within its budget)."""
    definitions = agents.names if agents is not None else ()
    parts = [
        prompts.get("system").strip(),
        render_tool_descriptions(listed_tools(TOOLS, definitions, skills.names)),
        render_turns_section(),
        skills.render_listing(settings.context.skills_chars),
        agents.render_listing(settings.context.agents_chars) if agents is not None else "",
    ]
    return "\n\n".join(part for part in parts if part)


def root_tools(
    route: str, settings: Settings, permissions: Permissions = NO_RESTRICTIONS
) -> tuple[ToolSpec, ...]:
    """``delegation.planner_tools`` for a planner (a route in ``delegation.planner_routes``:
    ``edit`` and ``plan`` by default); every tool for the other routes;
    without ``agent`` when ``delegation.depth`` is 0 (the root is at depth 0); without the tools
    the permissions take away (a bare deny rule, ``--tools``). A planner left without ``agent``
    could delegate nothing, so its root is not a planner: it has every tool left, as
    ``answer`` has."""
    if route in settings.delegation.planner_routes:
        planner = _usable(
            tuple(tool_spec(name) for name in settings.delegation.planner_tools), settings, permissions
        )
        if any(tool.name == "agent" for tool in planner):
            return planner
    return _usable(TOOLS, settings, permissions)


def _usable(
    tools: tuple[ToolSpec, ...], settings: Settings, permissions: Permissions
) -> tuple[ToolSpec, ...]:
    if settings.delegation.depth <= 0:
        tools = tuple(tool for tool in tools if tool.name != "agent")
    return permissions.restrict(tools)


def planner_tool_names(settings: Settings, permissions: Permissions = NO_RESTRICTIONS) -> list[str]:
    """The tools a planner has, for its note: ``delegation.planner_tools`` less what the
    permissions take away; none when it could not delegate (then there is no planner)."""
    if not settings.delegation.planner_routes:
        return []
    route = settings.delegation.planner_routes[0]
    tools = [tool.name for tool in root_tools(route, settings, permissions)]
    return tools if "agent" in tools else []


def prompt_text(
    prompt: str,
    route: str,
    prompts: PromptSource,
    planner_tools: Sequence[str] = DEFAULT_PLANNER_TOOLS,
    planner_routes: Sequence[str] = DEFAULT_PLANNER_ROUTES,
    attached: str = "",
) -> str:
    """The prompt segment: the request, the files it names (``attached``), and for a planner the
    note that it must delegate, naming the tools it has (``{tools}`` in planner.md:
    ``delegation.planner_tools``). No tools to plan with (no ``agent``: see root_tools) is no
    planner, and no note."""
    parts = [prompt, attached]
    if route in planner_routes and planner_tools:
        parts.append(prompts.get("planner").strip().replace("{tools}", spoken_list(planner_tools)))
    return "\n\n".join(part for part in parts if part)


def spoken_list(names: Sequence[str]) -> str:
    """``a, b and c``."""
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def shared_prefix(system: str, instructions: str) -> list[ContextSegment]:
    """The leading segments every agent of the session shares (implementers fork these)."""
    segments = [ContextSegment(f"{ROOT_AGENT}.system", "system", SegmentKind.SYSTEM, system, True, "system")]
    if instructions.strip():
        segment_id = f"{ROOT_AGENT}.instructions"
        segments.append(
            ContextSegment(segment_id, "system", SegmentKind.INSTRUCTIONS, instructions, True, "instructions")
        )
    return segments


def request_segments(request: int, prompt: str, hook_context: str | None = None) -> list[ContextSegment]:
    """What each request adds to the root: its hook context (pinned) and its prompt."""
    segments = []
    if hook_context:
        segments.append(hook_context_segment(f"{ROOT_AGENT}.hook{request}", hook_context))
    label = f"prompt {request}"
    segments.append(
        ContextSegment(f"{ROOT_AGENT}.p{request}", "user", SegmentKind.PROMPT, prompt, False, label)
    )
    return segments


def refreshed_system(
    segments: Sequence[ContextSegment], system: str
) -> tuple[list[ContextSegment], list[ContextSegment]]:
    """A resumed root's segments with its system segment's text made ``system`` (``--profile-
    refresh``: the new commit's prompts), in place: (the segments, the ones whose text changed).
    The pool computes the context again from the changed segment on, as for any change there."""
    changed = [
        replace(segment, text=system, tokens=None)
        for segment in segments
        if segment.kind == SegmentKind.SYSTEM and segment.text != system
    ]
    by_id = {segment.id: segment for segment in changed}
    return [by_id.get(segment.id, segment) for segment in segments], changed

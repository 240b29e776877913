"""A chat request as the pool's segments: one system segment, then one segment a turn.

The system segment is the tools section (:func:`caldrix.front.tool_text.tools_section`), when
the request has tools, then its system text: the part every request of a session shares, so the
prefix store resumes it. The tools come first because a client's agents differ in their system
text more than in their tools: Claude Code's subagent has a system prompt of its own but most of
the main agent's tools, in the same order, so its first request resumes the main agent's rows up
to the first tool they do not share (4,332 of its 8,380 rows on Claude Code 2.1's traffic)
rather than from the chat header. A ``system`` entry among the messages (Claude Code sends its
environment so) is shown to the model as user text, and consecutive turns of one role are
joined: chat templates that insist on alternating user and assistant turns (Gemma's) accept
every conversation, and the segments of one conversation render to the same tokens on every
request.
"""

from __future__ import annotations

from typing import Final

from caldrix.front.chat import ChatRequest, Role, Turn
from caldrix.front.tool_text import tools_section
from caldrix.protocol.messages import SegmentSpec

#: What joins two turns of one role into one, and the tools section and the system text.
JOIN: Final = "\n\n"


def prompt_segments(request: ChatRequest, *, brief_tools: bool = False) -> list[SegmentSpec]:
    """The segments of ``request``'s prompt, in order (the generation prompt is the pool's);
    ``brief_tools``: the tools section as ``--tool-text brief`` writes it."""
    system = request.system
    if request.tools:
        tools = tools_section(request.tools, brief=brief_tools)
        system = JOIN.join(part for part in (tools, system) if part)
    segments = [SegmentSpec(id="system", role="system", text=system, pinned=True)] if system else []
    for number, turn in enumerate(merged_turns(request.turns)):
        segments.append(SegmentSpec(id=f"t{number}", role=turn.role, text=turn.text))
    return segments


def merged_turns(turns: tuple[Turn, ...]) -> list[Turn]:
    """``turns`` with system entries as user text and neighbours of one role joined."""
    merged: list[Turn] = []
    for turn in turns:
        role: Role = "user" if turn.role == "system" else turn.role
        if not turn.text:
            continue
        if merged and merged[-1].role == role:
            merged[-1] = Turn(role, merged[-1].text + JOIN + turn.text)
        else:
            merged.append(Turn(role, turn.text))
    return merged

"""Where a tool result goes: the agent's live context, fitted to the room a turn leaves."""

from __future__ import annotations

import math

from aerix.app.agent.live_context import LiveContext, compact
from aerix.app.ports.project import PromptSource
from aerix.domain import bounds
from aerix.domain.segments import ContextSegment, SegmentKind


class LiveResultTarget:
    """``tool_output.ResultTarget`` on the live context: a result fits when a whole turn's
    ask still fits after it (by the pool's count)."""

    def __init__(
        self,
        live: LiveContext,
        prompts: PromptSource,
        segment_id: str,
        header: str | None,
        tool: str,
        call_id: str | None,
    ) -> None:
        self.live = live
        self.prompts = prompts
        self.segment_id = segment_id
        self.header = header
        self.tool = tool
        self.call_id = call_id
        self.appended: ContextSegment | None = None

    async def room_tokens(self) -> int:
        header_tokens = math.ceil(len((self.header or "").encode("utf-8")) / bounds.BYTES_PER_TOKEN) + 1
        return max(0, self.live.budget.result_room(self.live.tokens) - header_tokens)

    async def try_append(self, text: str) -> bool:
        segment = await self._append(text)
        if self.live.has_turn_room():
            self.appended = segment
            return True
        await self.live.remove([segment.id])
        return False

    async def compact(self) -> None:
        await compact(self.live, self.prompts)

    async def append_anyway(self, text: str) -> None:
        self.appended = await self._append(text)

    async def _append(self, text: str) -> ContextSegment:
        body = f"{self.header}\n{text}" if self.header else text
        segment = ContextSegment(
            self.segment_id,
            "user",
            SegmentKind.TOOL_RESULT,
            body,
            label=f"{self.tool} {self.call_id or ''}".strip(),
            call=self.call_id,
            tool=self.tool,
        )
        return await self.live.append(segment)  # held: the dispatcher records it with its result

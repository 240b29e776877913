"""Tool output caps (spec, "Context management" → "Tool output caps").

A result longer than its ``context.tool_caps`` entry is cut, and the whole original is written
once to the session's spool, with a pointer line at the end of what is kept:

    [truncated: N more bytes; read with read(path="...", offset=1)]

The result is then fitted to the room the window leaves (BYTES_PER_TOKEN bytes a token). If the
append still fails, the runtime compacts once and fits again; failing that, only the pointer is
appended: RESULT_APPEND_TRIES attempts in all. ``append_result`` runs those attempts against a
``ResultTarget`` (the loop's view of the agent's context).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aerix.app.ports.tools import ResultTarget, SpoolWriter
from aerix.domain import bounds


def pointer_line(hidden_bytes: int, spool_path: Path) -> str:
    """The line that tells the model where the whole output is."""
    return f'[truncated: {hidden_bytes} more bytes; read with read(path="{spool_path}", offset=1)]'


def cut_to_bytes(text: str, limit: int) -> str:
    """The head of ``text`` in at most ``limit`` UTF-8 bytes, ending on a whole line when that
    keeps at least half of it."""
    if limit <= 0:
        return ""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    head = data[:limit].decode("utf-8", errors="ignore")
    newline = head.rfind("\n")
    if newline >= len(head) // 2:
        head = head[: newline + 1]
    return head


@dataclass
class ToolOutput:
    """One call's result on its way into a context."""

    text: str
    cap_bytes: int
    spool: SpoolWriter
    spool_name: str  # such as a1.c3
    spool_path: Path | None = field(default=None, init=False)

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))

    def _spooled(self) -> Path:
        """The spool file of the whole original, written the first time it is needed."""
        if self.spool_path is None:
            self.spool_path = self.spool.write_spool(self.spool_name, self.text)
        return self.spool_path

    def _cut_with_pointer(self, limit: int) -> str | None:
        """The head of the output and the pointer within ``limit`` bytes; None if the pointer
        alone does not fit."""
        path = self._spooled()
        # The pointer's own length depends on N; size it for the largest N it can say.
        room = limit - len(pointer_line(self.size, path).encode("utf-8")) - 1
        if room < 0:
            return None
        head = cut_to_bytes(self.text, room)
        hidden = self.size - len(head.encode("utf-8"))
        return f"{head.rstrip(chr(10))}\n{pointer_line(hidden, path)}" if head else pointer_line(hidden, path)

    def capped(self) -> str:
        """The result within its tool cap (the whole text when it fits)."""
        if self.size <= self.cap_bytes:
            return self.text
        return self._cut_with_pointer(self.cap_bytes) or self.pointer_only()

    def fitted(self, room_tokens: int) -> str | None:
        """The capped result cut to ``room_tokens`` (at BYTES_PER_TOKEN); None if not even the
        pointer fits."""
        capped = self.capped()
        room_bytes = room_tokens * bounds.BYTES_PER_TOKEN
        if len(capped.encode("utf-8")) <= room_bytes:
            return capped
        return self._cut_with_pointer(min(room_bytes, self.cap_bytes))

    def pointer_only(self) -> str:
        """The last resort: only the pointer to the whole output."""
        return pointer_line(self.size, self._spooled())


@dataclass(frozen=True)
class AppendOutcome:
    text: str  # what was appended (or last tried)
    attempts: int
    appended: bool


async def append_result(target: ResultTarget, output: ToolOutput) -> AppendOutcome:
    """Fitted; fitted after one compaction; the pointer alone."""
    fitted = output.fitted(await target.room_tokens())
    if fitted is not None and await target.try_append(fitted):
        return AppendOutcome(fitted, 1, True)
    await target.compact()
    fitted = output.fitted(await target.room_tokens())
    if fitted is not None and await target.try_append(fitted):
        return AppendOutcome(fitted, 2, True)
    pointer = output.pointer_only()
    return AppendOutcome(pointer, bounds.RESULT_APPEND_TRIES, await target.try_append(pointer))

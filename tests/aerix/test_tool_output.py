"""Tool output caps: cut to the cap with a pointer, the original spooled once, fitted to the
room, then compaction, then the pointer alone."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from aerix.adapters.sessions.spool import spool_dir, write_spool
from aerix.app.agent.tool_output import ToolOutput, append_result, cut_to_bytes, pointer_line

POINTER = re.compile(r'\[truncated: (\d+) more bytes; read with read\(path="(.+)", offset=1\)\]$')


class CountingSpool:
    """The real session spool (beside a session log in ``folder``), counting its writes."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / "session.jsonl"
        self.folder = spool_dir(self.log)
        self.writes = 0

    def write_spool(self, name: str, text: str) -> Path:
        self.writes += 1
        return write_spool(self.log, name, text)


def numbered(lines: int) -> str:
    return "".join(f"line {n:04d}\n" for n in range(lines))  # 10 bytes a line


def test_a_result_within_its_cap_is_left_whole(tmp_path: Path) -> None:
    spool = CountingSpool(tmp_path)
    output = ToolOutput("small", cap_bytes=100, spool=spool, spool_name="a1.c1")
    assert output.capped() == "small" and output.fitted(room_tokens=10) == "small"
    assert spool.writes == 0


def test_a_long_result_is_cut_to_its_cap_with_a_pointer_to_the_whole(tmp_path: Path) -> None:
    spool = CountingSpool(tmp_path / "spool")
    text = numbered(100)
    output = ToolOutput(text, cap_bytes=300, spool=spool, spool_name="a1.c3")
    capped = output.capped()
    assert len(capped.encode()) <= 300
    head, last = capped.rsplit("\n", 1)
    match = POINTER.match(last)
    assert match is not None
    assert text.startswith(head + "\n")
    assert int(match.group(1)) == len(text) - len(head) - 1
    assert Path(match.group(2)) == spool.folder / "a1.c3.txt"
    assert Path(match.group(2)).read_text() == text
    output.capped()
    output.fitted(10)
    output.pointer_only()
    assert spool.writes == 1  # written once, whatever is asked after


def test_fitting_uses_three_bytes_a_token(tmp_path: Path) -> None:
    output = ToolOutput(numbered(100), cap_bytes=10_000, spool=CountingSpool(tmp_path), spool_name="a1.c4")
    assert output.fitted(room_tokens=400) == numbered(100)  # 1000 bytes <= 1200
    fitted = output.fitted(room_tokens=100)
    assert fitted is not None and len(fitted.encode()) <= 300 and POINTER.search(fitted)
    assert output.fitted(room_tokens=5) is None  # not even the pointer fits in 15 bytes


def test_cut_to_bytes_keeps_whole_characters_and_lines() -> None:
    assert cut_to_bytes("ééé", 3) == "é"
    assert cut_to_bytes("abc\ndefgh", 7) == "abc\n"
    assert cut_to_bytes("abcdefgh\nij", 7) == "abcdefg"


@dataclass
class FakeContext:
    """An in-memory stand-in for the loop's context: a room in tokens, appends that fit or not."""

    room: list[int]
    fits_after_compaction: bool
    appended: list[str] = field(default_factory=list)
    compactions: int = 0

    async def room_tokens(self) -> int:
        return self.room[min(self.compactions, len(self.room) - 1)]

    async def try_append(self, text: str) -> bool:
        fits = len(text.encode()) <= await self.room_tokens() * 3
        if fits:
            self.appended.append(text)
        return fits

    async def compact(self) -> None:
        self.compactions += 1


def test_append_tries_fitted_then_after_compaction_then_the_pointer(tmp_path: Path) -> None:
    spool = CountingSpool(tmp_path)

    def attempt(room: list[int]) -> tuple[int, str, FakeContext]:
        output = ToolOutput(numbered(200), cap_bytes=1500, spool=spool, spool_name="a1.c5")
        target = FakeContext(room, fits_after_compaction=True)
        outcome = anyio.run(append_result, target, output)
        return outcome.attempts, outcome.text, target

    attempts, text, target = attempt([1000])
    assert attempts == 1 and target.compactions == 0 and len(text.encode()) <= 1500
    attempts, text, target = attempt([10, 200])
    assert attempts == 2 and target.compactions == 1 and len(text.encode()) <= 600
    attempts, text, target = attempt([10, 10])
    assert attempts == 3 and POINTER.match(text) and target.appended == []


def test_pointer_line_format(tmp_path: Path) -> None:
    assert (
        pointer_line(12, tmp_path / "x.txt")
        == f'[truncated: 12 more bytes; read with read(path="{tmp_path}/x.txt", offset=1)]'
    )

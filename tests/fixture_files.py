"""The data files the tests read. They live in the repository, under ``tests/fixtures/``, so that
``scripts/test`` passes on a plain clone: no test reaches outside the repository for data.
Where each file comes from, and under which licence, is in the PROVENANCE.md beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES_ROOT = Path(__file__).resolve().parent / "fixtures"

#: The real Claude Code transcripts the import tests read (tests/fixtures/claude-code/).
CLAUDE_CODE_TRANSCRIPTS = (
    "mixed-versions-samples.jsonl",
    "spotter_compact.jsonl",
    "spotter_main.jsonl",
    "spotter_sub.jsonl",
)


def fixture_folder(name: str, required: tuple[str, ...]) -> Path:
    """``tests/fixtures/<name>``, checked to hold every file in ``required``. A missing file fails
    loudly, naming what is missing, rather than leaving an empty folder that turns every later
    assertion over its contents into one about nothing."""
    folder = FIXTURES_ROOT / name
    missing = [file for file in required if not (folder / file).is_file()]
    if missing:
        pytest.fail(
            f"test data missing: {folder} lacks {', '.join(missing)}; these files are part of the "
            "repository (restore them with `git checkout -- tests/fixtures`)",
            pytrace=False,
        )
    return folder


def claude_code_transcripts() -> Path:
    """The folder of real Claude Code transcripts, checked to be complete."""
    return fixture_folder("claude-code", CLAUDE_CODE_TRANSCRIPTS)

"""The tests' data files: inside the repository, complete, and each with its provenance."""

from __future__ import annotations

import pytest

from tests.fixture_files import (
    CLAUDE_CODE_TRANSCRIPTS,
    FIXTURES_ROOT,
    claude_code_transcripts,
    fixture_folder,
)


def test_a_missing_data_file_fails_the_test_naming_it() -> None:
    missing = r"^test data missing: .*claude-code lacks absent\.jsonl; "
    with pytest.raises(pytest.fail.Exception, match=missing):
        fixture_folder("claude-code", ("spotter_main.jsonl", "absent.jsonl"))


def test_a_missing_data_folder_fails_the_same_way() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"^test data missing: .*no-such-folder lacks a\.jsonl"):
        fixture_folder("no-such-folder", ("a.jsonl",))


def test_every_claude_code_transcript_is_required_and_has_its_provenance() -> None:
    folder = claude_code_transcripts()
    assert folder.is_relative_to(FIXTURES_ROOT.parent)  # inside tests/, so inside the repository
    present = sorted(path.name for path in folder.glob("*.jsonl"))
    assert present == sorted(CLAUDE_CODE_TRANSCRIPTS)
    provenance = (folder / "PROVENANCE.md").read_text()
    for name in present:
        assert f"`{name}`" in provenance, f"{name} is not in {folder / 'PROVENANCE.md'}"
    licences = ("marot/spotter**: MIT", "daaain/claude-code-log**: MIT", "claude-parser**: **no licence")
    assert all(licence in provenance for licence in licences)

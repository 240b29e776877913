"""``aerix import claude`` on the real Claude Code transcripts in tests/fixtures/claude-code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aerix.adapters.claude.claude_import import convert, first_cwd
from aerix.adapters.claude.claude_read import read_sessions, transcript_files
from aerix.adapters.project.project_key import project_key
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.importing import ImportOutcome, import_session
from aerix.app.sessions.queries import load_for_resume
from aerix.domain import events as ev
from aerix.errors import SessionNotResumable
from aerix.projections.transcript import ClaudeTranscript
from tests.fixture_files import claude_code_transcripts

FIXTURES = claude_code_transcripts()


def _import(files: SessionFiles, paths: list[Path]) -> list[ImportOutcome]:
    outcomes = []
    for session in read_sessions(transcript_files(paths)).values():
        cwd = first_cwd(session)
        outcomes.append(import_session(files, convert(session, project_key(Path(cwd)), "0.1.0")))
    return outcomes


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[SessionFiles, list[ImportOutcome]]:
    files = SessionFiles(tmp_path_factory.mktemp("sessions"))
    return files, _import(files, [FIXTURES])


def _source_records() -> dict[str, list[dict[str, Any]]]:
    """The fixtures' records by session. The samples file repeats some records of the full
    transcript, cut short: a record (by uuid) counts once, in its longest copy."""
    by_uuid: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if isinstance(record.get("sessionId"), str) and isinstance(record.get("uuid"), str):
                key = (record["sessionId"], record["uuid"])
                if key not in by_uuid or len(line) > by_uuid[key][0]:
                    by_uuid[key] = (len(line), record)
    by_session: dict[str, list[dict[str, Any]]] = {}
    for (session, _), (_, record) in by_uuid.items():
        by_session.setdefault(session, []).append(record)
    return by_session


def _contents(records: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Every user prompt, assistant text, tool call id and tool result id in some records."""
    found: dict[str, set[str]] = {"prompts": set(), "texts": set(), "calls": set(), "results": set()}
    for record in records:
        message = record.get("message")
        if not isinstance(message, dict) or record.get("type") not in ("user", "assistant"):
            continue
        content = message.get("content")
        if record["type"] == "user" and isinstance(content, str) and not record.get("isMeta"):
            found["prompts"].add(content)
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "text" and record["type"] == "assistant":
                found["texts"].add(block["text"])
            elif block.get("type") == "tool_use":
                found["calls"].add(block["id"])
            elif block.get("type") == "tool_result":
                found["results"].add(block["tool_use_id"])
    return found


def test_every_fixture_session_is_imported_tagged_claude_code(
    imported: tuple[SessionFiles, list[ImportOutcome]],
) -> None:
    files, outcomes = imported
    assert {o.session for o in outcomes} == set(_source_records())
    assert all(o.state == "new" and not o.problems for o in outcomes)
    for outcome in outcomes:
        entry = files.views.load_index(outcome.project)[outcome.session]
        assert entry["tags"] == ["claude-code"] and entry["state"] == "imported"
    versions = {r.get("version") for records in _source_records().values() for r in records}
    assert {"1.0.89", "2.0.46", "2.1.39"} <= versions


def test_the_transcript_projection_keeps_prompts_texts_calls_and_results(
    imported: tuple[SessionFiles, list[ImportOutcome]],
) -> None:
    files, outcomes = imported
    sources = _source_records()
    for outcome in outcomes:
        transcript = ClaudeTranscript()
        transcript.feed(files.log.read(files.catalog.find(outcome.session)))
        every = [*transcript.records, *(r for records in transcript.subagents.values() for r in records)]
        kept, wanted = _contents(every), _contents(sources[outcome.session])
        for kind in ("prompts", "calls", "results"):
            assert wanted[kind] <= kept[kind], (outcome.session, kind, wanted[kind] - kept[kind])
        # The text blocks of one response become one text, joined by blank lines.
        lost = [text for text in wanted["texts"] if not any(text in whole for whole in kept["texts"])]
        assert lost == [], outcome.session
    main = next(o for o in outcomes if o.session.startswith("4d5611e5"))
    records = files.log.read(files.catalog.find(main.session))
    spawns = [r for r in records if isinstance(r, ev.AgentSpawn) and r.kind == "implementer"]
    assert {s.agent for s in spawns} >= {"a1.a2898e3", "a1.acompact-e1f845"}
    assert next(s for s in spawns if s.agent == "a1.a2898e3").call == "toolu_017pLRuPHYTX5t99EnLyV53m"
    assert any(isinstance(r, ev.Compaction) and r.tokens_before == 170251 for r in records)


def test_importing_again_changes_nothing(imported: tuple[SessionFiles, list[ImportOutcome]]) -> None:
    files, first = imported
    logs = {o.session: files.catalog.find(o.session).log.read_bytes() for o in first}
    again = _import(files, [FIXTURES])
    assert {o.state for o in again} == {"unchanged"}
    assert {o.session: files.catalog.find(o.session).log.read_bytes() for o in again} == logs


def test_an_unreadable_line_is_reported_and_kept(tmp_path: Path) -> None:
    source = tmp_path / "claude" / "proj"
    source.mkdir(parents=True)
    lines = (FIXTURES / "mixed-versions-samples.jsonl").read_text().splitlines()[21:]  # the 1.0.89 session
    broken = [
        *lines[:3],
        '{"type":"assistant", "message": truncated',
        '{"type":"brand-new-kind"}',
        *lines[3:],
    ]
    (source / "s.jsonl").write_text("\n".join(broken) + "\n")
    files = SessionFiles(tmp_path / "store")
    (outcome,) = _import(files, [tmp_path / "claude"])
    assert [p.split(": ", 1)[0] for p in outcome.problems] == [
        f"{source / 's.jsonl'}:4",
        f"{source / 's.jsonl'}:5",
    ]
    assert "unknown record type 'brand-new-kind'" in outcome.problems[1]
    foreign = [r for r in files.log.read(files.catalog.find(outcome.session)) if isinstance(r, ev.Foreign)]
    assert [(f.line, f.raw) for f in foreign] == [(4, broken[3]), (5, broken[4])]


def test_a_grown_source_replaces_the_import(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    lines = (FIXTURES / "mixed-versions-samples.jsonl").read_text().splitlines()[21:]
    source.write_text("\n".join(lines[:4]) + "\n")
    files = SessionFiles(tmp_path / "store")
    (first,) = _import(files, [source])
    source.write_text("\n".join(lines) + "\n")
    (second,) = _import(files, [source])
    assert (first.state, second.state) == ("new", "updated") and second.events > first.events
    assert files.views.load_index(second.project)[second.session]["events"] == second.events


def test_a_shorter_copy_of_an_imported_session_does_not_replace_it(tmp_path: Path) -> None:
    """The samples file repeats a few lines of the full spotter transcript: importing it after the
    full one keeps the full import (Claude Code transcripts only grow) and says so in one line."""
    files = SessionFiles(tmp_path / "store")
    (full,) = _import(files, [FIXTURES / "spotter_main.jsonl"])
    ref = files.catalog.find(full.session)
    before = ref.log.read_bytes()
    outcomes = {o.session: o for o in _import(files, [FIXTURES / "mixed-versions-samples.jsonl"])}
    partial = outcomes[full.session]
    assert partial.state == "kept" and partial.events == full.events and ref.log.read_bytes() == before
    assert partial.note is not None and f"aerix sessions rm {full.session}" in partial.note
    assert files.views.load_index(full.project)[full.session]["events"] == full.events


def test_imported_sessions_cannot_be_resumed(imported: tuple[SessionFiles, list[ImportOutcome]]) -> None:
    files, outcomes = imported
    with pytest.raises(SessionNotResumable):
        load_for_resume(files, outcomes[0].session)


def test_subagent_files_in_claude_code_s_folder_layout(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-USER-projects-spotter"
    session_id = "4d5611e5-241a-462a-8d15-5122611a9569"
    (project / session_id / "subagents").mkdir(parents=True)
    shutil.copy(FIXTURES / "spotter_main.jsonl", project / f"{session_id}.jsonl")
    shutil.copy(FIXTURES / "spotter_sub.jsonl", project / session_id / "subagents" / "agent-a2898e3.jsonl")
    files = SessionFiles(tmp_path / "store")
    (outcome,) = _import(files, [tmp_path / "projects"])
    agents = {r.agent for r in files.log.read(files.catalog.find(session_id)) if isinstance(r, ev.AgentSpawn)}
    assert agents == {"a1", "a1.a2898e3"}
    assert outcome.problems == []


def test_each_response_keeps_its_ids_and_counts_its_usage_once(
    imported: tuple[SessionFiles, list[ImportOutcome]],
) -> None:
    """Claude Code repeats a response's usage on each of its lines (and tool results can split
    those lines apart): the import counts it once, from the line with the most output tokens,
    and keeps message.id, requestId and the cache figures for the transcript."""
    files, outcomes = imported
    for outcome in outcomes:
        sources = _source_records()[outcome.session]
        best: dict[str, dict[str, Any]] = {}
        requests: dict[str, str] = {}
        for record in sources:
            message = record.get("message")
            if record.get("type") == "assistant" and isinstance(message, dict) and "usage" in message:
                if (
                    message["id"] not in best
                    or message["usage"]["output_tokens"] >= best[message["id"]]["output_tokens"]
                ):
                    best[message["id"]] = message["usage"]
                requests[message["id"]] = record.get("requestId")
        turns = [
            r
            for r in files.log.read(files.catalog.find(outcome.session))
            if isinstance(r, ev.Message) and r.role == "assistant"
        ]
        counted = [turn for turn in turns if turn.usage is not None]
        assert sorted(turn.message_id or "" for turn in counted) == sorted(best), outcome.session
        for turn in counted:
            usage, original = turn.usage, best[turn.message_id or ""]
            assert usage is not None and turn.request_id == requests[turn.message_id or ""]
            assert usage.completion_tokens == original["output_tokens"]
            assert usage.recomputed_from == original.get("cache_read_input_tokens", 0)
            assert usage.cache_creation_tokens == original.get("cache_creation_input_tokens", 0)
            assert usage.prompt_tokens == (
                original["input_tokens"]
                + original.get("cache_creation_input_tokens", 0)
                + original.get("cache_read_input_tokens", 0)
            )
        # A response split by tool results is more than one message, all with its ids.
        assert {turn.message_id for turn in turns} == set(best)
    main = next(o for o in outcomes if o.session.startswith("4d5611e5"))
    main_turns = [
        r
        for r in files.log.read(files.catalog.find(main.session))
        if isinstance(r, ev.Message) and r.usage is None
    ]
    assert any(turn.role == "assistant" for turn in main_turns)  # the fixture has split responses

    # The transcript gives each response's usage on one record: summed, it is the original's.
    transcript = ClaudeTranscript()
    transcript.feed(files.log.read(files.catalog.find(main.session)))
    every = [*transcript.records, *(r for records in transcript.subagents.values() for r in records)]
    with_usage = [r["message"] for r in every if r["type"] == "assistant" and "usage" in r["message"]]
    assert sorted(message["id"] for message in with_usage) == sorted(
        {r["message"]["id"] for r in _source_records()[main.session] if r.get("type") == "assistant"}
    )
    assert all(message["model"].startswith("claude-") for message in with_usage)

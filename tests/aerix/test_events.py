"""The event models, their schemas, the Session aggregate and the layering rules."""

from __future__ import annotations

import ast
import json
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest

from aerix.adapters.sessions.jsonl_lines import decode_record, encode_record
from aerix.adapters.sessions.jsonl_store import SessionLogFolder
from aerix.domain import events as ev
from aerix.domain.session import Session, replay
from aerix.errors import SessionBusy
from tests.aerix.session_streams import T0, start_session

PACKAGE = Path(__file__).resolve().parents[2] / "aerix"
DOCS_SCHEMAS = PACKAGE.parent / "docs" / "schemas"


def test_every_spec_event_type_has_a_model() -> None:
    spec_types = {
        "session.start",
        "route",
        "agent.spawn",
        "segment",
        "message",
        "context.op",
        "compaction",
        "plan",
        "job",
        "hook",
        "agent.end",
        "session.end",
    }
    assert spec_types <= set(ev.BY_TYPE)
    agent_scoped = {name for name, cls in ev.BY_TYPE.items() if "agent" in cls.model_fields}
    assert agent_scoped >= {
        "agent.spawn",
        "segment",
        "message",
        "context.op",
        "compaction",
        "plan",
        "job",
        "agent.end",
    }


def test_the_aggregate_takes_time_from_its_caller_and_numbers_events() -> None:
    session = start_session()
    later = T0 + timedelta(minutes=5)
    record = session.record(ev.Plan, later, agent="a1", text="p")
    assert (record.seq, record.time, record.v) == (2, later, ev.SCHEMA_VERSION)
    assert session.version == 2
    rebuilt = replay(session.take_new_records())
    assert rebuilt is not None and rebuilt.version == 2 and rebuilt.start is not None
    assert rebuilt.start.prompt == "fix the bug"


def test_an_event_is_written_as_its_own_json_line() -> None:
    session = Session.begin(T0, session="x", cwd="/", project="p", model="m", prompt="hi", aerix_version="0")
    (created,) = session.take_new_records()
    assert created is session.start  # the aggregate's event is the record itself
    encoded = encode_record(created)
    assert encoded.record is created and not encoded.replaced
    assert encoded.line.startswith(b'{"type":"session.start","seq":1,') and encoded.line.endswith(b"}\n")
    assert json.loads(encoded.line) == {
        "type": "session.start",
        "seq": 1,
        "time": "2026-01-02T03:04:05Z",
        "v": ev.SCHEMA_VERSION,
        "session": "x",
        "cwd": "/",
        "project": "p",
        "model": "m",
        "prompt": "hi",
        "aerix_version": "0",
        "request": 1,
        "resumed": False,
        "tags": [],
    }
    assert decode_record(encoded.line) == created


def test_upcasting_runs_each_step_from_the_line_s_version() -> None:
    v1 = {
        "type": "message",
        "seq": 4,
        "time": 0,
        "agent": "a1",
        "role": "assistant",
        "text": "{}",
        "usage": {"prompt": 3, "completion": 1},
    }
    record = ev.parse_event(dict(v1))  # no "v": a version-1 line
    assert isinstance(record, ev.Message) and record.v == ev.SCHEMA_VERSION
    assert record.usage == ev.Usage(prompt_tokens=3, completion_tokens=1)
    with pytest.raises(ev.UnknownSchemaVersion):
        ev.parse_event({**v1, "v": ev.SCHEMA_VERSION + 1})


def test_session_start_keeps_what_startup_loaded_and_reads_lines_written_without_it() -> None:
    """``loaded`` is optional within v2: a line written before it reads as null, one with it
    round-trips and is valid under the exported schema."""
    before = {
        "type": "session.start",
        "seq": 1,
        "time": "2026-01-02T03:04:05Z",
        "v": 2,
        "session": "x",
        "cwd": "/",
        "project": "p",
        "model": "m",
        "prompt": "hi",
        "aerix_version": "0",
    }
    old = ev.parse_event(dict(before))
    assert isinstance(old, ev.SessionStart) and old.loaded is None
    loaded = {
        "instruction_files": ["/r/CLAUDE.md"],
        "skills": ["deploy"],
        "agents": ["reviewer"],
        "plugins": ["helper"],
        "hooks": ["PreToolUse (1)"],
    }
    line = json.loads(ev.parse_event({**before, "loaded": loaded}).model_dump_json(exclude_none=True))
    assert line["loaded"] == loaded
    jsonschema.validate(line, ev.event_json_schemas()["session.start"])
    jsonschema.validate(line, ev.union_json_schema())


def test_each_exported_schema_validates_its_event_and_rejects_others() -> None:
    schemas = ev.event_json_schemas()
    session = start_session()
    plan = session.record(ev.Plan, T0, agent="a1", text="p")
    line = json.loads(plan.model_dump_json(exclude_none=True))
    jsonschema.validate(line, schemas["plan"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(line, schemas["segment"])


def test_the_schemas_in_docs_match_the_models() -> None:
    """docs/schemas is what `aerix sessions schema --out docs/schemas` writes."""
    for name, schema in [*ev.event_json_schemas().items(), ("event", ev.union_json_schema())]:
        assert json.loads((DOCS_SCHEMAS / f"{name}.schema.json").read_text()) == schema, name


def test_a_batch_with_a_seq_not_after_the_log_s_last_is_refused_whole(tmp_path: Path) -> None:
    """Such a batch is another writer's: nothing of it is written."""
    folder = SessionLogFolder(tmp_path)
    session = start_session()
    encoded = [encode_record(e) for e in session.take_new_records()]
    folder.append("s-random", encoded)
    written = folder.log_path("s-random").read_bytes()
    later = encode_record(session.record(ev.Plan, T0, agent="a1", text="p"))
    with pytest.raises(SessionBusy, match="another writer appended to it"):
        folder.append("s-random", [later, *encoded])
    assert folder.log_path("s-random").read_bytes() == written
    folder.close()


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        ("domain", {"aerix.domain", "pydantic", "eventsourcing.domain", "eventsourcing.utils"}),
        ("projections", {"aerix.domain", "aerix.projections"}),
    ],
)
def test_the_pure_layers_import_no_io(package: str, allowed: set[str]) -> None:
    mine = {
        "domain": [*(f"events/{p.name}" for p in (PACKAGE / "domain" / "events").glob("*.py")), "session.py"],
        "projections": [p.name for p in (PACKAGE / "projections").glob("*.py")],
    }
    stdlib_ok = {
        "__future__",
        "abc",
        "collections",
        "contextlib",
        "dataclasses",
        "datetime",
        "functools",
        "typing",
        "uuid",
        "json",
        "gc",
        "re",
    }
    for name in mine[package]:
        tree = ast.parse((PACKAGE / package / name).read_text())
        for node in ast.walk(tree):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            for module in modules:
                root = module.split(".")[0]
                assert root in stdlib_ok or any(module.startswith(a) for a in allowed), (
                    f"{package}/{name}: {module}"
                )

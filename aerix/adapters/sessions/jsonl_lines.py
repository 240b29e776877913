"""A session event as one line of its log, and back.

``PlainJSONMapper`` turns a session's records into eventsourcing's stored events whose state
is the record's own JSON line (plain JSON, the ``type`` as the topic, the ``seq`` as the
version); ``encode_line`` writes a stored event as its line (an envelope with the state in
base64 when the state is not such a line) and ``state_of`` reads it back; ``parse_header``
reads a line's ``type`` and ``seq`` without decoding the rest; ``decode_record`` and
``decode_records`` validate and upcast, ``decode_checked`` says which line is bad and why.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eventsourcing.persistence import StoredEvent
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from aerix.domain import events as ev
from aerix.errors import SessionLogCorrupt, SessionSchemaTooNew

_HEADER = re.compile(rb'\{"type":"([^"\\]+)","seq":(\d+)[,}]')
_CURRENT_V = f',"v":{ev.SCHEMA_VERSION},'.encode()


class PlainJSONMapper:
    """Session records → stored events whose state is the record's own JSON line.

    Text that cannot be UTF-8 (a lone surrogate: a file name or an argument with bytes that are
    not UTF-8, as Python hands them over) cannot be a JSON line; such an event is stored with
    U+FFFD in each such place rather than not at all, and ``replaced`` keeps (seq, type) of each
    for the store's notice."""

    def __init__(self) -> None:
        self.replaced: list[tuple[int, str]] = []

    def to_stored_event(self, session_id: str, record: ev.EventBase) -> StoredEvent:
        return self.written(session_id, record)[0]

    def written(self, session_id: str, record: ev.EventBase) -> tuple[StoredEvent, ev.EventBase]:
        """The stored event for ``record``, and the record as its line says: itself, or a copy
        with U+FFFD for each lone surrogate (what a reader of the log will see)."""
        try:
            state = record.model_dump_json(exclude_none=True).encode()
        except PydanticSerializationError:
            self.replaced.append((record.seq, record.type))
            record = type(record).model_validate(_without_surrogates(record.model_dump()))
            state = record.model_dump_json(exclude_none=True).encode()
        return StoredEvent(session_id, record.seq, record.type, state), record


_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    """``value`` (plain data from ``model_dump``) with each lone surrogate in its text as U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(key): _without_surrogates(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_surrogates(item) for item in value]
    return value


def decode_record(line: bytes) -> ev.EventBase:
    """One line → its validated, upcast record. Raises ValueError (ValidationError is one)."""
    if line.find(_CURRENT_V, 0, 96) > 0:
        # The common case: written by this schema version; pydantic parses the bytes itself.
        return ev.event_adapter().validator.validate_json(line)
    decoded = json.loads(line)
    if not isinstance(decoded, dict):
        raise ValueError("a line must be a JSON object")
    return ev.parse_event(decoded)


def decode_records(raw_lines: list[bytes]) -> list[ev.EventBase]:
    """Many lines → their records, in order. Raises ValueError at the first bad line (without
    saying which: ``decode_checked`` line by line does)."""
    # The fast path: current lines go straight to pydantic's validator, no call per line.
    validate_json = ev.event_adapter().validator.validate_json
    return [
        validate_json(raw) if raw.find(_CURRENT_V, 0, 96) > 0 else decode_record(raw) for raw in raw_lines
    ]


@dataclass(frozen=True)
class Line:
    number: int
    seq: int
    topic: str
    raw: bytes


def encode_line(stored: StoredEvent) -> bytes:
    state = stored.state
    expected = b'{"type":"%s","seq":%d,' % (stored.topic.encode(), stored.originator_version)
    if state.startswith(expected) and b"\n" not in state:
        return state + b"\n"
    envelope = {
        "type": stored.topic,
        "seq": stored.originator_version,
        "state_b64": base64.b64encode(state).decode(),
    }
    return json.dumps(envelope, separators=(",", ":")).encode() + b"\n"


def state_of(line: Line) -> bytes:
    if b'"state_b64":' in line.raw:
        decoded = json.loads(line.raw)
        if isinstance(decoded, dict) and "state_b64" in decoded:
            return base64.b64decode(decoded["state_b64"])
    return line.raw


def parse_header(raw: bytes, path: Path, number: int) -> Line:
    match = _HEADER.match(raw)
    if match:
        return Line(number, int(match.group(2)), match.group(1).decode(), raw)
    try:
        decoded = json.loads(raw)
    except ValueError as exc:
        raise SessionLogCorrupt(str(path), number, f"not JSON: {exc}") from exc
    if not isinstance(decoded, dict) or not isinstance(decoded.get("seq"), int) or "type" not in decoded:
        raise SessionLogCorrupt(str(path), number, "no type and seq")
    return Line(number, decoded["seq"], str(decoded["type"]), raw)


def decode_checked(raw: bytes, number: int, path: Path) -> ev.EventBase:
    try:
        return decode_record(raw)
    except ev.UnknownSchemaVersion as exc:
        version = exc.version if isinstance(exc.version, int) else -1
        raise SessionSchemaTooNew(str(path), number, version, ev.SCHEMA_VERSION) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SessionLogCorrupt(str(path), number, f"{where}: {first['msg']}") from exc
    except ValueError as exc:
        raise SessionLogCorrupt(str(path), number, str(exc)) from exc

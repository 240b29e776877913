"""A session event as one line of its log, and back.

``encode_record`` writes a record as its own JSON line (``type`` first, then ``seq``: the
header ``seq_of`` reads without decoding the rest); ``decode_record`` and ``decode_records``
validate and upcast, ``decode_checked`` says which line is bad and why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from aerix.domain import events as ev
from aerix.errors import SessionLogCorrupt, SessionSchemaTooNew

_HEADER = re.compile(rb'\{"type":"([^"\\]+)","seq":(\d+)[,}]')
_CURRENT_V = f',"v":{ev.SCHEMA_VERSION},'.encode()


@dataclass(frozen=True)
class EncodedRecord:
    """A record as its log line (newline included), and the record as that line says: itself,
    or a copy with U+FFFD for each lone surrogate (``replaced``), which is what a reader of the
    log will see."""

    line: bytes
    record: ev.EventBase
    replaced: bool


def encode_record(record: ev.EventBase) -> EncodedRecord:
    """``record`` as its line. Text that cannot be UTF-8 (a lone surrogate: a file name or an
    argument with bytes that are not UTF-8, as Python hands them over) cannot be a JSON line;
    such a record is written with U+FFFD in each such place rather than not at all."""
    try:
        return EncodedRecord(record.model_dump_json(exclude_none=True).encode() + b"\n", record, False)
    except PydanticSerializationError:
        cleaned = type(record).model_validate(_without_surrogates(record.model_dump()))
        return EncodedRecord(cleaned.model_dump_json(exclude_none=True).encode() + b"\n", cleaned, True)


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


def seq_of(raw: bytes, path: Path, number: int) -> int:
    """The ``seq`` of line ``number`` of the log at ``path``, read from its header when it has
    the usual one."""
    match = _HEADER.match(raw)
    if match:
        return int(match.group(2))
    try:
        decoded = json.loads(raw)
    except ValueError as exc:
        raise SessionLogCorrupt(str(path), number, f"not JSON: {exc}") from exc
    if not isinstance(decoded, dict) or not isinstance(decoded.get("seq"), int) or "type" not in decoded:
        raise SessionLogCorrupt(str(path), number, "no type and seq")
    return decoded["seq"]


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

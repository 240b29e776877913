"""Checks a tool call's input against its input schema, for turns that were not constrained.

Only the schema features the tool catalogue uses are understood: object with properties,
required and additionalProperties false; string, integer, boolean, array of strings; enum,
minimum, maximum. The messages are written for the model to read and fix its call.

``maxLength`` is left to the JSON constraint, which bounds what a constrained member can write;
an unconstrained turn is not refused for a long name (the tool says what is wrong with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TYPE_NAMES = {
    "string": "a string",
    "integer": "a whole number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def input_problem(tool_input: Any, schema: Mapping[str, Any]) -> str | None:
    """What is wrong with ``tool_input`` for ``schema``, or None when it is valid."""
    if not isinstance(tool_input, dict):
        return "input must be a JSON object"
    properties: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
    for field in schema.get("required", ()):
        if field not in tool_input:
            return f"'{field}' is required"
    for field, value in tool_input.items():
        if field not in properties:
            allowed = ", ".join(properties) or "none"
            return f"unknown field '{field}' (fields: {allowed})"
        problem = _value_problem(value, properties[field])
        if problem:
            return f"'{field}' {problem}"
    return None


def _value_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    if "const" in schema and value != schema["const"]:
        return f"must be {schema['const']!r}"
    if "enum" in schema:
        if value not in schema["enum"]:
            return "must be one of " + ", ".join(str(choice) for choice in schema["enum"])
        return None
    kind = schema.get("type")
    if kind is not None and not _has_type(value, kind):
        return f"must be {_TYPE_NAMES.get(kind, kind)}"
    if kind == "integer":
        if "minimum" in schema and value < schema["minimum"]:
            return f"must be at least {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"must be at most {schema['maximum']}"
    if kind == "array" and "items" in schema:
        for item in value:
            problem = _value_problem(item, schema["items"])
            if problem:
                return f"items {problem}"
    if kind == "object":
        return input_problem(value, schema)
    return None


def _has_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    checks: dict[str, type | tuple[type, ...]] = {
        "string": str,
        "boolean": bool,
        "array": list,
        "object": dict,
        "number": (int, float),
    }
    expected = checks.get(kind)
    return expected is None or isinstance(value, expected)

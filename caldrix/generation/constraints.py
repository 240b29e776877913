"""Protocol constraints compiled into llguidance grammars.

A ``generate`` request may carry one constraint, a map with one key:

- ``{"json": <schema>}``: one JSON value valid against the schema, written with ``json.dumps``
  separators and no whitespace before or after it (see :data:`JSON_DEFAULTS`).
- ``{"one_of": ["answer", "edit", ...]}``: exactly one of the strings.
- ``{"regex": "<pattern>"}``: text matching the whole pattern (Rust ``regex`` syntax).
- ``{"lark": "<grammar>"}``: llguidance's Lark dialect.

:func:`compile_constraint` checks the grammar against the model's tokenizer once and returns a
factory of fresh matchers; anything that does not compile is :class:`ConstraintInvalid`
carrying llguidance's own reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import llguidance
from llguidance import LLMatcher, LLTokenizer

from caldrix.engine_seam import ALL_CONSTRAINTS, ConstraintKind
from caldrix.errors import ConstraintInvalid

#: JSON compile options applied before the schema's own ``x-guidance`` (which may override).
#: llguidance keeps ``oneOf`` only when it can prove the branches disjoint (a ``const``
#: discriminator, or ``additionalProperties: false`` with different required keys) and
#: otherwise refuses the schema. ``coerce_one_of`` turns such a ``oneOf`` into ``anyOf``, so a
#: schema like the spec's turn (``{thought, calls}`` or ``{thought, final}``, written without
#: ``additionalProperties: false``) still compiles. The price: output valid against *several*
#: branches is allowed (``{thought, calls, final}`` there). Schemas that must rule that out say
#: ``additionalProperties: false``; llguidance then proves the branches disjoint itself.
#:
#: Whitespace inside the value is fixed to Python ``json.dumps`` style (``", "`` and ``": "``,
#: no newlines). llguidance's own default allows any whitespace at every position, and a small
#: model then tends to spend its token budget on runs of newlines; the fixed separators are
#: also forced tokens, which the loop feeds in one batch. A schema may still choose otherwise
#: in its ``x-guidance``.
JSON_DEFAULTS: dict[str, Any] = {
    "coerce_one_of": True,
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
}


@dataclass(frozen=True)
class CompiledConstraint:
    """A validated grammar for one tokenizer; :meth:`matcher` makes a fresh matcher."""

    kind: ConstraintKind
    grammar: str
    tokenizer: LLTokenizer

    def matcher(self) -> LLMatcher:
        matcher = LLMatcher(self.tokenizer, self.grammar, log_level=0)
        if matcher.is_error():
            raise ConstraintInvalid(f"the {self.kind} constraint does not compile: {matcher.get_error()}")
        return matcher


def constraint_kind(constraint: Mapping[str, object]) -> ConstraintKind:
    """Which of the four kinds ``constraint`` is; one clear line when it is none of them."""
    keys = list(constraint)
    if len(keys) != 1 or keys[0] not in ALL_CONSTRAINTS:
        names = ", ".join(ALL_CONSTRAINTS)
        raise ConstraintInvalid(f"a constraint is a map with exactly one key of {names}; got {keys}")
    kind: ConstraintKind = keys[0]
    return kind


def compile_constraint(constraint: Mapping[str, object], tokenizer: LLTokenizer) -> CompiledConstraint:
    """Compile and validate ``constraint`` for ``tokenizer``."""
    kind = constraint_kind(constraint)
    grammar = _grammar(kind, constraint[kind])
    problem = LLMatcher.validate_grammar(grammar, tokenizer)
    if problem:
        raise ConstraintInvalid(f"the {kind} constraint does not compile: {_one_line(problem)}")
    return CompiledConstraint(kind=kind, grammar=grammar, tokenizer=tokenizer)


def _grammar(kind: ConstraintKind, value: object) -> str:
    if kind == "json":
        if not isinstance(value, dict | bool):
            raise ConstraintInvalid("a json constraint must be a JSON schema (an object)")
        try:
            schema = value if isinstance(value, dict) else json.dumps(value)
            return str(LLMatcher.grammar_from_json_schema(schema, defaults=cast(Any, JSON_DEFAULTS)))
        except ValueError as exc:
            raise ConstraintInvalid(f"the json constraint is not a usable schema: {exc}") from exc
    if kind == "one_of":
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise ConstraintInvalid("a one_of constraint must be a non-empty list of strings")
        if any(v == "" for v in value):
            raise ConstraintInvalid("a one_of constraint cannot offer the empty string")
        # The "choice" format writes a Lark alternation of exactly quoted literals.
        return str(llguidance.grammar_from("choice", json.dumps(value)))
    if not isinstance(value, str) or not value:
        raise ConstraintInvalid(f"a {kind} constraint must be a non-empty string")
    if kind == "regex":
        return str(LLMatcher.grammar_from_regex(value))
    return str(LLMatcher.grammar_from_lark(value))


def _one_line(message: str) -> str:
    return " ".join(message.split())

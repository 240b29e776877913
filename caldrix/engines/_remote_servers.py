"""What each kind of OpenAI-compatible server offers a remote member, found by asking it.

The OpenAI API itself has no tokenizer, but caldrix must count every context exactly, so a
server is only usable when it has a tokenizer endpoint of its own. Three shapes are known:

- llama-cpp-python's server: ``POST /extras/tokenize`` ``{"input", "model"}``. It always parses
  special tokens (its ``/v1/completions`` does the same with a prompt), and its completions take
  text prompts only, so the member sends the rendered prompt as text: what is counted is what
  the server evaluates. Constraints: ``json`` and ``one_of``, as GBNF grammars.
- llama.cpp's ``llama-server``: ``POST /tokenize`` ``{"content", "add_special", "parse_special"}``;
  ``GET /props`` gives its chat template and window. Prompts go as token ids.
- vLLM: ``POST /tokenize`` ``{"model", "prompt", "add_special_tokens"}``, which also reports
  ``max_model_len``. Prompts go as token ids.

Only the first runs on this project's machines (the tests start it); the other two are written
from their documented APIs and declare no constraints, so aerix parses and retries there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from caldrix.engine_seam import ConstraintKind
from caldrix.engines._http import HttpClient, Refused, Unreachable
from caldrix.errors import ConstraintInvalid

LLAMA_CPP_PYTHON = "llama-cpp-python"
LLAMA_SERVER = "llama.cpp server"
VLLM = "vLLM"


@dataclass(frozen=True)
class ServerKind:
    """One kind of server: how to tokenize on it and how to shape a completion for it."""

    name: str
    tokenize_path: str
    """The tokenizer endpoint, relative to the server's root (not to ``/v1``)."""
    parses_special_only: bool
    """Whether its tokenizer always turns the text of a special token into that token."""
    token_prompts: bool
    """Whether ``/v1/completions`` takes the prompt as token ids (else as text)."""
    constraints: tuple[ConstraintKind, ...]
    reports_cached: bool
    """Whether a completion reports how many prompt tokens it found cached."""

    def tokenize_body(self, model: str, text: str, special: bool) -> dict[str, Any]:
        if self.name == LLAMA_CPP_PYTHON:
            return {"input": text, "model": model}
        if self.name == LLAMA_SERVER:
            return {"content": text, "add_special": False, "parse_special": special}
        return {"model": model, "prompt": text, "add_special_tokens": False}

    def constraint_fields(self, constraint: dict[str, object] | None) -> dict[str, Any]:
        """The request fields that carry ``constraint``; refused when this server has none."""
        if constraint is None:
            return {}
        kind = next(iter(constraint))
        if kind not in self.constraints:
            offered = ", ".join(self.constraints) or "none"
            raise ConstraintInvalid(
                f"this member's server ({self.name}) takes no {kind} constraint (it takes: {offered})"
            )
        value = constraint[kind]
        if kind == "json":
            return {"grammar": json_schema_grammar(value)}
        assert kind == "one_of" and isinstance(value, list)
        return {"grammar": choice_grammar([str(option) for option in value])}

    def sampling_fields(self) -> dict[str, Any]:
        """Plain sampling, as caldrix's own loop does: no repetition penalty, no top-k/min-p
        cut (llama-cpp-python's completions default to a 1.1 penalty and top-k 40)."""
        if self.name in (LLAMA_CPP_PYTHON, LLAMA_SERVER):
            return {"top_p": 1.0, "top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}
        return {"top_p": 1.0}


KINDS: tuple[ServerKind, ...] = (
    ServerKind(LLAMA_CPP_PYTHON, "/extras/tokenize", True, False, ("json", "one_of"), False),
    ServerKind(LLAMA_SERVER, "/tokenize", False, True, (), True),
    ServerKind(VLLM, "/tokenize", True, True, (), True),
)


def probe_kind(root: HttpClient, model: str) -> tuple[ServerKind, list[int]] | None:
    """The first kind whose tokenizer answers on this server, with the tokens it gives for
    the empty text (what it adds to every text, a BOS say); None when no tokenizer answers."""
    for kind in KINDS:
        try:
            reply = root.post(kind.tokenize_path, kind.tokenize_body(model, "", True))
        except (Refused, Unreachable):
            continue
        tokens = reply.get("tokens") if isinstance(reply, dict) else None
        if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens):
            return kind, tokens
    return None


def json_schema_grammar(schema: object) -> str:
    """A JSON schema as the GBNF grammar llama.cpp servers take, through the converter that
    llama-cpp-python's own ``response_format`` uses. It allows no whitespace before the value
    and one optional space after it, which the member holds back."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        grammar = str(json_schema_to_gbnf(json.dumps(schema)))
    except Exception as exc:  # the converter raises bare Exceptions and KeyErrors
        raise ConstraintInvalid(f"the JSON schema cannot be turned into a grammar: {exc}") from exc
    return _NESTED_OPTIONAL_CHARS.sub(_bounded_repetition, grammar)


#: How the converter spells a string's ``maxLength``: one optional ``char`` nested in the next,
#: ``(char (char (char)?)?)?`` for 3. llama.cpp's grammar parser refuses that nesting past about
#: a thousand levels ("exceeds sane defaults"), so a path bounded at 1,024 characters would fail
#: every generation on the server; its own bounded repetition, ``char{0,3}``, means the same.
_NESTED_OPTIONAL_CHARS = re.compile(r"((?:\(char )+)\(char\)\?((?:\)\?)+)")


def _bounded_repetition(nested: re.Match[str]) -> str:
    optional = nested.group(1).count("(char ")
    closes = nested.group(2).count(")?")
    if closes < optional:  # not one chain of optional chars: leave it as written
        return nested.group(0)
    return f"char{{0,{optional + 1}}}" + ")?" * (closes - optional)


def choice_grammar(options: Sequence[str]) -> str:
    """GBNF accepting exactly one of ``options``."""
    if not options:
        raise ConstraintInvalid("a one_of constraint needs at least one string")
    return "root ::= " + " | ".join(_gbnf_literal(option) for option in options)


def _gbnf_literal(text: str) -> str:
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'

"""Request validation: every op parses, and bad requests name their field."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from caldrix.errors import BadRequest, InternalError, NoFit, UnknownOp
from caldrix.protocol.client import error_from_reply
from caldrix.protocol.messages import (
    AppendEdit,
    ContextEdit,
    DoneFrame,
    ErrorReply,
    Generate,
    MemberListResult,
    MemberLoad,
    MemberObject,
    RemoveEdit,
    ReplaceEdit,
)
from caldrix.protocol.parsing import REQUEST_OPS, parse_request, request_rid, validate_hello

SEGMENT = {"id": "s1", "role": "system", "text": "You are terse.", "pinned": True}

VALID_REQUESTS: list[dict[str, Any]] = [
    {"op": "member.list", "rid": 1},
    {"op": "member.load", "rid": 2, "name": "decision", "model": "smollm2-135m", "flags": {"ctx": 2048}},
    {"op": "member.unload", "rid": 3, "name": "decision"},
    {"op": "context.create", "rid": 4, "member": "main", "segments": [SEGMENT]},
    {"op": "context.edit", "rid": 5, "context": "c1", "edits": [
        {"op": "append", "segment": {"id": "u1", "role": "user", "text": "hi", "pinned": False}},
        {"op": "replace", "id": "s1", "text": "You are kind."},
        {"op": "remove", "id": "u1"},
    ]},
    {"op": "context.fork", "rid": 6, "context": "c1", "keep": 1},
    {"op": "context.get", "rid": 7, "context": "c1"},
    {"op": "context.drop", "rid": 8, "context": "c1"},
    {"op": "generate", "rid": 9, "context": "c1", "max_new_tokens": 8, "constraint": {"one_of": ["a", "b"]},
     "logprobs": 2, "temperature": 0.7, "seed": 1, "stop": ["</s>"],
     "append": {"id": "a1.m4", "pinned": False}},
    {"op": "pool.status", "rid": 10},
    {"op": "pool.stop", "rid": 11},
]  # fmt: skip


def test_every_op_has_a_valid_example() -> None:
    assert sorted(request["op"] for request in VALID_REQUESTS) == sorted(REQUEST_OPS)


@pytest.mark.parametrize("frame", VALID_REQUESTS, ids=lambda frame: frame["op"])
def test_valid_requests_parse(frame: dict[str, Any]) -> None:
    request = parse_request(frame)
    assert request.op == frame["op"]
    assert request.rid == frame["rid"]


def test_edits_parse_into_their_kinds() -> None:
    request = parse_request(VALID_REQUESTS[4])
    assert isinstance(request, ContextEdit)
    assert [type(edit) for edit in request.edits] == [AppendEdit, ReplaceEdit, RemoveEdit]


def test_constraint_and_append_parse() -> None:
    request = parse_request(VALID_REQUESTS[8])
    assert isinstance(request, Generate)
    assert request.constraint is not None
    assert request.constraint.as_dict() == {"one_of": ["a", "b"]}
    assert request.append is not None and request.append.id == "a1.m4"


def test_json_schema_constraint_keeps_its_schema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    request = parse_request(
        {"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 4, "constraint": {"json": schema}}
    )
    assert isinstance(request, Generate) and request.constraint is not None
    assert request.constraint.as_dict() == {"json": schema}


def test_member_load_flags_default_to_empty() -> None:
    request = parse_request({"op": "member.load", "rid": 1, "name": "x", "model": "m"})
    assert isinstance(request, MemberLoad) and request.flags == {}


def test_unknown_extra_fields_are_ignored() -> None:
    request = parse_request({"op": "pool.status", "rid": 1, "verbose": True})
    assert request.op == "pool.status"


def test_unknown_op_names_the_op() -> None:
    with pytest.raises(UnknownOp, match=r"unknown op 'pool\.explode'") as caught:
        parse_request({"op": "pool.explode", "rid": 1})
    assert caught.value.code == "unknown_op"


@pytest.mark.parametrize(
    ("frame", "field"),
    [
        ({"rid": 1}, "op"),
        ({"op": 5, "rid": 1}, "op"),
        ({"op": "member.list"}, "rid"),
        ({"op": "member.list", "rid": "1"}, "rid"),
        ({"op": "member.list", "rid": True}, "rid"),
        ({"op": "member.load", "rid": 1, "name": "x"}, "model"),
        ({"op": "context.create", "rid": 1, "member": "main", "segments": [{**SEGMENT, "role": "bot"}]},
         "segments.0.role"),
        ({"op": "context.create", "rid": 1, "member": "main", "segments": [{**SEGMENT, "text": b"bytes"}]},
         "segments.0.text"),
        ({"op": "context.edit", "rid": 1, "context": "c1", "edits": [{"op": "rename", "id": "s1"}]},
         "edits.0.op"),
        ({"op": "context.edit", "rid": 1, "context": "c1",
          "edits": [{"op": "append", "segment": {"id": "x"}}]},
         "edits.0.segment.role"),
        ({"op": "context.fork", "rid": 1, "context": "c1", "keep": -1}, "keep"),
        ({"op": "generate", "rid": 1, "context": "c1"}, "max_new_tokens"),
        ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 0}, "max_new_tokens"),
        ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 4.0}, "max_new_tokens"),
        ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 4, "constraint": {}}, "constraint"),
        ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 4,
          "constraint": {"regex": "a", "lark": "b"}}, "constraint"),
        ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 4, "constraint": {"one_of": []}},
         "constraint.one_of"),
        ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 4, "stop": "x"}, "stop"),
        ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 4, "append": {"pinned": True}},
         "append.id"),
        ({"op": "generate", "rid": 1, "context": "c1", "max_new_tokens": 4, "temperature": -1},
         "temperature"),
    ],
)  # fmt: skip
def test_bad_requests_name_their_field(frame: dict[str, Any], field: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_request(frame)
    assert caught.value.details["field"] == field
    assert f"'{field}'" in caught.value.message
    assert "\n" not in caught.value.message


def test_request_rid_only_takes_integers() -> None:
    assert request_rid({"rid": 4}) == 4
    assert request_rid({"rid": "4"}) is None
    assert request_rid({"rid": True}) is None
    assert request_rid({}) is None


def test_hello_client_is_optional_text() -> None:
    assert validate_hello({"op": "hello", "protocol": 2}).client is None
    with pytest.raises(BadRequest, match="'client'"):
        validate_hello({"op": "hello", "protocol": 2, "client": 3})


def test_a_hello_client_with_a_lone_surrogate_is_taken_escaped() -> None:
    """The client's name is a label: its lone surrogates are escaped, its other text kept."""
    hello = validate_hello({"op": "hello", "protocol": 2, "client": "aerix \udc00 é"})
    assert hello.client == "aerix \\udc00 é"  # valid text, as every log line must be


def test_a_lone_surrogate_elsewhere_in_a_hello_is_refused() -> None:
    with pytest.raises(BadRequest, match="field 'note' holds a lone surrogate"):
        validate_hello({"op": "hello", "protocol": 2, "client": "x", "note": "\ud800"})


def test_done_frame_reads_a_full_done() -> None:
    done = DoneFrame.model_validate({
        "op": "done", "rid": 7, "text": "edit", "finish": "stop", "prompt_tokens": 40,
        "completion_tokens": 2, "recomputed_from": 0,
        "timings": {"queue_ms": 0.1, "prefill_ms": 20.0, "decode_ms": 5.0},
        "logprobs": [{"token": "edit", "logprob": -0.1, "top": [{"token": "edit", "logprob": -0.1}]}],
        "segment": None,
    })  # fmt: skip
    assert done.logprobs is not None and done.logprobs[0].top[0].token == "edit"


def test_error_replies_become_their_error_classes() -> None:
    error = error_from_reply(
        {"op": "error", "rid": 1, "code": "protocol_mismatch", "message": "no", "supported": [2]}
    )
    assert error.code == "protocol_mismatch"
    assert error.details == {"supported": [2]}
    unknown = error_from_reply({"op": "error", "rid": 1, "code": "brand_new", "message": "later"})
    assert unknown.code == "internal" and unknown.details["code"] == "brand_new"
    not_found = error_from_reply({"op": "error", "code": "model_not_found", "message": "x"})
    assert not_found.code == "model_not_found"


def test_an_error_frame_is_built_and_read_through_one_model() -> None:
    """The pool writes error frames from ErrorReply and the client reads them back with it: no
    rid for a frame that answers no request, the details after the message."""
    frame = ErrorReply(op="error", code="no_fit", message="too big", needed=5, limit=3).model_dump()
    assert list(frame) == ["op", "code", "message", "needed", "limit"]
    error = error_from_reply(frame)
    assert isinstance(error, NoFit) and error.message == "too big"
    assert error.details == {"needed": 5, "limit": 3}
    answered = ErrorReply(op="error", rid=4, code="bad_request", message="no").model_dump()
    assert list(answered) == ["op", "rid", "code", "message"]
    malformed = error_from_reply({"op": "error", "rid": 3, "message": "a frame without its code"})
    assert isinstance(malformed, InternalError)
    assert str(malformed) == "the pool sent a malformed error frame: code: Field required"


def test_the_protocol_package_loads_no_engine() -> None:
    """aerix imports caldrix.protocol only; that must not drag in llama.cpp or numpy."""
    code = (
        "import sys, caldrix.protocol as p; "
        "p.connect; p.PoolClient; p.ContextOverflow; "
        "heavy = ('llama_cpp', 'numpy', 'llguidance', 'caldrix.members'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_member_object_carries_its_error_only_when_it_failed() -> None:
    fields: dict[str, Any] = {
        "name": "main",
        "model": "m.gguf",
        "path": "/m.gguf",
        "state": "ready",
        "footprint_bytes": None,
        "n_ctx": 512,
        "lane": "cpu",
        "threads": None,
        "constraints": ["json"],
        "queue": 0,
    }
    assert MemberObject.model_validate(fields).model_dump() == fields
    failed = {**fields, "state": "failed", "error": "out of memory"}
    assert MemberObject.model_validate(failed).model_dump() == failed
    listed = MemberListResult.model_validate({"members": [fields, failed], "memory": {"limit": 1, "used": 0}})
    assert [list(member) for member in listed.model_dump()["members"]] == [list(fields), list(failed)]

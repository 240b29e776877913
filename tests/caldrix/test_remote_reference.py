"""The pieces of a remote member that need no server: its reference, and the grammars that
carry constraints to llama.cpp servers (checked by llama.cpp's own GBNF parser)."""

from __future__ import annotations

import pytest
from llama_cpp import LlamaGrammar

from caldrix.engines._remote_servers import KINDS, choice_grammar, json_schema_grammar
from caldrix.engines.openai_remote import parse_remote_reference
from caldrix.errors import ConstraintInvalid, ModelNotFound
from caldrix.models.references import is_remote_reference, parse_reference
from tests.default_model import default_model_path


def test_a_reference_names_the_api_base_its_root_and_the_model() -> None:
    parsed = parse_remote_reference("openai+https://gpu.example:8443/v1#Qwen/Qwen2.5-7B-Instruct")
    assert parsed.url == "https://gpu.example:8443/v1"
    assert parsed.root.url == "https://gpu.example:8443"
    assert parsed.model == "Qwen/Qwen2.5-7B-Instruct"
    plain = parse_remote_reference("openai+http://127.0.0.1/v1#m")
    assert plain.url == "http://127.0.0.1:80/v1" and plain.root.url == "http://127.0.0.1:80"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("openai+http://127.0.0.1:8000/v1", "names no model"),
        ("openai+ftp://host/v1#m", "not of the form"),
        ("openai+http:///v1#m", "not of the form"),
    ],
)
def test_a_malformed_reference_is_one_line(text: str, words: str) -> None:
    with pytest.raises(ModelNotFound) as caught:
        parse_remote_reference(text)
    assert words in caught.value.message and "openai+http://HOST:PORT/v1#MODEL" in caught.value.message


def test_a_remote_reference_is_no_file_to_pull() -> None:
    assert is_remote_reference("openai+http://h:1/v1#m") and not is_remote_reference("http://h/x.gguf")
    with pytest.raises(ModelNotFound, match="is a model on a server, not a file"):
        parse_reference("openai+http://h:1/v1#m")


def test_a_choice_grammar_spells_every_option_escaped_and_llama_cpp_parses_it() -> None:
    options = ['say "hi"', "back\\slash", "two\nlines", "tab\there", "plain"]
    grammar = choice_grammar(options)
    LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp's parser takes it
    assert grammar.count(" | ") == len(options) - 1
    assert '"say \\"hi\\""' in grammar and '"two\\nlines"' in grammar and '"back\\\\slash"' in grammar
    with pytest.raises(ConstraintInvalid):
        choice_grammar([])


def test_a_json_schema_becomes_a_grammar_llama_cpp_parses() -> None:
    grammar = json_schema_grammar(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    LlamaGrammar.from_string(grammar, verbose=False)
    assert grammar.splitlines()[0] and "root ::=" in grammar


@pytest.mark.model
def test_long_string_bounds_become_a_grammar_llama_cpp_loads_on_a_model() -> None:
    """aerix's turn schema bounds paths at 1,024 characters: the converter's nested spelling of
    that is refused when llama.cpp builds the sampler, which failed every turn on a remote member."""
    import llama_cpp

    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "maxLength": 1024},
            "name": {"type": "string", "minLength": 2, "maxLength": 4096},
            "short": {"type": "string", "maxLength": 1},
            "ids": {"type": "array", "items": {"type": "string", "maxLength": 255}, "maxItems": 8},
        },
        "required": ["path", "name", "short", "ids"],
    }
    grammar = json_schema_grammar(schema)
    assert "char{0,1024}" in grammar and "char char char{0,4094}" in grammar
    assert "(char (char" not in grammar
    model = llama_cpp.Llama(model_path=str(default_model_path()), n_ctx=64, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(model.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    assert sampler, "llama.cpp refused the grammar"
    llama_cpp.llama_sampler_free(sampler)


def test_a_kind_refuses_a_constraint_it_lacks_naming_what_it_takes() -> None:
    llama_cpp_python = KINDS[0]
    assert llama_cpp_python.constraint_fields({"one_of": ["a", "b"]}) == {"grammar": 'root ::= "a" | "b"'}
    with pytest.raises(ConstraintInvalid, match=r"no lark constraint \(it takes: json, one_of\)"):
        llama_cpp_python.constraint_fields({"lark": 'start: "a"'})

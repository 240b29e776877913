"""Reading a prompt's bytes: the same text as Python's ``errors="replace"``, and the bytes kept
exactly when (and only when) some were not UTF-8."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from aerix.domain.prompt_bytes import decode_prompt, encoded_bytes, invalid_prompt_note


@given(st.binary(max_size=200))
def test_any_bytes_read_as_replace_does_and_are_kept_when_invalid(raw: bytes) -> None:
    decoded = decode_prompt(raw)
    assert decoded.text == raw.decode("utf-8", errors="replace")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        assert decoded.raw == raw and 0 < decoded.invalid_bytes <= len(raw)
        assert base64.b64decode(encoded_bytes(raw)) == raw
    else:
        assert (decoded.raw, decoded.invalid_bytes) == (None, 0)


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=100))
def test_valid_text_is_left_alone(text: str) -> None:
    decoded = decode_prompt(text.encode("utf-8"))
    assert decoded.text == text
    assert (decoded.raw, decoded.invalid_bytes) == (None, 0)


def test_the_note_counts_the_invalid_bytes() -> None:
    decoded = decode_prompt(b"a\xe2\x82b\xff")
    assert decoded.text == "a\ufffdb\ufffd" and decoded.invalid_bytes == 3
    note = invalid_prompt_note(decoded)
    assert note.startswith("the prompt is not valid UTF-8: 3 byte(s) were read as U+FFFD")

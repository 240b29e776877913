"""Line breaks inside one-line string literals, written back as the escape a model meant."""

from __future__ import annotations

from aerix.domain.split_strings import MAX_SPLIT_STRINGS, rejoin_split_strings


def test_every_split_string_is_joined_and_the_lines_are_named() -> None:
    sent = 'a = "x\ny"\nb = 1\nc = f"{a}\n\nz"\n'
    rejoined = rejoin_split_strings(sent)
    assert rejoined is not None
    assert rejoined.text == 'a = "x\\ny"\nb = 1\nc = f"{a}\\n\\nz"\n'
    assert rejoined.lines == (1, 3)
    compile(rejoined.text, "<test>", "exec")


def test_text_that_compiles_or_breaks_otherwise_is_left_alone() -> None:
    assert rejoin_split_strings("x = '\\n'\n") is None
    assert rejoin_split_strings("return 'I'm here'\n") is None  # a quote ends the string early
    assert rejoin_split_strings("x = '''open\n") is None  # a triple-quoted string is never split
    assert rejoin_split_strings("x = 'a\n  b\n") is None  # joined, it still does not compile
    assert rejoin_split_strings("x = 1\0\n") is None


def test_past_the_bound_the_text_is_left_as_it_is() -> None:
    many = "".join(f"v{n} = 'a\nb'\n" for n in range(MAX_SPLIT_STRINGS + 1))
    assert rejoin_split_strings(many) is None
    assert rejoin_split_strings("".join(f"v{n} = 'a\nb'\n" for n in range(MAX_SPLIT_STRINGS))) is not None

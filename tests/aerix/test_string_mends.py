"""Broken one-line string literals, mended to what a model meant, and only when that is sure."""

from __future__ import annotations

from aerix.domain.string_mends import MAX_STRING_MENDS, mend_strings


def test_every_split_string_is_joined_and_the_lines_are_named() -> None:
    sent = 'a = "x\ny"\nb = 1\nc = f"{a}\n\nz"\n'
    mended = mend_strings(sent)
    assert mended is not None
    assert mended.text == 'a = "x\\ny"\nb = 1\nc = f"{a}\\n\\nz"\n'
    assert (mended.joined, mended.escaped) == ((1, 3), ())
    compile(mended.text, "<test>", "exec")


def test_an_apostrophe_that_ends_a_single_quoted_string_early_is_escaped() -> None:
    """bob.py as the 1.5B wrote it; an f-string's prefix quote is not taken for an apostrophe."""
    sent = "def response(hey_bob):\n    return 'Calm down, I know what I'm doing!'\nx = f'it's {1}'\n"
    mended = mend_strings(sent)
    assert mended is not None
    assert mended.text == (
        "def response(hey_bob):\n    return 'Calm down, I know what I\\'m doing!'\nx = f'it\\'s {1}'\n"
    )
    assert (mended.joined, mended.escaped) == ((), (2, 3))
    both = mend_strings("a = 'don't'\nb = 'x\ny'\n")
    assert both is not None and (both.escaped, both.joined) == ((1,), (2,))


def test_text_that_compiles_or_breaks_otherwise_is_left_alone() -> None:
    assert mend_strings("x = '\\n'\n") is None
    assert mend_strings('x = "I\'m"\n') is None  # compiles already
    assert mend_strings('x = """open\n') is None  # a triple-quoted string is never split
    assert mend_strings("x = 'a\n  b\n") is None  # joined, it still does not compile
    assert mend_strings("x = 'it's\n'\n") is None  # neither mend makes it compile
    assert mend_strings("x = ( 'a'\n") is None  # not a string's fault
    assert mend_strings("x = 1\0\n") is None


def test_past_the_bound_the_text_is_left_as_it_is() -> None:
    many = "".join(f"v{n} = 'a\nb'\n" for n in range(MAX_STRING_MENDS + 1))
    assert mend_strings(many) is None
    assert mend_strings("".join(f"v{n} = 'a\nb'\n" for n in range(MAX_STRING_MENDS))) is not None

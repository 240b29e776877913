"""The degeneration guard's rules, pure: repeating spans short and long, strings that never close,
and no stop on real text or code."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import replace
from pathlib import Path

from caldrix import limits
from caldrix.engine_seam import GuardLimits
from caldrix.generation.degeneration import DegenerationGuard

DEFAULTS = GuardLimits(
    span_max_tokens=limits.DEGENERATE_SPAN_MAX_TOKENS,
    repeats=limits.DEGENERATE_REPEATS,
    run_min_tokens=limits.DEGENERATE_RUN_MIN_TOKENS,
    open_string_chars=limits.OPEN_STRING_LINE_MAX_CHARS,
    similar_lines=limits.DEGENERATE_SIMILAR_LINES,
    long_run_tokens=limits.DEGENERATE_LONG_RUN_TOKENS,
)
STRINGS_ONLY = GuardLimits(span_max_tokens=1, repeats=10**9, run_min_tokens=10**9, open_string_chars=2000)
ROOT = Path(__file__).resolve().parents[2]


def _feed(pieces: Sequence[Hashable], limits_: GuardLimits = DEFAULTS) -> tuple[int, str] | None:
    """(how many pieces it took, the reason) once the guard stops, else None. Each piece is its
    own token: the same text, the same token."""
    guard = DegenerationGuard(limits_)
    for index, piece in enumerate(pieces, 1):
        reason = guard.feed(piece, piece if isinstance(piece, str) else "")
        if reason is not None:
            return index, reason
    return None


def test_one_token_over_and_over_stops_after_the_minimum_run() -> None:
    stopped = _feed(['{"', "final", '":', ' "', *["\\n"] * 200])
    assert stopped == (4 + limits.DEGENERATE_RUN_MIN_TOKENS, "the same token repeated 64 times")


def test_a_short_span_stops_once_it_has_repeated_often_and_long_enough() -> None:
    span = [" The", " project", " builds", " with", " make", "."]
    stopped = _feed(['"', *span * 30])
    # The quote, then 64 tokens of the span repeated back to back (ten and a bit times).
    assert stopped == (1 + limits.DEGENERATE_RUN_MIN_TOKENS, "the same 6-token span repeated 10 times")


def test_a_100_token_span_stops_on_its_fourth_repeat() -> None:
    span = list(range(1000, 1100))
    stopped = _feed([1, 2, 3, *span * 10])
    assert stopped == (3 + 4 * 100, "the same 100-token span repeated 4 times")


def test_a_long_span_stops_once_it_came_twice_over_the_long_run() -> None:
    """simple-cipher on the 1.5B: its three methods, about 330 tokens, written over and over
    inside one write; four repeats would have been 1,320 tokens in."""
    span = [f" w{n}" for n in range(330)]
    assert _feed([*span, *span[:329]]) is None  # not twice yet
    assert _feed([*span * 2]) == (660, "the same 330-token span repeated 2 times")
    # A 150-token span needs the long run, 512 tokens (three repeats and a bit), not four.
    short = list(range(1000, 1150))
    assert _feed(short * 4) == (512, "the same 150-token span repeated 3 times")
    # Without the long run, every span needs its four repeats.
    four = replace(DEFAULTS, long_run_tokens=0)
    assert _feed([*span * 3, *span[:329]], four) is None
    assert _feed([*span * 4], four) == (1320, "the same 330-token span repeated 4 times")


def test_a_span_longer_than_the_limit_is_not_watched() -> None:
    longest = limits.DEGENERATE_SPAN_MAX_TOKENS
    span = list(range(longest + 1))
    assert _feed(span * 6) is None


def test_varied_text_and_short_repeats_go_on() -> None:
    words = [f" word{'abcdefg'[n % 7]}{'abcdefghijk'[n % 11]}" if n % 20 else "\\n" for n in range(500)]
    assert _feed(['"', *words, '"']) is None
    assert _feed(['"', *["-"] * 40, '"', *["="] * 40]) is None


def test_real_code_and_docs_go_on() -> None:
    """caldrix's source files and the docs, split into word-like tokens (a word with the spaces
    before it, as a BPE vocabulary splits text), stream through the guard without a stop:
    indentation, repeated keywords and similar lines are not a loop."""
    files = sorted([*ROOT.glob("caldrix/**/*.py"), *ROOT.glob("docs/*.md"), *ROOT.glob("tests/**/*.py")])
    assert len(files) > 100
    for path in files:
        tokens = re.findall(r"\s*\w+|\s*[^\w\s]+|\s+", path.read_text(encoding="utf-8"))
        # The open-string rule reads JSON output; source code's quotes are not that.
        loose = replace(DEFAULTS, open_string_chars=0)
        assert _feed(tokens, loose) is None, path


def test_a_string_that_never_closes_or_breaks_its_line_stops() -> None:
    line = limits.OPEN_STRING_LINE_MAX_CHARS
    guard = DegenerationGuard(STRINGS_ONLY)
    assert guard.feed(0, '{"final": "' + "a" * (line - 1)) is None
    assert guard.feed(1, "b") == f"a string ran {line} characters without closing or a line break"


def test_line_breaks_and_closing_quotes_reset_the_open_string() -> None:
    line = limits.OPEN_STRING_LINE_MAX_CHARS
    guard = DegenerationGuard(STRINGS_ONLY)
    chunk = "x" * (line - 10)
    text = '{"content": "' + chunk + "\\n" + chunk + "\n" + chunk + '", "more": "' + chunk
    assert guard.feed(0, text) is None
    # An escaped quote does not close the string.
    assert guard.feed(1, '\\" ' + "y" * 20) is not None


def test_open_string_chars_zero_turns_the_string_rule_off() -> None:
    off = GuardLimits(span_max_tokens=1, repeats=10**9, run_min_tokens=10**9, open_string_chars=0)
    assert DegenerationGuard(off).feed(0, '"' + "a" * 10_000) is None


def _lines_as_json(lines: Sequence[str]) -> list[str]:
    """Lines as a model writes them inside a JSON string: a ``\\n`` escape ends each, and every
    word with the spaces before it is one token."""
    text = "".join(line + "\\n" for line in lines)
    return re.findall(r"\\n|\s*\w+|\s*[^\w\s]", text)


def test_lines_that_differ_only_in_their_numbers_stop_the_count() -> None:
    """raindrops on the 1.5B: a test file it was never asked for, one assertion per number."""
    head = ["import unittest", "from raindrops import convert", "", "class TestRaindrops(unittest.TestCase):"]
    count = [f"        self.assertEqual(convert({n}), 'PlingPlong')" for n in range(22, 200)]
    stopped = _feed(['{"content": "', *_lines_as_json(head + count)])
    assert stopped is not None
    assert stopped[1] == "20 lines in a row the same but for their numbers"
    # Stopped on the twentieth line's end, not later.
    assert stopped[0] == 1 + len(_lines_as_json(head + count[:20]))
    # With real line breaks too (a reply that is not JSON), and empty lines between do not matter.
    spaced = [piece for line in count for piece in (line + "\n", "\n")]
    assert _feed(spaced) is not None


def test_number_tables_and_lines_that_vary_in_words_go_on() -> None:
    primes = [f"    {n}," for n in range(2, 400)]  # bare numbers: data, however long
    assert _feed(_lines_as_json(primes)) is None
    words = ["alpha", "beta", "gamma", "delta"]
    varied = [f"        self.assertEqual(convert({n}), '{words[n % 4]}')" for n in range(100)]
    assert _feed(_lines_as_json(varied)) is None
    nineteen = [f"        self.assertEqual(convert({n}), 'PlingPlong')" for n in range(19)]
    assert _feed(_lines_as_json([*nineteen, "x = 1", *nineteen])) is None
    off = GuardLimits(span_max_tokens=1, repeats=10**9, run_min_tokens=10**9, open_string_chars=0)
    long_count = [f"        self.assertEqual(convert({n}), 'PlingPlong')" for n in range(100)]
    assert DegenerationGuard(off).feed(0, "\n".join(long_count) + "\n") is None

"""Line numbers a model copied into a file it writes, left out only when the text is plainly
numbered (aerix.domain.line_numbers), and a write of such a .py file (the tools)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aerix.adapters.tools import LocalTools
from aerix.domain.line_numbers import without_line_numbers

#: resistor-color's second try on qwen2.5-coder-1.5b, in the shape it came (the code shortened).
COPIED = (
    "resistor_color.py:\n\n1. def color_code(color):\n2.     return colors().index(color)\n\n3.\n\n4.\n\n"
    "5. def colors():\n6.     return ['black', 'brown']"
)


def test_a_numbered_file_comes_back_without_its_numbers_header_and_spacer_lines() -> None:
    assert without_line_numbers(COPIED) == (
        "def color_code(color):\n    return colors().index(color)\n\n\n"
        "def colors():\n    return ['black', 'brown']"
    )
    # As read shows a file: padded numbers and a tab.
    assert without_line_numbers("  9\tdef f():\n 10\t    pass\n") == "def f():\n    pass\n"


@pytest.mark.parametrize(
    "text",
    [
        "x = 1\ny = 2\n",  # not numbered
        "1. x = 1\n3. y = 2\n",  # the numbers skip
        "1. x = 1\ny = 2\n",  # a line without one
        "1. x = 1\n",  # one line is no pattern
        "notes.txt:\n1. a\n2. b\nend\n",
    ],
)
def test_text_that_is_not_plainly_numbered_is_left_alone(text: str) -> None:
    assert without_line_numbers(text) is None


def test_a_numbered_write_of_a_python_file_is_written_without_the_numbers(tmp_path: Path) -> None:
    tools = LocalTools(tmp_path)
    made = tools.run("write", {"path": "resistor_color.py", "content": COPIED})
    assert made.startswith("created resistor_color.py")
    assert made.endswith("; its lines began with line numbers, as read shows a file: they were left out")
    assert (tmp_path / "resistor_color.py").read_text().startswith("def color_code(color):\n")
    # Not when the text as sent compiles, nor for a file that is not Python.
    assert tools.run("write", {"path": "notes.md", "content": "1. first\n2. second\n"}).startswith("created")
    assert (tmp_path / "notes.md").read_text() == "1. first\n2. second\n"

"""A change that leaves a file's code as it was, stubs and all, is reported as implementing
nothing (camicia on the 1.5B: a comment written above the stub's ``pass``, answered done)."""

from __future__ import annotations

from pathlib import Path

from aerix.adapters.tools import LocalTools
from aerix.domain.stub_bodies import unchanged_stubs

STUB = (
    'class Game:\n    def play(self):\n        """Play."""\n        pass\n\n\n'
    "def simulate_game(a, b):\n    pass\n"
)


def test_stubs_are_named_only_when_the_code_is_as_it_was() -> None:
    commented = STUB.replace("def simulate_game(a, b):\n", "def simulate_game(a, b):\n    # Yours here\n")
    assert unchanged_stubs(STUB, commented) == ("Game.play()", "simulate_game()")
    assert unchanged_stubs(STUB, STUB) == ("Game.play()", "simulate_game()")
    other_stubs = (
        "def a():\n    ...\n\n\ndef b():\n    raise NotImplementedError('b')\n\n\ndef c():\n    return 1\n"
    )
    assert unchanged_stubs(other_stubs, other_stubs + "# end\n") == ("a()", "b()")
    implemented = STUB.replace(
        "def simulate_game(a, b):\n    pass", "def simulate_game(a, b):\n    return a + b"
    )
    assert unchanged_stubs(STUB, implemented) == ()  # the code changed: something was written
    done = "def add(a, b):\n    return a + b\n"
    assert unchanged_stubs(done, "# adds\n" + done) == ()  # no stub: a comment may be the whole change
    assert unchanged_stubs(STUB, "def simulate_game(a, b):\n    # code\n") == ()  # does not parse


def test_a_write_or_edit_that_only_comments_a_stub_is_made_and_reported_as_an_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "camicia.py").write_text("def simulate_game(player_a, player_b):\n    pass\n")
    tools = LocalTools(tmp_path)
    tools.mark_seen(["camicia.py"])
    commented = "def simulate_game(player_a, player_b):\n    # Your implementation here\n    pass\n"
    made = tools.run("write", {"path": "camicia.py", "content": commented})
    assert made == (
        "error: camicia.py was replaced, but its code is what it was: simulate_game() still does "
        "nothing (a body of only pass, ... or raise NotImplementedError); write the code it needs"
    )
    assert (tmp_path / "camicia.py").read_text() == commented  # the change is made
    tools.end_turn()
    edited = tools.run("edit", {"path": "camicia.py", "old": "# Your implementation here", "new": "# TODO"})
    assert edited.startswith("error: camicia.py was edited, but its code is what it was: simulate_game()")
    written = tools.run(
        "edit", {"path": "camicia.py", "old": "    # TODO\n    pass", "new": "    return None"}
    )
    assert written.startswith("edited camicia.py")
    # A new file of stubs is the work's own start, not a change that did nothing.
    assert tools.run("write", {"path": "new.py", "content": "def later():\n    pass\n"}).startswith(
        "created new.py"
    )


def test_a_function_left_with_only_a_comment_for_its_body_is_named(tmp_path: Path) -> None:
    """change on the 1.5B: the same bodiless def three times, told only Python's own message."""
    tools = LocalTools(tmp_path)
    bodiless = "import math\n\n\ndef find_fewest_coins(coins, target):\n    # Your implementation here\n"
    assert tools.run("write", {"path": "change.py", "content": bodiless}) == (
        "error: change.py was created, but it is not valid Python now: find_fewest_coins() on line 4 "
        "has no body, only comments; write the code it needs"
    )
    tools.end_turn()
    unclosed = "def score(rolls):\n    return sum(rolls\n"
    assert tools.run("write", {"path": "change.py", "content": unclosed}) == (
        "error: change.py was replaced, but it is not valid Python now (line 2: '(' was never closed: "
        "return sum(rolls); write it again with that fixed"
    )

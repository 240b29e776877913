"""read, write and edit on real files; the runner's error convention and result header."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aerix.adapters.tools import LocalTools, result_header, with_header
from aerix.domain import bounds


@pytest.fixture
def tools(tmp_path: Path) -> LocalTools:
    return LocalTools(tmp_path)


def test_read_numbers_lines_and_pages_by_offset_and_limit(tmp_path: Path, tools: LocalTools) -> None:
    (tmp_path / "f.txt").write_text("".join(f"line {n}\n" for n in range(1, 451)))
    first = tools.run("read", {"path": "f.txt"})
    lines = first.splitlines()
    assert lines[0] == "  1\tline 1" and lines[199] == "200\tline 200"
    assert lines[200] == "[lines 1-200 of 450; read on with offset=201]"
    assert len(lines) == bounds.READ_LIMIT_LINES + 1
    page = tools.run("read", {"path": str(tmp_path / "f.txt"), "offset": 449, "limit": 5})
    assert page == "449\tline 449\n450\tline 450"


def test_read_cuts_long_lines_and_lists_directories(tmp_path: Path, tools: LocalTools) -> None:
    (tmp_path / "wide.txt").write_text("x" * 2500 + "\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner").mkdir()
    (tmp_path / "sub" / "a.py").write_text("")
    wide = tools.run("read", {"path": "wide.txt"})
    assert wide == "1\t" + "x" * 2000 + " [… 500 more characters]"
    assert tools.run("read", {"path": "sub"}) == "sub/ (2 entries)\na.py\ninner/"
    assert tools.run("read", {"path": "sub/a.py"}) == "(sub/a.py is empty)"


def test_read_reaches_outside_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("hello\n")
    work = tmp_path / "work"
    work.mkdir()
    assert LocalTools(work).run("read", {"path": "../outside.txt"}) == "1\thello"


def test_read_errors_are_results(tools: LocalTools) -> None:
    assert tools.run("read", {"path": "missing.txt"}) == "error: no such file: missing.txt"
    assert tools.run("read", {"path": ""}) == "error: path is empty"


def test_write_creates_parents_and_replaces(tmp_path: Path, tools: LocalTools) -> None:
    assert (
        tools.run("write", {"path": "a/b/c.txt", "content": "one\ntwo\n"})
        == "created a/b/c.txt (8 bytes, 2 lines)"
    )
    tools.end_turn()
    assert (
        tools.run("write", {"path": "a/b/c.txt", "content": "é"}) == "replaced a/b/c.txt (2 bytes, 1 lines)"
    )
    assert (tmp_path / "a/b/c.txt").read_text() == "é"
    assert tools.run("write", {"path": "a", "content": "x"}) == "error: a is a folder"


def test_write_over_a_file_this_agent_has_not_seen_shows_it_instead(
    tmp_path: Path, tools: LocalTools
) -> None:
    """The calc.py fix a 1.5B wrote from memory lost the function beside the bug: a file with
    content is replaced only once its text was in this agent's context (read, or shown by a
    refused write, in an earlier turn) or this agent wrote it."""
    calc = "def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n"
    (tmp_path / "calc.py").write_text(calc)
    (tmp_path / "empty.py").write_text("")
    fixed = {"path": "calc.py", "content": calc.replace("a - b", "a + b")}
    refused = tools.run("write", fixed)
    assert refused.splitlines() == [
        "error: calc.py already exists and you wrote this without having seen it, so it was not replaced."
        " It holds:",
        *LocalTools(tmp_path).run("read", {"path": "calc.py"}).splitlines(),
        "Write it again with every part you keep, or edit just the lines that change.",
    ]
    assert tools.run("write", fixed).startswith("error: calc.py already exists")  # shown, not yet seen
    assert (tmp_path / "calc.py").read_text() == calc
    tools.end_turn()
    assert tools.run("write", fixed).startswith("replaced calc.py")  # the refusal is in its context now
    assert tools.run("write", {"path": "empty.py", "content": "x = 1\n"}).startswith("replaced empty.py")
    # A read sent in the same turn as the write ran first, but the write was composed without it.
    (tmp_path / "calc.py").write_text(calc)
    reader, other = LocalTools(tmp_path), LocalTools(tmp_path)
    assert reader.run("read", {"path": str(tmp_path / "calc.py"), "limit": 1}).startswith("1\tdef add")
    assert reader.run("write", fixed).startswith("error: calc.py already exists")
    reader.end_turn()
    assert reader.run("write", fixed).startswith("replaced calc.py")
    # Each agent has its own tools: a read counts for the one that made it, and a file an agent
    # created it may replace at once.
    other.end_turn()
    assert other.run("write", fixed).startswith("error: calc.py already exists")
    assert other.run("write", {"path": "new.py", "content": "a = 1\n"}).startswith("created new.py")
    other.end_turn()
    assert other.run("write", {"path": "new.py", "content": "b = 2\n"}).startswith("replaced new.py")


def test_a_second_write_of_a_file_in_one_turn_is_refused(tmp_path: Path, tools: LocalTools) -> None:
    """simple-cipher on the 1.5B: the class, then a __main__ block, as two writes of one file in
    one turn; the second would have thrown the class away."""
    cipher = {"path": "cipher.py", "content": "class Cipher:\n    pass\n"}
    assert tools.run("write", cipher).startswith("created cipher.py")
    main = {"path": "cipher.py", "content": "class Cipher:\n    key = 1\n\n\nprint(__file__)\n"}
    assert tools.run("write", main) == (
        "error: cipher.py was already written by an earlier write of this turn, and this write would "
        "replace all of it, so it was not made. Write the file once, with everything it should hold."
    )
    assert (tmp_path / "cipher.py").read_text() == cipher["content"]
    assert tools.run("write", {"path": "other.py", "content": "x = 1\n"}).startswith("created other.py")
    assert tools.run("edit", {"path": "cipher.py", "old": "pass", "new": "key = 1"}).startswith("edited")
    tools.end_turn()
    assert tools.run("write", main).startswith("replaced cipher.py")  # its own write, a turn later


def test_edit_replaces_exact_text_and_refuses_missing_or_ambiguous(tmp_path: Path, tools: LocalTools) -> None:
    target = tmp_path / "code.py"
    target.write_text("x = 1\ny = 1\n")
    assert tools.run("edit", {"path": "code.py", "old": "x = 1", "new": "x = 2"}) == (
        "edited code.py: replaced 1 occurrence"
    )
    assert target.read_text() == "x = 2\ny = 1\n"
    missing = tools.run("edit", {"path": "code.py", "old": "z = 1", "new": "z"})
    assert missing.startswith("error: old text not found in code.py")
    ambiguous = tools.run("edit", {"path": "code.py", "old": " = ", "new": "="})
    assert ambiguous.startswith("error: old text found 2 times in code.py")
    assert target.read_text() == "x = 2\ny = 1\n"
    assert tools.run("edit", {"path": "code.py", "old": " = ", "new": "=", "replace_all": True}) == (
        "edited code.py: replaced 2 occurrences"
    )
    assert target.read_text() == "x=2\ny=1\n"


def test_a_write_or_edit_that_changes_nothing_is_an_error_not_a_replacement(
    tmp_path: Path, tools: LocalTools
) -> None:
    source = "def translate(text):\n    print(text + 'ay')\n"
    assert tools.run("write", {"path": "pig_latin.py", "content": source}).startswith("created pig_latin.py")
    tools.end_turn()
    again = tools.run("write", {"path": "pig_latin.py", "content": source})
    assert again == (
        "error: pig_latin.py already holds exactly this content, so nothing changed. If the request "
        "needs a change, write what should be different; if the file is already right, go on without "
        "writing it."
    )
    (tmp_path / "notes.txt").write_text("same\n")
    tools.run("read", {"path": "notes.txt"})
    tools.end_turn()
    assert tools.run("write", {"path": "notes.txt", "content": "same\n"}).startswith(
        "error: notes.txt already holds exactly this content"
    )
    assert tools.run("write", {"path": "notes.txt", "content": "other\n"}).startswith("replaced notes.txt")
    same = tools.run("edit", {"path": "pig_latin.py", "old": "print", "new": "print"})
    assert same == (
        "error: old and new are the same text, so nothing would change; put the changed text in new"
    )
    assert (tmp_path / "pig_latin.py").read_text() == source


def test_web_tools_are_always_refused(tools: LocalTools) -> None:
    assert tools.run("web_fetch", {"url": "https://example.org"}).startswith(
        "error: web_fetch is not available"
    )
    assert tools.run("web_search", {"query": "x"}).startswith("error: web_search is not available")


def test_loop_tools_are_not_local(tools: LocalTools) -> None:
    assert tools.run("plan", {"op": "read"}) == "error: plan is not a local tool"


def test_result_header() -> None:
    assert result_header("read", "c3") == "[read c3]"
    assert with_header("bash", "c12", "[exit 0]") == "[bash c12]\n[exit 0]"


def test_a_change_that_leaves_python_unparsable_is_made_and_reported_as_an_error(
    tmp_path: Path, tools: LocalTools
) -> None:
    """change.py, as the 1.5B wrote it: a function whose body is only a comment."""
    broken = "def find_fewest_coins(coins, target):\n    # Your implementation here\n"
    made = tools.run("write", {"path": "change.py", "content": broken})
    assert made == (
        "error: change.py was created, but it is not valid Python now: find_fewest_coins() on line 1 "
        "has no body, only comments; write the code it needs"
    )
    assert (tmp_path / "change.py").read_text() == broken  # the change is made
    fixed = broken + "    return []\n"
    tools.end_turn()
    assert tools.run("write", {"path": "change.py", "content": fixed}).startswith("replaced change.py")
    edited = tools.run("edit", {"path": "change.py", "old": "    return []\n", "new": ""})
    assert edited.startswith("error: change.py was edited, but it is not valid Python now: find_fewest_coins")
    tools.end_turn()
    again = tools.run("write", {"path": "change.py", "content": broken})  # over its own broken file
    assert again.startswith("error: change.py was replaced, but it is not valid Python now")
    # Text that is not Python, and a file that did not parse when the agent first changed it (a
    # newer Python's), are not judged.
    assert tools.run("write", {"path": "notes.txt", "content": "it's"}).startswith("created notes.txt")
    (tmp_path / "new.py").write_text("type X = (\n")
    other = LocalTools(tmp_path)
    other.mark_seen(["new.py"])
    assert other.run("write", {"path": "new.py", "content": "x = (\n"}).startswith("replaced new.py")


def test_a_file_an_earlier_request_broke_is_judged_when_git_holds_it_parsing(tmp_path: Path) -> None:
    """bob.py's second try: the first left it broken; a new request's tools judge it all the
    same, since the project's committed bob.py parses. One committed broken is not judged."""
    (tmp_path / "bob.py").write_text("def response(hey_bob):\n    pass\n")
    (tmp_path / "newer.py").write_text("type X = (\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "bob.py", "newer.py"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "stub"], cwd=tmp_path, check=True)
    broken = "def response(hey_bob):\n    # Your implementation here\n"
    (tmp_path / "bob.py").write_text(broken)  # as the first request left it
    second = LocalTools(tmp_path)
    second.mark_seen(["bob.py", "newer.py"])
    again = second.run("write", {"path": "bob.py", "content": broken})
    assert again.startswith("error: bob.py was replaced, but it is not valid Python now: response()")
    assert second.run("write", {"path": "newer.py", "content": "x = (\n"}).startswith("replaced newer.py")


def test_a_line_break_that_splits_a_string_is_written_back_as_its_escape(
    tmp_path: Path, tools: LocalTools
) -> None:
    """transpose.py as the 1.5B sent it: JSON's \\n where Python's '\\n' was meant, so the file
    had a line break inside a string literal (and the same write was sent until it failed)."""
    sent = "def transpose(text):\n    rows = text.split('\n')\n    return '\n'.join(rows)\n"
    made = tools.run("write", {"path": "transpose.py", "content": sent})
    assert made.startswith("created transpose.py (")
    assert "on lines 2, 3 a line break inside a quoted string was written as \\n" in made
    written = (tmp_path / "transpose.py").read_text()
    assert written == "def transpose(text):\n    rows = text.split('\\n')\n    return '\\n'.join(rows)\n"
    edited = tools.run("edit", {"path": "transpose.py", "old": "'\\n'.join", "new": "'\n'.join"})
    assert edited.startswith("edited transpose.py: replaced 1 occurrence; on line 3 a line break")
    assert (tmp_path / "transpose.py").read_text() == written
    # An apostrophe that ended bob.py's string early is escaped the same way.
    quote = "def response(hey_bob):\n    return 'Calm down, I know what I'm doing!'\n"
    made = tools.run("write", {"path": "bob.py", "content": quote})
    assert made.endswith(
        "; on line 2 an apostrophe inside a quoted string was written as \\', as Python needs"
    )
    assert (tmp_path / "bob.py").read_text() == quote.replace("I'm", "I\\'m")
    # Text that is not Python keeps its line breaks.
    tools.run("write", {"path": "notes.txt", "content": "x = '\n'"})
    assert (tmp_path / "notes.txt").read_text() == "x = '\n'"


def test_a_change_that_uses_a_name_it_never_defines_is_made_and_reported_as_an_error(
    tmp_path: Path, tools: LocalTools
) -> None:
    """simple-cipher on the 1.5B: a name used unimported and undefined, answered done."""
    cipher = "class Cipher:\n    def __init__(self):\n        self.key = shuffled(LETTERS)\n"
    made = tools.run("write", {"path": "cipher.py", "content": cipher})
    assert made == (
        "error: cipher.py was created, but it uses shuffled (line 3), LETTERS (line 3) without defining "
        "or importing them; add the import or the definition, and write it again"
    )
    assert (tmp_path / "cipher.py").read_text() == cipher  # the change is made
    tools.end_turn()
    defined = "LETTERS = 'abc'\n\n\ndef shuffled(text):\n    return text\n\n\n" + cipher
    assert tools.run("write", {"path": "cipher.py", "content": defined}).startswith("replaced cipher.py")
    edited = tools.run("edit", {"path": "cipher.py", "old": "LETTERS = 'abc'\n", "new": ""})
    assert edited.startswith("error: cipher.py was edited, but it uses LETTERS (line 9) without")
    # A name the file left undefined before the change is the project's, not this change's.
    (tmp_path / "plugin.py").write_text("def hook():\n    return app.config\n")
    tools.mark_seen(["plugin.py"])
    kept = tools.run("write", {"path": "plugin.py", "content": "def hook():\n    return app.settings\n"})
    assert kept.startswith("replaced plugin.py")
    assert tools.run("write", {"path": "notes.txt", "content": "random"}).startswith("created notes.txt")


def test_a_standard_module_used_unimported_gets_its_import(tmp_path: Path, tools: LocalTools) -> None:
    """simple-cipher on the 1.5B: random.choice with no import random, sent three times over."""
    cipher = (
        '"""A cipher."""\nfrom __future__ import annotations\n\nimport string\n\n\nclass Cipher:\n'
        "    def __init__(self):\n        self.key = random.choice(string.ascii_lowercase)\n"
    )
    made = tools.run("write", {"path": "cipher.py", "content": cipher})
    assert made == (
        "created cipher.py (177 bytes, 10 lines); it used random without importing it: import random "
        "added on line 5"
    )
    assert (tmp_path / "cipher.py").read_text() == cipher.replace(
        "import string\n", "import string\nimport random\n"
    )
    tools.end_turn()
    # With a name still undefined, the error says what was added, since its line numbers count it.
    broken = "def key():\n    return random.choice(LETTERS)\n"
    assert tools.run("write", {"path": "key.py", "content": broken}) == (
        "error: key.py was created, but it uses LETTERS (line 3) without defining or importing it; "
        "add the import or the definition, and write it again; it used random without importing it: "
        "import random added on line 1"
    )
    # Not a name used any other way (assigned, called), nor one that is no standard module.
    tools.end_turn()
    other = "def key():\n    print(random)\n    return random.choice('ab') + rng.choice('ab')\n"
    assert tools.run("write", {"path": "other.py", "content": other}).startswith(
        "error: other.py was created, but it uses random (line 2), rng (line 3) without"
    )


def test_a_write_that_leaves_out_a_function_the_file_defines_keeps_it(
    tmp_path: Path, tools: LocalTools
) -> None:
    """calc.py on the 1.5B: a retry wrote it whole with add() fixed and mul() gone."""
    calc = tmp_path / "calc.py"
    original = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
    calc.write_text(original)
    tools.mark_seen(["calc.py"])
    made = tools.run("write", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})
    assert made == (
        "replaced calc.py (66 bytes, 6 lines); it left out mul(), which the file defines: kept as it "
        "was (to remove it, use edit)"
    )
    assert calc.read_text() == original.replace("a - b", "a + b")
    tools.end_turn()
    # A helper the work added itself it may leave out again; removing one of the file's is an edit.
    helper = calc.read_text() + "\n\nclass Total:\n    pass\n"
    assert tools.run("write", {"path": "calc.py", "content": helper}).startswith("replaced calc.py (")
    tools.end_turn()
    assert (
        tools.run("write", {"path": "calc.py", "content": original}) == "replaced calc.py (66 bytes, 6 lines)"
    )
    removed = tools.run(
        "edit", {"path": "calc.py", "old": "\n\ndef mul(a, b):\n    return a * b\n", "new": ""}
    )
    assert removed.startswith("edited calc.py")
    tools.end_turn()
    # Content that does not parse is written and named broken, nothing put back.
    unfinished = "def add(a, b):\n    return a +\n"
    broken = tools.run("write", {"path": "calc.py", "content": unfinished})
    assert broken.startswith("error: calc.py was replaced, but it is not valid Python now (line 2: ")
    assert calc.read_text() == unfinished
    tools.end_turn()
    # A name the file assigns at its top level counts too (dot-dsl's tests import NODE, EDGE):
    # put back after the new text's imports, as it was.
    dsl = tmp_path / "dot_dsl.py"
    dsl.write_text("NODE, EDGE, ATTR = range(3)\nLIMIT: int = 3\n\n\nclass Graph:\n    pass\n")
    tools.mark_seen(["dot_dsl.py"])
    without = "import json\n\nLIMIT = 4\n\n\nclass Graph:\n    def __init__(self, data=None):\n"
    without += "        self.data = data\n"
    made = tools.run("write", {"path": "dot_dsl.py", "content": without})
    assert made.endswith(
        "; it left out NODE, EDGE, ATTR, which the file defines: kept as they were (to remove them, use edit)"
    )
    assert dsl.read_text() == without.replace("import json\n", "import json\nNODE, EDGE, ATTR = range(3)\n")
    tools.end_turn()
    # Only .py files are read this way.
    (tmp_path / "notes.md").write_text("def a():\n")
    tools.mark_seen(["notes.md"])
    assert tools.run("write", {"path": "notes.md", "content": "x\n"}).startswith("replaced notes.md")


def test_names_an_earlier_write_left_undefined_still_count_against_the_next(tmp_path: Path) -> None:
    """simple-cipher's second try: the first try's file already used random unimported, and the
    next write of it passed as if the name were the project's. The names that are the project's
    are those of git's HEAD, else of the file as this agent first found it."""
    stub = "class Cipher:\n    def __init__(self, key=None):\n        pass\n"
    (tmp_path / "cipher.py").write_text(stub)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "cipher.py"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "stub"], cwd=tmp_path, check=True)
    unimported = "class Cipher:\n    def __init__(self, key=None):\n        self.key = key or make_key()\n"
    first = LocalTools(tmp_path)
    first.mark_seen(["cipher.py"])
    assert first.run("write", {"path": "cipher.py", "content": unimported}).startswith(
        "error: cipher.py was replaced, but it uses make_key (line 3)"
    )
    first.end_turn()
    again = unimported.replace("make_key()", "make_key() * 2")
    assert first.run("write", {"path": "cipher.py", "content": again}).startswith("error: cipher.py was")
    # The next request's agent, over the file the first left: still this work's name.
    second = LocalTools(tmp_path)
    second.mark_seen(["cipher.py"])
    assert second.run("write", {"path": "cipher.py", "content": unimported}).startswith(
        "error: cipher.py was"
    )
    fixed = "def make_key():\n    return 'abc'\n\n\n" + unimported
    assert second.run(
        "edit",
        {"path": "cipher.py", "old": "class Cipher", "new": fixed[: -len(unimported)] + "class Cipher"},
    ).startswith("edited")
    # Outside git, a name the file used before this agent changed it is the project's.
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "plugin.py").write_text("def hook():\n    return app.config\n")
    tools = LocalTools(loose)
    tools.mark_seen(["plugin.py"])
    assert tools.run(
        "write", {"path": "plugin.py", "content": "def hook():\n    return app.settings\n"}
    ).startswith("replaced plugin.py")

"""Files a prompt or a brief names are attached to it, as ``read`` shows them."""

from __future__ import annotations

from pathlib import Path

from aerix.adapters.prompts import EmbeddedPrompts
from aerix.adapters.tools.runner import LocalTools
from aerix.app.agent.attachments import Attached, attach_named_files
from aerix.app.request.root_context import prompt_text
from aerix.domain.attachments import ATTACHED_HEADER, attachment_text, named_files
from aerix.domain.permissions import NO_RESTRICTIONS, Permissions, parse_base_tools, rules_from


def test_named_files_are_relative_paths_with_an_extension_each_once_in_order() -> None:
    text = (
        "add() in calc.py is wrong (see src/app.ts, docs/a-b.md and calc.py again); e.g. v1.2 "
        "or 3.14; not /etc/hosts.txt, ../up.py, https://exercism.org/tracks/python nor .env.local."
    )
    assert named_files(text) == ["calc.py", "src/app.ts", "docs/a-b.md", "e.g", "v1.2", "3.14"]
    assert named_files("What does greet.py do? Answer in one sentence.") == ["greet.py"]
    assert named_files("List the files here.") == []


def test_the_attachment_shows_each_file_under_its_path_in_a_fence() -> None:
    assert attachment_text([]) == ""
    text = attachment_text([("a.py", "1\tx = 1"), ("b/c.md", "1\t# C")])
    first, second = ["a.py:", "```", "1\tx = 1", "```"], ["b/c.md:", "```", "1\t# C", "```"]
    assert text.splitlines() == [ATTACHED_HEADER, "", *first, "", *second]


def test_only_files_of_the_project_the_agent_may_read_are_attached(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "secret.env").write_text("TOKEN=1\n")
    (tmp_path / "notes.d").mkdir()
    task = "Fix add() in calc.py; keep secret.env; see notes.d and missing.py."
    attached = attach_named_files(task, LocalTools(tmp_path), NO_RESTRICTIONS, tmp_path)
    assert attached.paths == ("calc.py", "secret.env")
    assert "calc.py:\n```\n1\tdef add(a, b):\n2\t    return a - b\n```" in attached.text
    denied = Permissions(rules_from(["Read(*.env)"], "settings.json"), root=str(tmp_path))
    assert attach_named_files(task, LocalTools(tmp_path), denied, tmp_path).paths == ("calc.py",)
    without_read = Permissions(base=parse_base_tools("Grep"))
    assert attach_named_files(task, LocalTools(tmp_path), without_read, tmp_path) == Attached()


def test_at_most_three_files_are_attached_counting_only_files_that_exist(tmp_path: Path) -> None:
    """A retry prompt (a test run's output) names the hidden test files before the file to fix."""
    for name in ("a.py", "b.py", "c.py", "d.py"):
        (tmp_path / name).write_text(f"# {name}\n")
    task = "FAILED a_test.py::test_x, b_test.py, c_test.py; fix a.py, b.py, c.py and d.py"
    attached = attach_named_files(task, LocalTools(tmp_path), NO_RESTRICTIONS, tmp_path)
    assert attached.paths == ("a.py", "b.py", "c.py")


def test_the_prompt_segment_holds_the_prompt_then_the_files_then_the_planner_note(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    prompt = "Fix add() in calc.py."
    attached = attach_named_files(prompt, LocalTools(tmp_path), NO_RESTRICTIONS, tmp_path)
    text = prompt_text(prompt, "edit", EmbeddedPrompts(), attached=attached.text)
    assert text.startswith(f"{prompt}\n\n{ATTACHED_HEADER}\n\ncalc.py:\n```\n1\tdef add")
    assert text.index("```\n\n") < text.index("You may only use")
    assert prompt_text(prompt, "answer", EmbeddedPrompts()) == prompt


def test_a_file_marked_seen_may_be_replaced_in_the_first_turn(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    tools = LocalTools(tmp_path)
    fixed = {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}
    assert tools.run("write", fixed).startswith("error: calc.py already exists")
    tools.mark_seen(["calc.py"])
    assert tools.run("write", fixed).startswith("replaced calc.py")

"""Instruction files from the repository root down, the user's own, skills and agent
definitions from aerix's and Claude Code's folders."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aerix.adapters.paths import config_home
from aerix.adapters.project.frontmatter import FrontMatterError, split_front_matter
from aerix.adapters.project.instructions import (
    find_repository_root,
    load_instruction_files,
    render_instructions,
)
from aerix.adapters.project.settings_files import claude_home
from aerix.adapters.project.skills import load_agent_definitions, load_skills


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def test_instruction_files_from_user_then_root_down_to_cwd(repo: Path, tmp_path: Path) -> None:
    write(tmp_path / "AERIX.md", "above the repository: never read")
    write(config_home() / "AERIX.md", "user aerix")
    write(claude_home() / "CLAUDE.md", "user claude")
    write(repo / "CLAUDE.md", "root claude")
    write(repo / "AERIX.md", "root aerix")
    (repo / "AGENTS.md").symlink_to("CLAUDE.md")  # the same file twice is read once
    write(repo / "pkg" / "AGENTS.md", "pkg agents")
    write(repo / "pkg" / ".claude" / "CLAUDE.md", "pkg dot-claude")
    write(repo / "pkg" / "deeper" / "CLAUDE.md", "not on the way down")
    cwd = repo / "pkg"
    files, notes = load_instruction_files(cwd)
    assert notes == []
    assert [f.text for f in files] == [
        "user aerix",
        "user claude",
        "root aerix",
        "root claude",
        "pkg agents",
        "pkg dot-claude",
    ]
    text = render_instructions(files, cwd)
    assert text.startswith("# Instructions\n")
    assert "## AERIX.md\nroot aerix" in text and "## pkg/.claude/CLAUDE.md\npkg dot-claude" in text


def test_outside_a_repository_only_the_working_directory(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "parent")
    write(tmp_path / "work" / "AGENTS.md", "here")
    assert find_repository_root(tmp_path / "work") is None
    files, _ = load_instruction_files(tmp_path / "work")
    assert [f.text for f in files] == ["here"]
    assert render_instructions([], tmp_path) == ""


SKILL = """---
name: Release notes
description: Draft release notes from the git log
---
Write release notes for version $ARGUMENTS[0] since tag $1.
All arguments: $ARGUMENTS
"""


def test_skills_from_every_folder_later_ones_win(repo: Path) -> None:
    write(claude_home() / "skills" / "review" / "SKILL.md", "---\ndescription: user review\n---\nReview it.")
    write(
        repo / ".claude" / "skills" / "review" / "SKILL.md", "---\ndescription: project review\n---\nReview!"
    )
    write(repo / ".aerix" / "skills" / "release" / "SKILL.md", SKILL)
    write(repo / ".aerix" / "skills" / "plain" / "SKILL.md", "# Tidy imports\nSort them.")
    write(repo / ".aerix" / "skills" / "broken" / "SKILL.md", "---\ndescription: never closed\n")
    catalog = load_skills(repo)
    assert catalog.names == ("plain", "release", "review")
    review, plain = catalog.get("review"), catalog.get("plain")
    assert review is not None and review.description == "project review"
    assert plain is not None and plain.description == "Tidy imports"
    assert len(catalog.notes) == 1 and "broken" in catalog.notes[0] and "closing '---'" in catalog.notes[0]


def test_arguments_are_substituted(repo: Path) -> None:
    write(repo / ".aerix" / "skills" / "release" / "SKILL.md", SKILL)
    write(repo / ".aerix" / "skills" / "plain" / "SKILL.md", "Sort the imports.")
    catalog = load_skills(repo)
    assert catalog.run_tool("release", "2.0 v1.9") == (
        "Write release notes for version 2.0 since tag v1.9.\nAll arguments: 2.0 v1.9"
    )
    assert catalog.run_tool("plain", "src/a.py") == "Sort the imports.\n\nARGUMENTS: src/a.py"
    assert catalog.run_tool("plain") == "Sort the imports."
    assert catalog.run_tool("nope").startswith("error: no skill named nope (skills: plain, release)")
    assert (
        catalog.run_tool(None, list_all=True)
        == "plain: Sort the imports.\nrelease: Draft release notes from the git log"
    )


def test_a_first_line_slash_command_becomes_the_skill(repo: Path) -> None:
    write(repo / ".aerix" / "skills" / "release" / "SKILL.md", SKILL)
    catalog = load_skills(repo)
    expanded = catalog.expand_prompt("/release 3.1 v3.0\nKeep it short.")
    assert expanded.startswith("Write release notes for version 3.1 since tag v3.0.")
    assert expanded.endswith("\n\nKeep it short.")
    assert catalog.expand_prompt("/usr/bin is odd") == "/usr/bin is odd"
    assert catalog.expand_prompt("plain prompt") == "plain prompt"


def test_the_skill_listing_fits_its_character_budget(repo: Path) -> None:
    for n in range(30):
        write(
            repo / ".aerix" / "skills" / f"skill{n:02d}" / "SKILL.md",
            f"---\ndescription: does thing {n}\n---\nx",
        )
    catalog = load_skills(repo)
    full = catalog.render_listing(100_000)
    assert full.count("\n- ") == 30
    short = catalog.render_listing(300)
    assert len(short) <= 300 and short.startswith("# Skills")
    assert short.endswith("more (skill with list=true shows all)")
    assert catalog.render_listing(10) == "" and catalog.render_listing(0) == ""


AGENT = """---
name: test-runner
description: Runs the tests and fixes failures
tools: Read, Bash, grep, NotebookEdit
model: inherit
maxTurns: 12
---
You run the project's tests.
"""


def test_agent_definitions_map_claude_tool_names(repo: Path) -> None:
    write(repo / ".claude" / "agents" / "runner.md", AGENT)
    write(
        repo / ".aerix" / "agents" / "docs.md",
        "---\ndescription: Writes docs\ntools:\n  - read\n  - write\nmodel: big\n---\nWrite docs.",
    )
    write(config_home() / "agents" / "bad.md", "---\nname: bad\nmaxTurns: many\n---\n")
    catalog = load_agent_definitions(repo)
    assert catalog.names == ("docs", "test-runner")
    runner = catalog.get("test-runner")
    assert runner is not None
    assert runner.tools == ("read", "bash", "grep") and runner.model is None and runner.max_turns == 12
    assert runner.body == "You run the project's tests."
    docs = catalog.get("docs")
    assert (
        docs is not None
        and docs.tools == ("read", "write")
        and docs.model == "big"
        and docs.max_turns is None
    )
    assert any("NotebookEdit" in note for note in catalog.notes)
    assert any("bad.md" in note and "maxTurns" in note for note in catalog.notes)


def test_front_matter_shapes() -> None:
    fields, body = split_front_matter(
        "---\na: 'quoted'\nb: [x, y]\nc: |\n  one\n  two\nd: >\n  folded\n  text\ne: true\n---\nbody"
    )
    assert fields == {"a": "quoted", "b": ["x", "y"], "c": "one\ntwo", "d": "folded text", "e": True}
    assert body == "body"
    assert split_front_matter("no front matter") == ({}, "no front matter")
    with pytest.raises(FrontMatterError):
        split_front_matter("---\nnot a key\n---\n")


def test_the_agent_definition_listing_fits_its_character_budget(repo: Path) -> None:
    for name in ("alpha", "beta", "gamma"):
        write(repo / ".aerix" / "agents" / f"{name}.md", f"---\ndescription: Does {name} work\n---\nBody.")
    write(repo / ".aerix" / "agents" / "plain.md", "No front matter.")
    catalog = load_agent_definitions(repo)
    full = catalog.render_listing(100_000)
    assert full.splitlines() == [
        "# Agent definitions",
        "Name one as the agent call's definition when it fits the piece:",
        "- alpha: Does alpha work",
        "- beta: Does beta work",
        "- gamma: Does gamma work",
        "- plain",
    ]
    short = catalog.render_listing(140)
    assert len(short) <= 140 and short.endswith("… and 3 more") and "- alpha" in short
    assert catalog.render_listing(10) == "" and catalog.render_listing(0) == ""

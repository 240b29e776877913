"""glob, grep and repo_map over the git file set of a real repository, and over a plain walk."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aerix.adapters.tools import LocalTools, RepoMapCache
from aerix.adapters.tools.file_set import compile_glob, list_files, split_glob_root


def make_tree(root: Path) -> None:
    files = {
        "README.md": "# Demo\nTODO: write docs\n",
        "src/app.py": "def main():\n    return 'TODO later'\n",
        "src/deep/util.py": "import os\n",
        "tests/test_app.py": "from src.app import main\n",
        "build/out.log": "TODO generated\n",
        "node_modules/pkg/index.js": "// TODO vendored\n",
        "notes.txt": "untracked but not ignored: TODO\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    make_tree(root)
    (root / ".gitignore").write_text("build/\nnode_modules/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "README.md", "src", "tests", ".gitignore"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], cwd=root, check=True)
    return root


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    make_tree(root)
    (root / "target").mkdir()
    (root / "target" / "x.py").write_text("TODO built\n")
    return root


def test_git_file_set_is_tracked_plus_untracked_not_ignored(repo: Path) -> None:
    assert list_files(repo) == [
        ".gitignore",
        "README.md",
        "notes.txt",
        "src/app.py",
        "src/deep/util.py",
        "tests/test_app.py",
    ]
    assert list_files(repo / "src") == ["app.py", "deep/util.py"]


def test_outside_git_the_walk_skips_vendored_and_build_folders(plain: Path) -> None:
    assert list_files(plain) == [
        "README.md",
        "build/out.log",
        "notes.txt",
        "src/app.py",
        "src/deep/util.py",
        "tests/test_app.py",
    ]


def test_star_crosses_slashes() -> None:
    matches = compile_glob("*.py")
    assert matches("a.py") and matches("src/deep/util.py") and not matches("a.pyc")
    assert compile_glob("src/**/*.py")("src/app.py") and compile_glob("src/**/*.py")("src/deep/util.py")
    assert split_glob_root("../lib/*.py") == ("../lib", "*.py")
    assert split_glob_root("/etc/*.conf") == ("/etc", "*.conf")
    assert split_glob_root("*.py") == ("", "*.py")


def test_glob_lists_relative_to_the_working_directory(repo: Path) -> None:
    tools = LocalTools(repo / "src")
    assert tools.run("glob", {"pattern": "*.py"}) == "app.py\ndeep/util.py"
    assert tools.run("glob", {"pattern": "*.py", "path": ".."}) == (
        "app.py\ndeep/util.py\n../tests/test_app.py"
    )
    assert tools.run("glob", {"pattern": "../tests/*.py"}) == "../tests/test_app.py"
    assert tools.run("glob", {"pattern": "*.rs"}) == "no files match *.rs"


def test_grep_finds_file_and_line_in_the_git_file_set(repo: Path) -> None:
    tools = LocalTools(repo)
    assert tools.run("grep", {"pattern": "TODO"}) == (
        "README.md:2: TODO: write docs\n"
        "notes.txt:1: untracked but not ignored: TODO\n"
        "src/app.py:2:     return 'TODO later'"
    )
    assert tools.run("grep", {"pattern": "TODO", "glob": "*.py"}) == "src/app.py:2:     return 'TODO later'"
    assert tools.run("grep", {"pattern": "import", "glob": "test_*.py"}) == (
        "tests/test_app.py:1: from src.app import main"
    )
    assert tools.run("grep", {"pattern": "TODO", "path": "README.md"}) == "README.md:2: TODO: write docs"


def test_grep_limits(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit " + "y" * 500 + "\n" + "hit\n" * 9)
    (tmp_path / "huge.txt").write_bytes(b"hit\n" * (2 * 1024 * 1024 + 1))  # just over 8 MiB
    (tmp_path / "binary.bin").write_bytes(b"hit\0\x01")
    tools = LocalTools(tmp_path)
    result = tools.run("grep", {"pattern": "^hit", "max_matches": 3}).splitlines()
    assert result[0] == "many.txt:1: hit " + "y" * 396 + " […]"
    assert result[1:] == [
        "many.txt:2: hit",
        "many.txt:3: hit",
        "[stopped after 3 matches; narrow the pattern, path or glob]",
    ]
    everything = tools.run("grep", {"pattern": "^hit"}).splitlines()
    assert everything[-1] == "[skipped 1 files over 8 MiB]" and len(everything) == 11
    assert tools.run("grep", {"pattern": "("}).startswith("error: invalid regular expression '('")
    assert tools.run("grep", {"pattern": "zzz"}) == "no matches for zzz\n[skipped 1 files over 8 MiB]"
    assert tools.run("grep", {"pattern": "zzz", "path": "many.txt"}) == "no matches for zzz"


def test_grep_does_not_look_in_unsearchable_files_so_they_take_none_of_max_matches(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("KEY=secret\n" * 5)
    (tmp_path / "a.py").write_text("KEY = 1\nKEY = 2\n")
    tools = LocalTools(tmp_path)
    result = tools.run("grep", {"pattern": "KEY", "max_matches": 2}, None, lambda file: file == ".env")
    assert result.splitlines() == [
        "a.py:1: KEY = 1",
        "a.py:2: KEY = 2",
        "[1 file a permission rule denies reading not searched]",
    ]
    alone = tools.run("grep", {"pattern": "secret"}, None, lambda file: file == ".env")
    assert alone == "no matches for secret\n[1 file a permission rule denies reading not searched]"
    assert tools.run("grep", {"pattern": "secret"}) == "\n".join(f".env:{n}: KEY=secret" for n in range(1, 6))


def test_repo_map_shows_tree_sizes_and_languages_once_per_request(repo: Path) -> None:
    cache = RepoMapCache()
    tools = LocalTools(repo, repo_maps=cache)
    text = tools.run("repo_map", {})
    lines = text.splitlines()
    assert lines[0].startswith(f"{repo}: 6 files, ") and "Python 3" in lines[0] and "Markdown 1" in lines[0]
    assert "src/" in lines and "  deep/" in lines
    assert "    util.py  10 B  Python" in lines
    assert not any("build" in line or "node_modules" in line for line in lines)
    (repo / "src" / "late.py").write_text("x = 1\n")
    try:
        assert tools.run("repo_map", {}) == text  # computed once per request
        assert "late.py" in RepoMapCache().get(repo)  # a new request sees the new file
    finally:
        (repo / "src" / "late.py").unlink()

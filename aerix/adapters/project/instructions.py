"""Instruction files: what the user and the project tell every agent, gathered into the
instructions segment.

Read in this order (more general first, so the most specific text comes last):

1. the user's own: ``$XDG_CONFIG_HOME/aerix/AERIX.md`` and ``~/.claude/CLAUDE.md``
   (``$CLAUDE_CONFIG_DIR/CLAUDE.md``);
2. from the repository root down to the working directory, in each folder: ``AERIX.md``,
   ``AGENTS.md``, ``CLAUDE.md`` and ``.claude/CLAUDE.md``.

Outside a git repository only the working directory itself is read. The same file reached
twice (a symlink, ``AGENTS.md`` -> ``CLAUDE.md``) or the same text in two files is kept once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from aerix.adapters.paths import claude_projects_dir, config_home

#: File names read in each folder, in this order.
INSTRUCTION_FILE_NAMES = ("AERIX.md", "AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md")


@dataclass(frozen=True)
class InstructionFile:
    path: Path
    scope: str  # "user" or "project"
    text: str


def find_repository_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.git`` (a folder, or a file in a
    worktree or submodule), or None outside any repository. No git process is run."""
    current = start.resolve()
    for folder in (current, *current.parents):
        if (folder / ".git").exists():
            return folder
    return None


def project_root(cwd: Path) -> Path:
    """Where project settings, skills and agents live: the repository root, else ``cwd``."""
    return find_repository_root(cwd) or cwd.resolve()


def instruction_paths(cwd: Path) -> list[tuple[Path, str]]:
    """Every place an instruction file may be, with its scope, in reading order."""
    user = [(config_home() / "AERIX.md", "user"), (claude_projects_dir().parent / "CLAUDE.md", "user")]
    here = cwd.resolve()
    root = find_repository_root(here) or here
    folders = [here, *here.parents]
    folders = list(reversed(folders[: folders.index(root) + 1]))
    project = [(folder / name, "project") for folder in folders for name in INSTRUCTION_FILE_NAMES]
    return user + project


def load_instruction_files(cwd: Path) -> tuple[list[InstructionFile], list[str]]:
    """The instruction files that exist, and notes for the ones that could not be read."""
    files: list[InstructionFile] = []
    notes: list[str] = []
    seen_paths: set[Path] = set()
    seen_texts: set[str] = set()
    for path, scope in instruction_paths(cwd):
        if not path.is_file():
            continue
        real = path.resolve()
        if real in seen_paths:
            continue
        seen_paths.add(real)
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            notes.append(f"instructions {path}: skipped ({exc})")
            continue
        if not text or text in seen_texts:
            continue
        seen_texts.add(text)
        files.append(InstructionFile(path, scope, text))
    return files, notes


def render_instructions(files: list[InstructionFile], cwd: Path) -> str:
    """The instructions segment: each file under a heading naming it; empty when none."""
    if not files:
        return ""
    root = find_repository_root(cwd) or cwd.resolve()
    sections = ["# Instructions", "These are the user's and the project's instructions; follow them."]
    for file in files:
        sections.append(f"## {_label(file, root)}\n{file.text}")
    return "\n\n".join(sections)


def _label(file: InstructionFile, root: Path) -> str:
    if file.scope == "project":
        return os.path.relpath(file.path.resolve(), root)
    home = str(Path.home())
    text = str(file.path)
    return "~" + text[len(home) :] if text.startswith(home + os.sep) else text

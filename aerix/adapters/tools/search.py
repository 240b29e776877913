"""glob and grep over the file set (see ``file_set``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from aerix.adapters.tools.common import ToolFailure, display_path, resolve_path
from aerix.adapters.tools.file_set import compile_glob, list_files, split_glob_root
from aerix.domain import bounds

_BINARY_SNIFF_BYTES = 8192  # a NUL in the first 8 KiB marks a file as binary, as git does


def glob_tool(cwd: Path, pattern: str, path: str | None = None) -> str:
    """Files matching ``pattern`` under ``path`` (default the working directory), listed relative
    to the working directory. ``*`` crosses ``/``."""
    if not pattern:
        raise ToolFailure("pattern is empty")
    prefix, rest = split_glob_root(pattern)
    root = resolve_path(cwd, path or ".")
    if prefix:
        root = resolve_path(root, prefix)
    if not root.is_dir():
        return f"no files match {pattern} ({display_path(cwd, root)} is not a folder)"
    matches = compile_glob(rest)
    found = [display_path(cwd, root / name) for name in list_files(root) if matches(name)]
    if not found:
        return f"no files match {pattern}"
    return "\n".join(found)


def grep_tool(
    cwd: Path,
    pattern: str,
    path: str | None = None,
    glob: str | None = None,
    max_matches: int = bounds.GREP_MAX_MATCHES,
    unsearchable: Callable[[str], bool] | None = None,
) -> str:
    """Lines matching the regular expression, as ``file:line: text``. ``unsearchable``: files
    (as shown) not looked in, counted in a line of their own."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolFailure(f"invalid regular expression {pattern!r}: {exc}") from exc
    if max_matches < 1:
        raise ToolFailure("max_matches must be at least 1")
    target = resolve_path(cwd, path or ".")
    files = _files_to_search(target, glob)
    lines: list[str] = []
    skipped_large = skipped_denied = 0
    for file in files:
        if unsearchable is not None and unsearchable(display_path(cwd, file)):
            skipped_denied += 1
            continue
        if file.stat().st_size > bounds.GREP_MAX_FILE_BYTES:
            skipped_large += 1
            continue
        for number, text in _matching_lines(file, regex):
            if len(lines) == max_matches:
                lines.append(f"[stopped after {max_matches} matches; narrow the pattern, path or glob]")
                return "\n".join(lines)
            lines.append(f"{display_path(cwd, file)}:{number}: {_cut(text)}")
    if not lines:
        lines.append(f"no matches for {pattern}")
    if skipped_large:
        mib = bounds.GREP_MAX_FILE_BYTES // (1024 * 1024)
        lines.append(f"[skipped {skipped_large} files over {mib} MiB]")
    if skipped_denied:
        lines.append(f"[{_files(skipped_denied)} a permission rule denies reading not searched]")
    return "\n".join(lines)


def _files(count: int) -> str:
    return "1 file" if count == 1 else f"{count} files"


def _files_to_search(target: Path, glob: str | None) -> list[Path]:
    if target.is_file():
        return [target]
    if not target.is_dir():
        raise ToolFailure(f"no such file or folder: {target}")
    names = list_files(target)
    if glob:
        matches = compile_glob(glob)
        by_name = "/" not in glob  # "*.py" or "test_*" also match a file's own name at any depth
        names = [name for name in names if matches(name) or (by_name and matches(name.rsplit("/", 1)[-1]))]
    return [target / name for name in names]


def _matching_lines(file: Path, regex: re.Pattern[str]) -> list[tuple[int, str]]:
    try:
        data = file.read_bytes()
    except OSError:
        return []  # unreadable files are not matches; permission errors are common in trees
    if b"\0" in data[:_BINARY_SNIFF_BYTES]:
        return []
    text = data.decode("utf-8", errors="replace")
    return [(number, line) for number, line in enumerate(text.splitlines(), start=1) if regex.search(line)]


def _cut(line: str) -> str:
    if len(line) <= bounds.GREP_LINE_MAX_CHARS:
        return line
    return line[: bounds.GREP_LINE_MAX_CHARS] + " […]"

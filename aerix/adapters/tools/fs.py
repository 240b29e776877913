"""read, write and edit: the file tools."""

from __future__ import annotations

import os
from collections.abc import Set as AbstractSet
from pathlib import Path

from aerix.adapters.tools.common import ToolFailure, cut_line, display_path, resolve_path, text_or_none
from aerix.adapters.tools.python_checks import (
    check_python,
    keep_definitions,
    mend_python,
    mended_note,
)
from aerix.domain import bounds


def read_tool(cwd: Path, path: str, offset: int = 1, limit: int = bounds.READ_LIMIT_LINES) -> str:
    """Lines ``offset``… of a file (counting from 1), numbered, each cut to READ_LINE_MAX_CHARS;
    a directory gives its entries (folders end with ``/``)."""
    target = resolve_path(cwd, path)
    if offset < 1 or limit < 1:
        raise ToolFailure("offset and limit count from 1")
    if target.is_dir():
        return _list_directory(cwd, target)
    if not target.exists():
        raise ToolFailure(f"no such file: {path}")
    try:
        text = target.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ToolFailure(f"cannot read {path}: {exc.strerror or exc}") from exc
    lines = text.splitlines()
    if not lines:
        return f"({display_path(cwd, target)} is empty)"
    if offset > len(lines):
        raise ToolFailure(f"{path} has {len(lines)} lines; offset {offset} is past the end")
    shown = lines[offset - 1 : offset - 1 + limit]
    width = len(str(offset - 1 + len(shown)))
    body = [f"{number:>{width}}\t{cut_line(line)}" for number, line in enumerate(shown, start=offset)]
    last = offset - 1 + len(shown)
    if last < len(lines):
        body.append(f"[lines {offset}-{last} of {len(lines)}; read on with offset={last + 1}]")
    return "\n".join(body)


def _list_directory(cwd: Path, folder: Path) -> str:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as exc:
        raise ToolFailure(f"cannot list {folder}: {exc.strerror or exc}") from exc
    names = [entry.name + ("/" if entry.is_dir() else "") for entry in entries]
    header = f"{display_path(cwd, folder)}/ ({len(names)} entries)"
    return "\n".join([header, *names]) if names else f"{header}: empty"


#: A whole-file write over a file the agent has not seen is refused, and the refusal shows the
#: file (as ``read`` would), so the next write can keep what it must: a 1.5B coder asked to fix
#: one function wrote calc.py from memory and the function beside it was gone; told only to read
#: first, it sent the same write again. A read in the same turn as the write does not count: the
#: write was composed before the read's result existed (the 1.5B sent both at once, and lost the
#: function just the same).
UNREAD_WRITE = (
    "{path} already exists and you wrote this without having seen it, so it was not replaced. It holds:"
)
UNREAD_WRITE_NEXT = "Write it again with every part you keep, or edit just the lines that change."


class UnreadWrite(ToolFailure):
    """A write refused by the guard above: its message shows the file."""


#: A write of the content a file already holds changes nothing, and saying "replaced" would tell
#: the model its work is done: asked on its second try to fix pig_latin.py, whose tests all
#: failed, the 1.5B wrote the file it had written on its first, word for word, read "replaced
#: pig_latin.py", and answered that it had fixed it.
UNCHANGED_WRITE = (
    "{path} already holds exactly this content, so nothing changed. If the request needs a change, "
    "write what should be different; if the file is already right, go on without writing it."
)
UNCHANGED_EDIT = "old and new are the same text, so nothing would change; put the changed text in new"


def write_tool(
    cwd: Path,
    path: str,
    content: str,
    seen: AbstractSet[Path],
    judge_python: bool,
    baseline: str | None = None,
) -> str:
    """Create or replace a file; parent folders are created. A file with content that is not in
    ``seen`` (the files whose text this agent has had in its context) is refused with
    :class:`UnreadWrite`, not replaced; with ``judge_python``, top-level definitions of a
    ``.py`` file the content leaves out are kept (``keep_definitions``), and a file left unparsable,
    or using a name ``baseline`` (``python_baseline``) did not leave undefined, or with its code
    as it was while functions in it are stubs, raises a ``BrokenPython`` (``python_checks``)
    once written. Content the file already holds is not written again: an error says nothing
    changed (``UNCHANGED_WRITE``), after a ``BrokenPython`` if the file still earns one."""
    target = resolve_path(cwd, path)
    if target.is_dir():
        raise ToolFailure(f"{path} is a folder")
    existed = target.exists()
    if existed and target not in seen and target.stat().st_size > 0:
        shown = read_tool(cwd, path)
        raise UnreadWrite("\n".join((UNREAD_WRITE.format(path=path), shown, UNREAD_WRITE_NEXT)))
    mended = mend_python(target, content, judge_python, baseline)
    if mended is not None:
        content = mended.text
    held = text_or_none(target) if existed else None
    # Only a judged .py file is checked against what it held.
    before = held if judge_python and target.suffix == ".py" else None
    content, kept = keep_definitions(before, baseline, content)
    verb = "replaced" if existed else "created"
    note = mended_note(mended) + kept
    if content == held:
        # A file still broken, or stubs still in place, are named first: they say what to change.
        check_python(target, path, verb, baseline, content, judge_python, note, before)
        raise ToolFailure(UNCHANGED_WRITE.format(path=path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise ToolFailure(f"cannot write {path}: {exc.strerror or exc}") from exc
    check_python(target, path, verb, baseline, content, judge_python, note, before)
    size = len(content.encode("utf-8"))
    done = f"{verb} {display_path(cwd, target)} ({size} bytes, {len(content.splitlines())} lines)"
    return done + note


def edit_tool(
    cwd: Path,
    path: str,
    old: str,
    new: str,
    replace_all: bool,
    judge_python: bool,
    baseline: str | None = None,
) -> str:
    """Replace the exact string ``old`` with ``new``; refused when ``old`` is missing, or found
    more than once without ``replace_all``. Python is checked as ``write_tool`` checks it."""
    target = resolve_path(cwd, path)
    if not target.is_file():
        raise ToolFailure(f"no such file: {path}")
    if old == "":
        raise ToolFailure("old is empty; to write a whole file use write")
    if old == new:
        raise ToolFailure(UNCHANGED_EDIT)
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolFailure(f"cannot read {path} as UTF-8 text: {exc}") from exc
    count = text.count(old)
    if count == 0:
        raise ToolFailure(f"old text not found in {path}; read the file and copy the text exactly")
    if count > 1 and not replace_all:
        raise ToolFailure(
            f"old text found {count} times in {path}; include more surrounding text to make it "
            "unique, or set replace_all"
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    mended = mend_python(target, updated, judge_python, baseline)
    if mended is not None:
        updated = mended.text
    try:
        target.write_text(updated, encoding="utf-8")
    except OSError as exc:
        raise ToolFailure(f"cannot write {path}: {exc.strerror or exc}") from exc
    note = mended_note(mended)
    check_python(target, path, "edited", baseline, updated, judge_python, note, text)
    replaced = count if replace_all else 1
    plural = "s" if replaced > 1 else ""
    done = f"edited {display_path(cwd, target)}: replaced {replaced} occurrence{plural}"
    return done + note

"""read, write and edit: the file tools."""

from __future__ import annotations

import os
from collections.abc import Set as AbstractSet
from pathlib import Path

from aerix.adapters.git.git_runner import GitFailed, run_git
from aerix.adapters.tools.common import ToolFailure, display_path, resolve_path
from aerix.domain import bounds
from aerix.domain.string_mends import MendedText, mend_strings


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
    body = [f"{number:>{width}}\t{_cut(line)}" for number, line in enumerate(shown, start=offset)]
    last = offset - 1 + len(shown)
    if last < len(lines):
        body.append(f"[lines {offset}-{last} of {len(lines)}; read on with offset={last + 1}]")
    return "\n".join(body)


def _cut(line: str) -> str:
    if len(line) <= bounds.READ_LINE_MAX_CHARS:
        return line
    return (
        line[: bounds.READ_LINE_MAX_CHARS] + f" [… {len(line) - bounds.READ_LINE_MAX_CHARS} more characters]"
    )


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


def write_tool(cwd: Path, path: str, content: str, seen: AbstractSet[Path], judge_python: bool) -> str:
    """Create or replace a file; parent folders are created. A file with content that is not in
    ``seen`` (the files whose text this agent has had in its context) is refused with
    :class:`UnreadWrite`, not replaced; with ``judge_python``, a ``.py`` file left unparsable
    raises :class:`UnparsablePython` once written."""
    target = resolve_path(cwd, path)
    if target.is_dir():
        raise ToolFailure(f"{path} is a folder")
    existed = target.exists()
    if existed and target not in seen and target.stat().st_size > 0:
        shown = read_tool(cwd, path)
        raise UnreadWrite("\n".join((UNREAD_WRITE.format(path=path), shown, UNREAD_WRITE_NEXT)))
    mended = _mended(target, content, judge_python)
    if mended is not None:
        content = mended.text
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise ToolFailure(f"cannot write {path}: {exc.strerror or exc}") from exc
    verb = "replaced" if existed else "created"
    _check_python(target, path, verb, content, judge_python)
    size = len(content.encode("utf-8"))
    done = f"{verb} {display_path(cwd, target)} ({size} bytes, {len(content.splitlines())} lines)"
    return done + _mended_note(mended)


def edit_tool(cwd: Path, path: str, old: str, new: str, replace_all: bool, judge_python: bool) -> str:
    """Replace the exact string ``old`` with ``new``; refused when ``old`` is missing, or found
    more than once without ``replace_all``."""
    target = resolve_path(cwd, path)
    if not target.is_file():
        raise ToolFailure(f"no such file: {path}")
    if old == "":
        raise ToolFailure("old is empty; to write a whole file use write")
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
    mended = _mended(target, updated, judge_python)
    if mended is not None:
        updated = mended.text
    try:
        target.write_text(updated, encoding="utf-8")
    except OSError as exc:
        raise ToolFailure(f"cannot write {path}: {exc.strerror or exc}") from exc
    _check_python(target, path, "edited", updated, judge_python)
    replaced = count if replace_all else 1
    plural = "s" if replaced > 1 else ""
    done = f"edited {display_path(cwd, target)}: replaced {replaced} occurrence{plural}"
    return done + _mended_note(mended)


#: What a write or edit result adds for each kind of string it mended before writing
#: (``aerix.domain.string_mends``): the file as written, so the model's next change starts from
#: it, and the spelling that says it directly.
JOINED_STRINGS = (
    "; on {lines} a line break inside a quoted string was written as \\n, as Python needs "
    "(inside JSON, write \\\\n for that)"
)
ESCAPED_APOSTROPHES = "; on {lines} an apostrophe inside a quoted string was written as \\', as Python needs"


def _mended(target: Path, text: str, judge_python: bool) -> MendedText | None:
    if target.suffix != ".py" or not judge_python:
        return None
    return mend_strings(text)


def _mended_note(mended: MendedText | None) -> str:
    if mended is None:
        return ""
    notes = [(JOINED_STRINGS, mended.joined), (ESCAPED_APOSTROPHES, mended.escaped)]
    return "".join(note.format(lines=_lines(numbers)) for note, numbers in notes if numbers)


def _lines(numbers: tuple[int, ...]) -> str:
    listed = ", ".join(str(number) for number in numbers)
    return f"lines {listed}" if len(numbers) > 1 else f"line {listed}"


#: A ``.py`` file a write or edit leaves unparsable, where it parsed before (or is new), gives an
#: error result, though the change is made: the 1.5B wrote bob.py with an unescaped quote in a
#: string ('Calm down, I know what I'm doing!'), answered done, and on its second try wrote the
#: same file again from the test run's "ERROR bob_test.py". As an error, the same write may run
#: again and the failing-call rule bounds it. Aider lints each edit for the same reason. A file
#: that did not parse when the agent first changed it, nor as git's HEAD holds it (written for a
#: newer Python than aerix's, say), is not judged (``judged_as_python``).
UNPARSABLE_PYTHON = (
    "{path} was {verb}, but it is not valid Python now ({problem}); write it again with that fixed"
)


class UnparsablePython(ToolFailure):
    """The change was made, and left a ``.py`` file that does not parse (UNPARSABLE_PYTHON)."""


def python_problem(text: str) -> str | None:
    """Why ``text`` does not compile as Python (``line N: message: the line``), or None."""
    try:
        compile(text, "<file>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        lines = text.splitlines()
        number = exc.lineno or 0
        if not 1 <= number <= len(lines) or not lines[number - 1].strip():
            return f"line {number}: {exc.msg}"
        # The line itself, so the agent (and whoever reads the log) sees what broke without a read.
        return f"line {number}: {exc.msg}: {_cut(lines[number - 1].strip())}"
    except ValueError as exc:  # a NUL byte
        return str(exc)
    return None


def judged_as_python(cwd: Path, target: Path) -> bool:
    """Whether changes to ``target`` are judged as Python: not a ``.py`` file, missing, or parsing
    now; or, when it does not parse now, parsing as git's ``HEAD`` holds it. Then the breakage is
    this work's (an earlier request of the session left it so: the 1.5B's second try at bob.py
    wrote the same broken file and answered done), not the project's own (code for a newer
    Python than aerix's, say, or a file git does not hold)."""
    if _parses_as_python(target):
        return True
    try:
        committed = run_git(cwd, "show", f"HEAD:./{target.relative_to(cwd).as_posix()}")
    except (GitFailed, ValueError):  # not in a repository, not at HEAD, or outside cwd
        return False
    return python_problem(committed) is None


def _parses_as_python(target: Path) -> bool:
    if target.suffix != ".py" or not target.is_file():
        return True
    try:
        return python_problem(target.read_text(encoding="utf-8")) is None
    except (OSError, UnicodeDecodeError):
        return False


def _check_python(target: Path, path: str, verb: str, text: str, judge: bool) -> None:
    if target.suffix != ".py" or not judge:
        return
    problem = python_problem(text)
    if problem is not None:
        raise UnparsablePython(UNPARSABLE_PYTHON.format(path=path, verb=verb, problem=problem))

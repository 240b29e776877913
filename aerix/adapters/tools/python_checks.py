"""Python a ``write`` or ``edit`` leaves: strings mended before it is written, and the checks
after (it compiles; it names nothing it never defines)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from pyflakes import checker as pyflakes_checker
from pyflakes import messages as pyflakes_messages

from aerix.adapters.git.git_runner import GitFailed, run_git
from aerix.adapters.tools.common import ToolFailure, cut_line, text_or_none
from aerix.domain.kept_definitions import with_kept_definitions
from aerix.domain.line_numbers import without_line_numbers
from aerix.domain.missing_imports import with_stdlib_imports
from aerix.domain.python_syntax import parsed_module
from aerix.domain.string_mends import MendedText, mend_strings
from aerix.domain.stub_bodies import unchanged_stubs

#: What a write or edit result adds for each kind of string it mended before writing
#: (``aerix.domain.string_mends``): the file as written, so the model's next change starts from
#: it, and the spelling that says it directly.
JOINED_STRINGS = (
    "; on {lines} a line break inside a quoted string was written as \\n, as Python needs "
    "(inside JSON, write \\\\n for that)"
)
ESCAPED_APOSTROPHES = "; on {lines} an apostrophe inside a quoted string was written as \\', as Python needs"


#: What a write or edit result adds when the text came with its lines numbered, as ``read`` shows
#: them (``aerix.domain.line_numbers``), and was written without the numbers.
UNNUMBERED_LINES = "; its lines began with line numbers, as read shows a file: they were left out"


#: What a write or edit result adds when it used standard-library modules it never imported, and
#: their ``import`` lines were added (``aerix.domain.missing_imports``).
ADDED_IMPORTS = "; it used {modules} without importing {them}: {lines} added on line {line}"


def mend_python(target: Path, text: str, judge_python: bool, baseline: str | None) -> MendedText | None:
    """``text`` mended before it is written (a judged ``.py`` file only): line numbers copied
    from ``read`` left out, broken string literals mended, and imports added for standard-library
    modules it uses unimported where ``baseline`` (``python_baseline``) did not; None when
    nothing needed mending."""
    if target.suffix != ".py" or not judge_python:
        return None
    mended = _mend_syntax(text)
    written = mended.text if mended is not None else text
    known = undefined_names(baseline) if baseline is not None else {}
    missing = [name for name in undefined_names(written) if name not in known]
    added = with_stdlib_imports(written, missing) if missing else None
    if added is None:
        return mended
    return replace(
        mended or MendedText(written), text=added.text, imported=added.modules, imported_line=added.line
    )


def _mend_syntax(text: str) -> MendedText | None:
    unnumbered = without_line_numbers(text) if python_problem(text) is not None else None
    if unnumbered is not None:
        mended = mend_strings(unnumbered)
        candidate = mended if mended is not None else MendedText(unnumbered)
        if python_problem(candidate.text) is None:
            return replace(candidate, unnumbered=True)
    return mend_strings(text)


def mended_note(mended: MendedText | None) -> str:
    if mended is None:
        return ""
    notes = [(JOINED_STRINGS, mended.joined), (ESCAPED_APOSTROPHES, mended.escaped)]
    unnumbered = UNNUMBERED_LINES if mended.unnumbered else ""
    strings = "".join(note.format(lines=_lines(numbers)) for note, numbers in notes if numbers)
    return unnumbered + strings + _imports_note(mended)


def _imports_note(mended: MendedText) -> str:
    if not mended.imported:
        return ""
    modules = ", ".join(mended.imported)
    lines = "; ".join(f"import {module}" for module in mended.imported)
    them = "them" if len(mended.imported) > 1 else "it"
    return ADDED_IMPORTS.format(modules=modules, them=them, lines=lines, line=mended.imported_line)


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


#: The same, for the commonest way a small model leaves a file unparsable: a function whose body
#: is only a comment. On change, the 1.5B wrote ``def find_fewest_coins(coins, target):`` over
#: ``# Your implementation here`` three times in a row, told each time only "expected an
#: indented block after function definition on line 1".
BODILESS_FUNCTION = (
    "{path} was {verb}, but it is not valid Python now: {name}() on line {line} has no body, "
    "only comments; write the code it needs"
)
_NO_BODY = re.compile(r"expected an indented block after function definition on line (\d+)")
_DEF_NAME = re.compile(r"\s*(?:async\s+)?def\s+(\w+)")


class BrokenPython(ToolFailure):
    """The change was made, and left a ``.py`` file broken: the result is an error all the same."""


class UnparsablePython(BrokenPython):
    """The file does not parse (UNPARSABLE_PYTHON)."""


#: A ``.py`` file a write or edit leaves using a name it neither defines nor imports, where the
#: file before the change did not, gives an error result too, though the change is made. On
#: simple-cipher the 1.5B called ``random.randint`` with no ``import random``, answered done,
#: and on its second try, shown the NameError, wrote the same file again. Aider runs flake8's
#: fatal checks after each edit (undefined names among them) for the same reason; this is
#: pyflakes' undefined-name check. At most UNDEFINED_NAMES_SHOWN names are listed.
UNDEFINED_NAMES = (
    "{path} was {verb}, but it uses {names} without defining or importing {them}; add the import "
    "or the definition, and write it again"
)
UNDEFINED_NAMES_SHOWN = 5


class UndefinedNames(BrokenPython):
    """The file uses names it never defines (UNDEFINED_NAMES)."""


#: A change to a ``.py`` file that leaves its code as it was (comments and layout aside) while
#: functions in it are still stubs gives an error result, though the change is made: asked to
#: implement camicia's ``simulate_game``, the 1.5B wrote ``# Your implementation here`` above
#: the stub's ``pass``, was told "replaced camicia.py", and answered that the function was now
#: implemented (``aerix.domain.stub_bodies``). At most UNDEFINED_NAMES_SHOWN names are listed.
UNCHANGED_STUBS = (
    "{path} was {verb}, but its code is what it was: {names} still {do} nothing (a body of only "
    "pass, ... or raise NotImplementedError); write the code {it} needs"
)


class UnchangedStubs(BrokenPython):
    """The change left the code as it was, stubs and all (UNCHANGED_STUBS)."""


#: What a whole-file ``write`` of a judged ``.py`` file adds when it left out top-level functions,
#: classes or assigned names that the file and the project's file define, and they were put back
#: as they were (``aerix.domain.kept_definitions``): asked to fix add() in calc.py, the 1.5B's
#: retry wrote calc.py whole with mul() gone; on dot-dsl its write left out ``NODE, EDGE, ATTR =
#: range(3)``, which the tests import; refused, it sent the same write three times. At most
#: UNDEFINED_NAMES_SHOWN names are listed.
KEPT_DEFINITIONS = (
    "; it left out {names}, which the file defines: kept as {it} {was} (to remove {them}, use edit)"
)


def keep_definitions(before: str | None, baseline: str | None, text: str) -> tuple[str, str]:
    """``text`` with the top-level definitions it left out put back (``before``: the file it
    replaces; ``baseline``: ``python_baseline``), and the note that says so ("" for none)."""
    if before is None or baseline is None:
        return text, ""
    kept = with_kept_definitions(before, baseline, text)
    if kept is None:
        return text, ""
    names = ", ".join(kept.names[:UNDEFINED_NAMES_SHOWN])
    many = len(kept.names) > 1
    note = KEPT_DEFINITIONS.format(
        names=names, it="they" if many else "it", was="were" if many else "was", them="them" if many else "it"
    )
    return kept.text, note


def undefined_names(text: str) -> dict[str, int]:
    """The names ``text`` uses and never defines or imports (pyflakes), each with the first line
    it is used on; empty when the text does not parse."""
    tree = parsed_module(text)
    if tree is None:
        return {}
    found: dict[str, int] = {}
    for message in pyflakes_checker.Checker(tree, filename="<file>").messages:
        if isinstance(message, pyflakes_messages.UndefinedName):
            found.setdefault(str(message.message_args[0]), message.lineno)
    return found


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
        return f"line {number}: {exc.msg}: {cut_line(lines[number - 1].strip())}"
    except ValueError as exc:  # a NUL byte
        return str(exc)
    return None


def _bodiless_function(text: str, problem: str) -> tuple[str, int] | None:
    """The function (name, line) whose missing body ``problem`` is about, or None."""
    found = _NO_BODY.search(problem)
    if found is None:
        return None
    number = int(found.group(1))
    lines = text.splitlines()
    named = _DEF_NAME.match(lines[number - 1]) if 1 <= number <= len(lines) else None
    return (named.group(1), number) if named is not None else None


def judged_as_python(cwd: Path, target: Path) -> bool:
    """Whether changes to ``target`` are judged as Python: not a ``.py`` file, missing, or parsing
    now; or, when it does not parse now, parsing as git's ``HEAD`` holds it. Then the breakage is
    this work's (an earlier request of the session left it so: the 1.5B's second try at bob.py
    wrote the same broken file and answered done), not the project's own (code for a newer
    Python than aerix's, say, or a file git does not hold)."""
    if _parses_as_python(target):
        return True
    committed = _committed_text(cwd, target)
    return committed is not None and python_problem(committed) is None


def python_baseline(cwd: Path, target: Path) -> str | None:
    """The text whose undefined names are the project's own, not this work's: ``target`` as
    git's ``HEAD`` holds it, else as it is now (None for a file that does not exist). Not the
    text an earlier write of this work left: simple-cipher's second try wrote over the first
    try's file, which already used ``random`` unimported, and the name passed as the file's own."""
    committed = _committed_text(cwd, target)
    return committed if committed is not None else text_or_none(target)


def _committed_text(cwd: Path, target: Path) -> str | None:
    """``target`` as git's ``HEAD`` holds it; None when it is not in a repository, not at
    ``HEAD``, or outside ``cwd``."""
    try:
        return run_git(cwd, "show", f"HEAD:./{target.relative_to(cwd).as_posix()}")
    except (GitFailed, ValueError):
        return None


def _parses_as_python(target: Path) -> bool:
    if target.suffix != ".py" or not target.is_file():
        return True
    try:
        return python_problem(target.read_text(encoding="utf-8")) is None
    except (OSError, UnicodeDecodeError):
        return False


def check_python(
    target: Path,
    path: str,
    verb: str,
    baseline: str | None,
    text: str,
    judge: bool,
    mended: str = "",
    before: str | None = None,
) -> None:
    """Raise a :class:`BrokenPython` when the change left ``target`` (a judged ``.py`` file)
    not compiling, using names its ``baseline`` (``python_baseline``) did not leave undefined,
    or with the code of ``before`` (the file the change replaced), stubs and all; its message
    ends with ``mended`` (``mended_note``), what was mended before the text was written, since
    the line numbers it names count the mended text's lines."""
    if target.suffix != ".py" or not judge:
        return
    problem = python_problem(text)
    if problem is not None:
        bodiless = _bodiless_function(text, problem)
        if bodiless is not None:
            name, line = bodiless
            raise UnparsablePython(
                BODILESS_FUNCTION.format(path=path, verb=verb, name=name, line=line) + mended
            )
        raise UnparsablePython(UNPARSABLE_PYTHON.format(path=path, verb=verb, problem=problem) + mended)
    known = undefined_names(baseline) if baseline is not None else {}
    new = [(name, line) for name, line in undefined_names(text).items() if name not in known]
    if new:
        shown = ", ".join(f"{name} (line {line})" for name, line in new[:UNDEFINED_NAMES_SHOWN])
        them = "them" if len(new) > 1 else "it"
        raise UndefinedNames(UNDEFINED_NAMES.format(path=path, verb=verb, names=shown, them=them) + mended)
    stubs = unchanged_stubs(before, text) if before is not None else ()
    if stubs:
        names = ", ".join(stubs[:UNDEFINED_NAMES_SHOWN])
        many = len(stubs) > 1
        raise UnchangedStubs(
            UNCHANGED_STUBS.format(
                path=path, verb=verb, names=names, do="do" if many else "does", it="they" if many else "it"
            )
            + mended
        )

"""Bash permission specifiers, and the parts of a shell command they are checked against.

A deny rule must hold for every command that runs, so a command is checked whole and part by
part: the commands of a list or pipeline (``a && b``, ``a || b``, ``a; b``, ``a | b``, ``a & b``,
one a line), those inside ``$(…)`` and backquotes, the one a ``sh -c '…'`` or ``eval '…'`` runs,
and each part again without what only wraps it (``VAR=x``, ``env``, ``timeout 5``, ``nice``,
``nohup``, ``time``, ``command``, ``exec``, ``sudo``, a subshell's parentheses, the folder of
``/bin/rm``). Quotes are honoured, so ``echo "a && b"`` is one command. This is best effort
against a model, not a sandbox: a command built at run time (``$cmd``, a script file) is not
seen.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

#: How deep ``sh -c`` and ``$(…)`` are followed.
_MAX_DEPTH = 4
_SEPARATORS = ("&&", "||", "|&", ";", "|", "&", "\n")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\S)*\s+")
#: Wrappers that run the rest of the line, and those of their options that take a value.
_WRAPPERS = {
    "env": frozenset({"-u", "-C", "-S"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "time": frozenset(),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "builtin": frozenset(),
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
}


def bash_matches(specifier: str, command: str) -> bool:
    """Whether a Bash rule's specifier matches ``command`` or any of its parts."""
    return any(_matches_one(specifier, part) for part in command_candidates(command))


def _matches_one(specifier: str, command: str) -> bool:
    wanted = _squeeze(specifier)
    if wanted.endswith(":*") and "*" not in wanted[:-2]:
        prefix = wanted[:-2].rstrip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" in wanted.replace("\\*", ""):
        return _wildcard(wanted).fullmatch(command) is not None
    return command == wanted.replace("\\*", "*")


def _wildcard(pattern: str) -> re.Pattern[str]:
    """``*`` is any text (spaces too); a single trailing `` *`` may also be absent."""
    pieces = re.split(r"(?<!\\)\*", pattern)
    literal = [re.escape(piece.replace("\\*", "*")) for piece in pieces]
    if len(pieces) == 2 and pieces[0].endswith(" ") and pieces[1] == "":
        return re.compile(re.escape(pieces[0][:-1].replace("\\*", "*")) + "(?: .*)?", re.DOTALL)
    return re.compile(".*".join(literal), re.DOTALL)


def command_candidates(command: str) -> list[str]:
    """The command whole and every part a rule is checked against, whitespace squeezed."""
    seen: dict[str, None] = {}
    for candidate in _candidates(command, 0):
        squeezed = _squeeze(candidate)
        if squeezed:
            seen.setdefault(squeezed, None)
    return list(seen)


def _candidates(command: str, depth: int) -> Iterator[str]:
    yield command
    if depth > _MAX_DEPTH:
        return
    parts, nested = split_command(command)
    for part in parts:
        for unwrapped in _unwrapped(part):
            yield unwrapped
            inner = _shell_argument(unwrapped)
            if inner is not None:
                yield from _candidates(inner, depth + 1)
    for inner in nested:
        yield from _candidates(inner, depth + 1)


def split_command(command: str) -> tuple[list[str], list[str]]:
    """(the commands of a list or pipeline, the texts of its ``$(…)`` and backquotes)."""
    parts: list[str] = []
    nested: list[str] = []
    current: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(command):
        char = command[index]
        if char == "\\" and quote != "'":
            current.append(command[index : index + 2])
            index += 2
            continue
        if quote == "'":
            quote = None if char == "'" else quote
        elif char == "$" and command.startswith("$(", index):
            end = _closing(command, index + 2)
            nested.append(command[index + 2 : end])
            current.append(command[index : end + 1])
            index = end + 1
            continue
        elif char == "`":
            end = command.find("`", index + 1)
            end = len(command) if end < 0 else end
            nested.append(command[index + 1 : end])
            current.append(command[index : end + 1])
            index = end + 1
            continue
        elif quote == '"':
            quote = None if char == '"' else quote
        elif char in "'\"":
            quote = char
        else:
            separator = next((s for s in _SEPARATORS if command.startswith(s, index)), None)
            if separator is not None and not _redirection(command, index):
                parts.append("".join(current))
                current = []
                index += len(separator)
                continue
        current.append(char)
        index += 1
    parts.append("".join(current))
    return [part for part in parts if part.strip()], nested


def _redirection(command: str, index: int) -> bool:
    """``2>&1``, ``>&2``, ``&>file``: an ``&`` that belongs to a redirection, not a list."""
    if command[index] != "&":
        return False
    before = command[index - 1] if index > 0 else ""
    after = command[index + 1] if index + 1 < len(command) else ""
    return before in "<>" or after == ">"


def _closing(command: str, start: int) -> int:
    """The index of the ``)`` closing a ``$(`` whose text starts at ``start``."""
    depth, index, quote = 1, start, None
    while index < len(command):
        char = command[index]
        if char == "\\":
            index += 2
            continue
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return len(command)


def _unwrapped(part: str) -> Iterator[str]:
    """The part, then the part without each wrapper in turn (``sudo env X=1 rm x`` → ``rm x``)."""
    text = part.strip()
    while True:
        yield text
        program, _, rest = text.partition(" ")
        if "/" in program.rstrip("/"):
            yield f"{program.rstrip('/').rsplit('/', 1)[-1]} {rest}".strip()  # /bin/rm x is rm x
        stripped = _strip_once(text)
        if stripped is None or stripped == text:
            return
        text = stripped


def _strip_once(text: str) -> str | None:
    text = text.strip()
    if text[:1] in "({!":
        closing = {"(": ")", "{": "}"}.get(text[0], "")
        inner = text[1:].strip()
        if closing and inner.endswith(closing):
            inner = inner[: -len(closing)]
        return inner.strip().rstrip(";").strip() or None
    if text[-1:] in ")}" and text.count(text[-1]) > text.count({")": "(", "}": "{"}[text[-1]]):
        return text[:-1].strip() or None  # the end of a subshell split at its && or ;
    assignment = _ASSIGNMENT.match(text)
    if assignment:
        return text[assignment.end() :]
    words = _words(text)
    if not words or words[0] not in _WRAPPERS:
        return None
    takes_value = _WRAPPERS[words[0]]
    index = 1
    while index < len(words) and (words[index].startswith("-") or "=" in words[index]):
        index += 2 if words[index] in takes_value else 1
    if words[0] == "timeout" and index < len(words):
        index += 1  # the duration
    rest = words[index:]
    return shlex.join(rest) if rest else None


def _shell_argument(part: str) -> str | None:
    """The command ``sh -c '…'`` or ``eval …`` runs, else None."""
    words = _words(part)
    if not words:
        return None
    if words[0] == "eval":
        return " ".join(words[1:])
    if words[0].rsplit("/", 1)[-1] in _SHELLS:
        for index, word in enumerate(words[1:-1], start=1):
            if word.startswith("-") and "c" in word[1:]:
                return words[index + 1]
    return None


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _squeeze(text: str) -> str:
    return " ".join(text.split())

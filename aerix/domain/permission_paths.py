"""The path patterns of Claude Code's file rules (``Read(./.env)``, ``Edit(src/**)``).

Where a pattern is anchored:

- ``//abs/x``: the absolute path ``/abs/x``;
- ``~/x``: under the home folder;
- ``/x``, ``./x``: under the project root (Claude Code reads ``/x`` of a project's settings the
  same way; write ``//x`` for an absolute path);
- ``x``: under the project root, gitignore-style: a pattern with no ``/`` but a trailing one
  (``.env``, ``*.pem``, ``secrets/``) matches at any depth, one with a ``/`` inside is anchored.

Then gitignore's wildcards: ``*`` and ``?`` within one path segment, ``[abc]`` a set (``[!a]``
its complement), ``**`` across segments (``src/**``, ``**/x``, ``a/**/b``). A pattern that
matches a folder covers everything in it. Matching is on the path's text, made absolute against
the working directory and normalised (``a/../b`` is ``b``); a symbolic link is not followed.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Literal

Base = Literal["absolute", "home", "root"]
#: A name no file has: a pattern that matches it inside a folder matches whatever is there.
_ANY_NAME = "\x00"


@dataclass(frozen=True)
class PathPattern:
    """A parsed pattern: what it is relative to, and its regular expression over the path
    relative to that base (``/``-separated, no leading ``/``)."""

    base: Base
    regex: re.Pattern[str]

    def matches(self, path: str, *, cwd: str, root: str, home: str, searched: bool = False) -> bool:
        """Whether ``path`` (absolute, or relative to ``cwd``) falls under this pattern; with
        ``searched`` (a folder grep or glob looks through), also whether the pattern covers
        everything in it (``secrets/**`` covers searching ``secrets``)."""
        target = posixpath.normpath(posixpath.join(cwd, path))
        base = {"absolute": "/", "home": home, "root": root}[self.base]
        relative = _relative_to(target, posixpath.normpath(base))
        if relative is None:
            return False
        if searched and self.regex.fullmatch(posixpath.join(relative, _ANY_NAME)) is not None:
            return True
        return relative != "" and self.regex.fullmatch(relative) is not None


def parse_path_pattern(specifier: str) -> PathPattern:
    """A rule's path pattern; raises ValueError on one that names nothing."""
    text = specifier.strip()
    base: Base = "root"
    anchored = True
    if text.startswith("//"):
        base, text = "absolute", text[2:]
    elif text == "~" or text.startswith("~/"):
        base, text = "home", text[2:]
    elif text.startswith("/"):
        text = text[1:]
    elif text.startswith("./"):
        text = text[2:]
    else:
        anchored = "/" in text.rstrip("/")
    text = posixpath.normpath(text) if text.strip("/") else ""
    if text in ("", "**") and base != "root":
        text = "**"
    elif not text or text == ".":
        raise ValueError("the path pattern names no file; write ./name, src/**, ~/name or //abs/path")
    body = _glob_regex(text)
    prefix = "" if anchored else "(?:.*/)?"
    return PathPattern(base, re.compile(f"{prefix}{body}(?:/.*)?", re.DOTALL))


def _glob_regex(pattern: str) -> str:
    """gitignore's wildcards as a regular expression (``**`` across segments)."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif char == "*":
            out.append("[^/]*")
            index += 1
        elif char == "?":
            out.append("[^/]")
            index += 1
        elif char == "[" and (end := pattern.find("]", index + 2)) > 0:
            inside = pattern[index + 1 : end]
            if inside.startswith("!"):
                inside = "^" + inside[1:]
            out.append("[" + inside.replace("\\", "\\\\") + "]")
            index = end + 1
        elif char == "\\" and index + 1 < len(pattern):
            out.append(re.escape(pattern[index + 1]))
            index += 2
        else:
            out.append(re.escape(char))
            index += 1
    return "".join(out)


def _relative_to(target: str, base: str) -> str | None:
    """``target`` relative to ``base`` (both normalised absolute paths); None when outside it."""
    if base == "/":
        return target.lstrip("/")
    if target == base:
        return ""
    if target.startswith(base + "/"):
        return target[len(base) + 1 :]
    return None

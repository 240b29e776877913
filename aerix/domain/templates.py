"""Texts with ``{name}`` placeholders: the prompts a profile holds and the runtime's own notes.

A placeholder is filled by replacing its literal in one pass (never ``str.format``), so braces
in the text (a JSON example) or in a filled-in value are left alone, and a name that is not
given stays as it is. The parts between the placeholders are a template's fixed words: what any
text made from it always says (``aerix.domain.runtime_words`` looks for them in a model's answer).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: ``{name}`` as the code fills it.
PLACEHOLDER = re.compile(r"\{([a-z][a-z_]*)\}")


def fill(template: str, values: Mapping[str, object]) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced by its value."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return str(values[name]) if name in values else match.group(0)

    return PLACEHOLDER.sub(value, template)


def fixed_parts(template: str) -> tuple[str, ...]:
    """The text between the placeholders, in order (empty parts included)."""
    return tuple(PLACEHOLDER.split(template)[::2])

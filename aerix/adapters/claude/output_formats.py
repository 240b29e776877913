"""The headless output formats' names (``--output-format``), apart from ``aerix.adapters.claude.output``
so that the command line's parser can offer them without importing the formats themselves."""

from __future__ import annotations

from typing import Final, Literal

OutputFormat = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS: Final[tuple[OutputFormat, ...]] = ("text", "json", "stream-json")

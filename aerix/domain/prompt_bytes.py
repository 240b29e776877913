"""A prompt given as bytes (stdin, or argv on a POSIX system) that are not all valid UTF-8.

aerix keeps text as UTF-8 everywhere (the session log is JSON), so such a prompt is read with
each invalid sequence as U+FFFD, said in one note, and its bytes as given are kept beside it in
``session.start`` (``prompt_bytes``): nothing the user typed is lost.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

REPLACEMENT = "\ufffd"


@dataclass(frozen=True)
class DecodedPrompt:
    """The prompt's text; ``raw`` and ``invalid_bytes`` only when some bytes were not UTF-8."""

    text: str
    raw: bytes | None = None
    invalid_bytes: int = 0


def decode_prompt(raw: bytes) -> DecodedPrompt:
    """``raw`` as UTF-8 text, each invalid sequence read as U+FFFD (as ``errors="replace"``)."""
    parts: list[str] = []
    invalid = position = 0
    while True:
        try:
            parts.append(raw[position:].decode("utf-8"))
            break
        except UnicodeDecodeError as error:
            parts.append(raw[position : position + error.start].decode("utf-8"))
            parts.append(REPLACEMENT)
            invalid += error.end - error.start
            position += error.end
    text = "".join(parts)
    return DecodedPrompt(text, raw, invalid) if invalid else DecodedPrompt(text)


def invalid_prompt_note(prompt: DecodedPrompt) -> str:
    """The one note that says a prompt was not valid UTF-8, and where its bytes are kept."""
    return (
        f"the prompt is not valid UTF-8: {prompt.invalid_bytes} byte(s) were read as U+FFFD (�); "
        "the session log keeps the bytes as given (session.start prompt_bytes, base64)"
    )


def encoded_bytes(raw: bytes) -> str:
    """``prompt_bytes`` as the log holds it: base64, so any byte survives JSON."""
    return base64.b64encode(raw).decode("ascii")

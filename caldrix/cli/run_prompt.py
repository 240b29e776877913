"""The prompt ``caldrix run`` answers once: after the model, after ``-p``, or (``-p`` alone) on
stdin. The parser (:mod:`caldrix.cli.main`) and the command (:mod:`caldrix.cli.run`) both read
it here, so neither imports the other."""

from __future__ import annotations

import sys

from caldrix.errors import UsageError

#: ``-p`` given without a prompt: read it from stdin.
STDIN_PROMPT = "\0stdin"


def one_prompt(words: str | None, flag: str | None) -> str | None:
    """The prompt to answer once (``caldrix run MODEL "PROMPT"``, ``-p PROMPT``, or ``-p`` with
    the prompt on stdin), or None for a chat."""
    if words is not None and flag is not None:
        raise UsageError("give the prompt once: after the model or after -p, not both")
    if flag == STDIN_PROMPT:
        flag = sys.stdin.read()
        if not flag.strip():
            raise UsageError("the prompt is empty; give it after -p or on stdin")
    prompt = words if words is not None else flag
    if prompt is not None and not prompt.strip():
        raise UsageError("the prompt is empty; give it after the model or after -p")
    return prompt

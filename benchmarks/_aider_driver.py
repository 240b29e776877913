"""One Aider chat for ``bench_tasks.py``, run by the Python of Aider's own environment (not this
project's): Aider's benchmark loop (``benchmark/benchmark.py``, ``run_test_real``) without its
tests, which the benchmark runs itself.

    python _aider_driver.py --reply-fd N [--model openai/main] [--timeout S] [--history F] FILE…

The coder edits FILE… (the stubs, in the current folder) with the ``whole`` edit format, no git,
no repository map and no other file mentioned in a reply added. Each line on stdin is a JSON
object ``{"message": …}``, sent with ``coder.run``; each answer is one JSON line on the file
descriptor N (Aider prints its own output on stdout): ``{"error": null}`` and the counts Aider
keeps for this message (malformed replies, exhausted windows, lint failures), or the error
that ended it. The model's address comes from ``OPENAI_API_BASE`` and ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--model", default="openai/main")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--history", default=None)
    args = parser.parse_args()
    replies = os.fdopen(args.reply_fd, "w", buffering=1)

    from aider import models  # type: ignore[import-not-found]
    from aider.coders import Coder  # type: ignore[import-not-found]
    from aider.io import InputOutput  # type: ignore[import-not-found]

    models.request_timeout = args.timeout
    io = InputOutput(pretty=False, yes=True, chat_history_file=args.history, fancy_input=False)
    coder = Coder.create(
        models.Model(args.model),
        "whole",
        io,
        fnames=args.files,
        use_git=False,
        stream=False,
        map_tokens=0,
        suggest_shell_commands=False,
    )
    coder.get_file_mentions = lambda _content: set()  # as Aider's benchmark: no other file joins
    coder.show_announcements()
    for line in sys.stdin:
        if not line.strip():
            continue
        before = _counts(coder)
        reply: dict[str, Any] = {"error": None}
        try:
            coder.run(with_message=json.loads(line)["message"], preproc=False)
        except Exception as exc:  # the chat goes on; the benchmark reports what ended this try
            traceback.print_exc()
            reply["error"] = f"{type(exc).__name__}: {exc}"[:300]
        after = _counts(coder)
        reply.update({key: after[key] - before[key] for key in after})
        reply["lint_errors"] = int(coder.lint_outcome is False)  # this message's last lint failed
        replies.write(json.dumps(reply) + "\n")


def _counts(coder: Any) -> dict[str, int]:
    return {
        "malformed": int(coder.num_malformed_responses),
        "exhausted": int(coder.num_exhausted_context_windows),
    }


if __name__ == "__main__":
    main()

"""``caldrix serve --log-requests DIR``: every request written down, in order, to be replayed.

Each request the front reads becomes one file, ``DIR/000001-POST-v1_messages.json``, numbered
in the order the requests arrived (the numbering goes on after the files already there), with
the method, path, query string, the headers that shape an answer, and the body: its JSON when
it parses, else its text. Credentials (``x-api-key``, ``authorization``) are never written.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import anyio.to_thread

#: Headers kept: the ones a replay must send again to be answered the same way.
KEPT_HEADERS: Final = frozenset(
    {
        "anthropic-version",
        "anthropic-beta",
        "content-type",
        "user-agent",
        "x-app",
        "x-claude-code-session-id",
        "x-claude-code-agent-id",
        "x-stainless-helper-method",
    }
)
_NUMBERED = re.compile(r"^(\d+)-")
#: Characters of a path kept in a file's name (a model id in ``/v1/models/{id}`` is the client's).
NAME_CHARS: Final = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class RequestLog:
    """Writes requests into one folder, numbering them."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        last = max((int(m.group(1)) for p in folder.iterdir() if (m := _NUMBERED.match(p.name))), default=0)
        self.folder = folder
        self._numbers = itertools.count(last + 1)

    async def write(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> Path:
        number = next(self._numbers)  # taken on the event loop: the order requests arrived in
        record = {
            "seq": number,
            "time": round(time.time(), 3),
            "method": method,
            "path": path,
            "query": query,
            "headers": {k: v for k, v in headers.items() if k.lower() in KEPT_HEADERS},
            "body": _body(body),
        }
        route = _UNSAFE.sub("_", path.strip("/"))[:NAME_CHARS] or "root"
        name = f"{number:06d}-{_UNSAFE.sub('_', method)[:NAME_CHARS]}-{route}.json"
        target = self.folder / name
        text = json.dumps(record, ensure_ascii=False, indent=1)
        await anyio.to_thread.run_sync(target.write_text, text)
        return target


def _body(body: bytes) -> Any:
    if not body:
        return None
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text

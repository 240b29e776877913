"""``aerix profile edit``'s editor: the person's own, on a file that outlives a refused commit.

The text is written to ``$XDG_STATE_HOME/aerix/profile-edits/<name>.md`` and ``$VISUAL``, else
``$EDITOR``, else ``vi`` is run on it with the terminal. The editor is not bounded: a person is
using it. The file is removed once its text is committed (or left unchanged) and kept when the
commit is refused, so nothing typed is lost.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from aerix.adapters.paths import state_home
from aerix.app.ports.profiles import Edited
from aerix.errors import UsageError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def editor_command() -> list[str]:
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    return shlex.split(command)


class ProcessEditor:
    """:class:`aerix.app.ports.profiles.TextEditor` running ``$VISUAL``/``$EDITOR``."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else state_home() / "profile-edits"

    def edit(self, text: str, name: str) -> Edited:
        self.folder.mkdir(parents=True, exist_ok=True)
        file = self.folder / f"{_UNSAFE.sub('-', name).strip('-')}.md"
        file.write_text(text, encoding="utf-8")
        command = editor_command()
        try:
            status = subprocess.run([*command, str(file)], check=False).returncode
        except OSError as exc:
            raise UsageError(
                f"the editor {command[0]!r} could not run ({exc.strerror}); set $EDITOR; "
                f"your text is in {file}"
            ) from exc
        if status != 0:
            raise UsageError(
                f"the editor exited with status {status}; nothing was committed, your text is in {file}"
            )
        try:
            return Edited(file.read_bytes().decode("utf-8"), file)
        except UnicodeDecodeError as exc:
            raise UsageError(f"{file} is not UTF-8 text after editing; nothing was committed") from exc

    def discard(self, edited: Edited) -> None:
        edited.file.unlink(missing_ok=True)

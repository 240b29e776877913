"""The statuses ``caldrix`` exits with; aerix uses the same numbers for the same cases."""

from __future__ import annotations

from typing import Final

#: Done.
EXIT_OK: Final = 0
#: A refusal or a failure, said in one line (a model that does not load, no pool answering …).
EXIT_FAILED: Final = 1
#: A command line that cannot be used as written (BSD's EX_USAGE, as aerix's).
EXIT_USAGE: Final = 64
#: Ctrl-C, as shells report a SIGINT.
EXIT_CANCELLED: Final = 130

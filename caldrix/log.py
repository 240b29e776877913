"""The pool's log: one line per event on stderr, which Aerix appends to its pool-start log."""

from __future__ import annotations

import logging
import sys
from typing import Final

#: The form of every log line: time, process, level, message.
LOG_FORMAT: Final = "%(asctime)s caldrix[%(process)d] %(levelname)s %(message)s"


def setup_pool_logging(level: int = logging.INFO) -> None:
    """Send caldrix's loggers to stderr (once, however often it is called)."""
    logger = logging.getLogger("caldrix")
    if any(getattr(handler, "_caldrix_pool", False) for handler in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler._caldrix_pool = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False

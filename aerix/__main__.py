"""``python -m aerix``."""

from __future__ import annotations

import sys

from aerix.cli import main

sys.exit(main())

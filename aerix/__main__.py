"""``python -m aerix``."""

from __future__ import annotations

import sys

from aerix.entry import main

sys.exit(main())

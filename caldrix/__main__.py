"""``python -m caldrix``: the same as the ``caldrix`` command."""

import sys

from caldrix.cli.entry import main

sys.exit(main())

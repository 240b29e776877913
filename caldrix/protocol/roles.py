"""The names of the members a pool loads for a role.

``caldrix pool --load MODEL`` names its first member :data:`MAIN_MEMBER`, and ``--decision
MODEL`` names its member :data:`DECISION_MEMBER`; a client that binds roles (aerix) asks for
members by these names, so both sides spell them once, here.
"""

from __future__ import annotations

from typing import Final

#: The member that runs every agent: the first ``--load``.
MAIN_MEMBER: Final = "main"
#: The member that routes requests: ``--decision``. When there is none, the main member routes.
DECISION_MEMBER: Final = "decision"

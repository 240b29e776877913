"""``caldrix pool``: the daemon (``pool stop`` and ``pool status`` are
:mod:`caldrix.cli.pool_control`'s, which loads none of the daemon).

Argument parsing lives in :mod:`caldrix.cli.main`; these functions check the values, run one thing
and print its outcome. Refusals are :class:`~caldrix.errors.CaldrixError`\\ s, which the CLI
prints as one line with exit status 1 (64 for a flag's value that cannot be used).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Final

import anyio

from caldrix.engine_seam import ServingFlags
from caldrix.errors import UsageError
from caldrix.log import setup_pool_logging
from caldrix.members import MemoryPlan
from caldrix.pool import MAX_CONNECTIONS
from caldrix.protocol.roles import DECISION_MEMBER, MAIN_MEMBER
from caldrix.protocol.transport import default_socket_path
from caldrix.server import PoolServer, ServerSettings

#: A pool started with no --load serves nothing until a client loads a member: say so, once.
NO_MODEL_WARNING: Final = (
    "caldrix: warning: no --load given, so the pool serves no model until a client loads one "
    "(member.load); start it with --load MODEL to serve one"
)


def pool_command(args: argparse.Namespace, flags: ServingFlags) -> int:
    """Run the daemon until it is stopped or idle."""
    socket_path: Path = args.socket or default_socket_path()
    settings = server_settings(args, flags, socket_path)
    if not settings.loads:
        print(NO_MODEL_WARNING, file=sys.stderr, flush=True)
    setup_pool_logging()
    return anyio.run(PoolServer(settings).run)


def server_settings(args: argparse.Namespace, flags: ServingFlags, socket_path: Path) -> ServerSettings:
    """The daemon's settings from its flags, each checked with a one-line refusal."""
    _require(args.idle_timeout >= 0, "--idle-timeout must be 0 (never) or more seconds")
    _require(args.shutdown_grace >= 0, "--shutdown-grace must be 0 or more seconds")
    max_connections = MAX_CONNECTIONS if args.max_connections is None else args.max_connections
    _require(max_connections >= 1, "--max-connections must be 1 or more")
    _require(
        args.context_budget is None or args.context_budget >= 0, "--context-budget must be 0 or more bytes"
    )
    _require(args.memory_limit is None or args.memory_limit > 0, "--memory-limit must be more than 0 bytes")
    return ServerSettings(
        socket_path=socket_path,
        frames=args.frames,
        plan=MemoryPlan.from_flags(args.memory_limit, args.context_budget),
        flags=flags,
        loads=member_names(list(args.load), args.decision),
        idle_timeout=float(args.idle_timeout),
        max_connections=max_connections,
        shutdown_grace=float(args.shutdown_grace),
    )


def member_names(loads: list[str], decision: str | None) -> list[tuple[str, str]]:
    """The first ``--load`` is ``main``, ``--decision`` is ``decision``; any further
    ``--load`` is named ``member2``, ``member3`` … in order."""
    named = [(MAIN_MEMBER if i == 0 else f"member{i + 1}", reference) for i, reference in enumerate(loads)]
    if decision is not None:
        named.append((DECISION_MEMBER, decision))
    return named


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)

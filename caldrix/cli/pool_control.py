"""``caldrix pool stop`` and ``caldrix pool status``: a client of the running pool.

Apart from :mod:`caldrix.cli.pool`, the daemon, so that these two load only the protocol's
client: none of the server, the members, the engines or their settings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Final, TextIO

import anyio

from caldrix.errors import PoolUnavailable
from caldrix.protocol.client import ClientBounds, connect
from caldrix.protocol.messages import PoolStatusResult
from caldrix.protocol.transport import default_socket_path

MIB = 1024 * 1024
#: How long ``caldrix pool stop`` and ``caldrix pool status`` wait for the pool: to connect, for
#: each reply, and for the pool to close the connection after ``pool.stop``. They send nothing
#: but control requests, so every bound is this one.
COMMAND_WAIT_SECS: Final = 30.0
COMMAND_BOUNDS: Final = ClientBounds(COMMAND_WAIT_SECS, COMMAND_WAIT_SECS, COMMAND_WAIT_SECS)
#: How often ``caldrix pool stop`` looks whether the pool's process has exited.
EXIT_POLL_SECS: Final = 0.1


def pool_control(args: argparse.Namespace) -> int:
    """``caldrix pool stop`` and ``caldrix pool status``: a client of the running pool."""
    socket_path: Path = args.socket or default_socket_path()
    if args.action == "stop":
        return anyio.run(stop_pool, socket_path)
    return anyio.run(show_status, socket_path, args.json)


async def stop_pool(socket_path: Path) -> int:
    """Ask the pool to stop, and report it stopped only once its process has exited: the
    ``ok`` and the closed connection say the pool means to, not that it did."""
    client = await connect(socket_path, bounds=COMMAND_BOUNDS)
    pid = client.hello.pid
    await client.pool_stop()
    await client.wait_closed()
    with anyio.move_on_after(COMMAND_WAIT_SECS):
        while process_alive(pid):
            await anyio.sleep(EXIT_POLL_SECS)
    if process_alive(pid):
        raise PoolUnavailable(
            f"the pool on {socket_path} (pid {pid}) agreed to stop but is still running after "
            f"{COMMAND_WAIT_SECS:g} s; end it with 'kill {pid}'"
        )
    print(f"caldrix: stopped the pool on {socket_path} (pid {pid})")
    return 0


def process_alive(pid: int, proc: Path = Path("/proc")) -> bool:
    """Whether process ``pid`` still runs: it exists and is not a zombie (a zombie has exited
    and only waits for its parent to collect its status)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat_line = (proc / str(pid) / "stat").read_text()
    except OSError:
        return True
    # The state follows the command name, which is in parentheses and may hold spaces.
    return stat_line.rpartition(")")[2].split()[:1] != ["Z"]


async def show_status(socket_path: Path, as_json: bool, out: TextIO | None = None) -> int:
    client = await connect(socket_path, bounds=COMMAND_BOUNDS)
    try:
        status = await client.pool_status()
    finally:
        await client.aclose()
    stream = out or sys.stdout
    if as_json:
        print(json.dumps(status.model_dump(), indent=2), file=stream)
    else:
        print("\n".join(status_lines(status, socket_path)), file=stream)
    return 0


def status_lines(status: PoolStatusResult, socket_path: Path) -> list[str]:
    """``pool.status`` for a person."""
    lines = [
        f"caldrix {status.version} pool, pid {status.pid}, up {_duration(status.uptime_s)}, on {socket_path}",
        f"connections {status.connections}, contexts {status.contexts}",
    ]
    generations = status.generations
    if generations:
        lines.append(
            f"generations: {generations.admitted} admitted, {generations.waiting} waiting "
            f"(at most {generations.limit} at once)"
        )
    lines.append("members:" if status.members else "members: none")
    for member in status.members:
        footprint = member.footprint_bytes
        size = f"{-(-footprint // MIB)} MiB" if footprint is not None else "footprint unknown"
        lane: str = member.lane
        if member.threads is not None:
            lane += f", {member.threads} thread{'' if member.threads == 1 else 's'}"
        if member.flash_attention:
            lane += ", flash attention"
        lines.append(
            f"  {member.name}: {member.state}, {member.model}, n_ctx {member.n_ctx}, {size}, "
            f"{lane}, queue {member.queue}"
        )
        store = status.prefix_store.get(member.name)
        if store:
            lines.append(
                f"    prefix store: {store.entries} entries, {store.bytes / MIB:.1f} of "
                f"{store.budget / MIB:.0f} MiB, {store.hits} hits, {store.misses} misses"
            )
    return lines


def _duration(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"

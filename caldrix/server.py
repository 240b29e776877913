"""The pool daemon: its Unix socket and its lifecycle.

Start: check the socket's folder (created 0700; refused when it is a symlink or another user's),
refuse to start when a pool already answers on the socket, load every ``--load`` member, and
only then bind (removing a stale socket file first) with mode 0600. A client that sees the
socket answer therefore finds the members loaded.

Stop, in order, on ``pool.stop``, SIGTERM/SIGINT, or ``--idle-timeout`` seconds without a
connection: stop accepting and remove the socket file; let each connection finish the request
it is answering (no wait for ``pool.stop``, up to ``--shutdown-grace`` seconds for a signal);
cancel what is left; unload the members. Exit status 0.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

import anyio
import anyio.to_thread
from anyio.abc import SocketListener, SocketStream, TaskGroup

from caldrix.connection import Connection
from caldrix.engine_seam import ServingFlags
from caldrix.errors import CaldrixError, SocketRefused, quoted
from caldrix.limits import SHUTDOWN_GRACE_SECS
from caldrix.members import MemoryPlan
from caldrix.models.references import is_remote_reference, local_file, parse_reference
from caldrix.pool import MAX_CONNECTIONS, Pool
from caldrix.protocol.framing import FrameMode
from caldrix.protocol.transport import overlong_socket_path, unwritable_socket_folder

logger = logging.getLogger("caldrix.pool")

#: How long a stopping pool waits for its members to unload before it exits without them.
SHUTDOWN_UNLOAD_SECS: Final = 30.0
#: How long the check for a live pool on the socket waits for it to accept.
LIVE_CHECK_TIMEOUT_SECS: Final = 2.0
FOLDER_MODE: Final = 0o700
SOCKET_MODE: Final = 0o600

StopReason = Literal["stop", "signal", "idle"]


@dataclass(frozen=True)
class ServerSettings:
    """How one ``caldrix pool`` process serves: its socket and frames, its memory, the members it
    loads first, and when it stops (aerix's ``pool.*`` settings, ``PoolSettings``, are what aerix
    starts it with)."""

    socket_path: Path
    frames: FrameMode
    plan: MemoryPlan
    flags: ServingFlags
    idle_timeout: float
    """Seconds with no connection open before the pool exits; 0 = never."""
    loads: list[tuple[str, str]] = field(default_factory=list)
    """Members to load before binding: (name, model reference)."""
    max_connections: int = MAX_CONNECTIONS
    shutdown_grace: float = SHUTDOWN_GRACE_SECS
    """Seconds a signalled pool lets connections finish their current request."""


def fetch_reference(reference: str) -> Path:
    """The reference's local file, downloaded into the cache first (with a progress bar when
    stderr is a terminal) if it is not there yet."""
    return local_file(parse_reference(reference), progress=True)


def prepare_socket_folder(folder: Path) -> None:
    """Create ``folder`` with mode 0700, or accept it if it is ours; refuse a symlink or a
    folder another user owns (someone else could then swap our socket), and a folder of ours
    that its mode keeps us from writing in (as aerix refuses to start a pool there). A folder
    open to group or others is closed to 0700."""
    if folder.is_symlink():
        raise SocketRefused(f"the socket folder {folder} is a symlink; refusing to use it (use --socket)")
    try:
        folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        raise SocketRefused(f"cannot create the socket folder {folder}: {exc.strerror}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise SocketRefused(f"{folder} is not a folder; cannot put the pool's socket in it")
    if info.st_uid != os.getuid():
        raise SocketRefused(
            f"the socket folder {folder} belongs to uid {info.st_uid}, not you "
            f"(uid {os.getuid()}); refusing to use it (use --socket)"
        )
    unwritable = unwritable_socket_folder(folder)
    if unwritable is not None:
        raise SocketRefused(f"{unwritable} with --socket")
    if stat.S_IMODE(info.st_mode) & ~FOLDER_MODE:
        os.chmod(folder, FOLDER_MODE)  # only ever takes access away: group and others lose theirs


def socket_answers(path: Path) -> bool:
    """Whether something accepts connections on ``path`` (a live pool) — as opposed to a
    stale socket file left by a pool that died."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(LIVE_CHECK_TIMEOUT_SECS)
        try:
            probe.connect(os.fspath(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        except OSError:
            return False
        return True


def refuse_live_socket(path: Path) -> None:
    if socket_answers(path):
        raise SocketRefused(
            f"a pool already answers on {path}; stop it with 'caldrix pool stop' or choose another --socket"
        )


def remove_stale_socket(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise SocketRefused(f"{path} exists and is not a socket; move it away or choose another --socket")
    refuse_live_socket(path)
    logger.info("removing the stale socket %s (nothing answers on it)", path)
    path.unlink(missing_ok=True)


class PoolServer:
    """One run of the daemon, from loading its members to its exit."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.pool = Pool(settings.plan, max_connections=settings.max_connections)
        self._connections: set[Connection] = set()
        self._count_changed = anyio.Event()
        self._numbers = 0
        self._stop_reason: StopReason = "stop"
        self._bound_inode: int | None = None
        self._serving = False

    async def run(self) -> int:
        """Serve until stopped; returns the exit status. Refusals raise :class:`CaldrixError`."""
        path = self.settings.socket_path
        overlong = overlong_socket_path(path)
        if overlong is not None:
            raise SocketRefused(f"{overlong} with --socket")
        prepare_socket_folder(path.parent)
        refuse_live_socket(path)
        failure: CaldrixError | None = None
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._watch_signals, tasks.cancel_scope)
                try:
                    await self._load_members()
                    listener = await self._bind()
                except CaldrixError as exc:
                    failure = exc  # raised below: a task group would wrap it in a group
                else:
                    await self._serve(listener)
                tasks.cancel_scope.cancel()
        finally:
            self._remove_socket()
            with anyio.move_on_after(SHUTDOWN_UNLOAD_SECS, shield=True) as unloading:
                await self.pool.members.unload_all()
            if unloading.cancelled_caught:
                # A member's thread is stuck in native code: it is a daemon thread, so leaving
                # it behind lets the process exit instead of answering ok and living on.
                logger.warning("members not unloaded within %g s; exiting without them", SHUTDOWN_UNLOAD_SECS)
        if failure is not None:
            raise failure
        logger.info("pool stopped (%s)", self._stop_reason)
        return 0

    async def _load_members(self) -> None:
        for name, reference in self.settings.loads:
            logger.info("loading member %s from %s", name, reference)
            try:
                # Fetched first, here, so that a download started from the command line shows
                # its progress bar (on a terminal), as caldrix run's does; the load then finds
                # the file in the cache. A model on a server has no file to fetch.
                if not is_remote_reference(reference):
                    await anyio.to_thread.run_sync(fetch_reference, reference)
                await self.pool.members.load(name, reference, self.settings.flags)
            except CaldrixError as exc:
                which = f"--load {reference} (member {quoted(name)})"
                raise type(exc)(f"{which}: {exc.message}", **exc.details) from exc

    async def _bind(self) -> SocketListener:
        path = self.settings.socket_path
        remove_stale_socket(path)
        listener = await anyio.create_unix_listener(path, mode=SOCKET_MODE)
        self._bound_inode = os.lstat(path).st_ino
        members = ", ".join(m.name for m in self.pool.members.all()) or "none"
        logger.info(
            "listening on %s (pid %d, %s frames, members: %s)",
            path,
            os.getpid(),
            self.settings.frames,
            members,
        )
        return listener

    async def _serve(self, listener: SocketListener) -> None:
        self._serving = True
        async with anyio.create_task_group() as connections:
            accepting = anyio.CancelScope()
            connections.start_soon(self._accept, listener, connections, accepting)
            connections.start_soon(self._watch_idle)
            await self.pool.stop_requested.wait()
            accepting.cancel()
            await listener.aclose()
            self._remove_socket()
            await self._close_connections()
            connections.cancel_scope.cancel()

    async def _accept(
        self, listener: SocketListener, connections: TaskGroup, scope: anyio.CancelScope
    ) -> None:
        with scope:
            while True:
                stream = await listener.accept()
                connections.start_soon(self._serve_connection, stream)

    async def _serve_connection(self, stream: SocketStream) -> None:
        self._numbers += 1
        connection = Connection(stream, self.pool, self.settings.frames, self._numbers)
        self._track(connection, opened=True)
        try:
            await connection.serve()
        finally:
            self._track(connection, opened=False)

    def _track(self, connection: Connection, *, opened: bool) -> None:
        if opened:
            self._connections.add(connection)
        else:
            self._connections.discard(connection)
        self.pool.connections = len(self._connections)
        self._count_changed.set()
        self._count_changed = anyio.Event()

    async def _close_connections(self) -> None:
        grace = self.settings.shutdown_grace if self._stop_reason == "signal" else 0.0
        for connection in list(self._connections):
            if grace:
                connection.close_when_idle()
            else:
                connection.close_now()
        with anyio.move_on_after(grace):
            while self._connections:
                await self._count_changed.wait()
        cancelled = self.pool.cancel_control_requests()
        if cancelled:
            logger.info("cancelled %d unfinished control request(s)", cancelled)
        for connection in list(self._connections):
            connection.close_now()

    async def _watch_idle(self) -> None:
        """Stop after ``idle_timeout`` seconds with no connection open (0 = never)."""
        timeout = self.settings.idle_timeout
        if timeout <= 0:
            return
        while True:
            changed = self._count_changed
            if self._connections:
                await changed.wait()
                continue
            with anyio.move_on_after(timeout):
                await changed.wait()
            if not changed.is_set() and not self._connections:
                logger.info("no connection for %g s; stopping", timeout)
                self._stop("idle")
                return

    async def _watch_signals(self, everything: anyio.CancelScope) -> None:
        """The first signal while serving stops the pool in order; a signal while loading, or
        a second one while stopping, cancels everything at once."""
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                logger.info("received %s; stopping", signal.Signals(signum).name)
                if self._serving and not self.pool.stop_requested.is_set():
                    self._stop("signal")
                else:
                    self._stop_reason = "signal"
                    everything.cancel()

    def _stop(self, reason: StopReason) -> None:
        if not self.pool.stop_requested.is_set():
            self._stop_reason = reason
            self.pool.request_stop()

    def _remove_socket(self) -> None:
        """Remove the socket file if it is still the one this pool bound."""
        if self._bound_inode is None:
            return
        path = self.settings.socket_path
        with contextlib.suppress(OSError):
            if os.lstat(path).st_ino == self._bound_inode:
                path.unlink()
        self._bound_inode = None

"""Where a client finds the pool: the default socket path of protocol.md's Transport section,
and the checks of a socket path that the pool and a client starting the pool (aerix) share."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Final

_OWNER_WRITES = stat.S_IWUSR | stat.S_IXUSR
#: The longest Unix socket path the kernel takes, in bytes: ``sun_path`` holds 108 bytes on
#: Linux and 104 on macOS and the BSDs, the terminating NUL included.
SOCKET_PATH_MAX_BYTES: Final = 107 if sys.platform.startswith("linux") else 103


def default_socket_path() -> Path:
    """``$XDG_RUNTIME_DIR/caldrix/pool.sock``, else ``/tmp/caldrix-<uid>/pool.sock``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "caldrix" / "pool.sock"
    return Path(f"/tmp/caldrix-{os.getuid()}") / "pool.sock"


def unwritable_socket_folder(folder: Path) -> str | None:
    """Why no socket can be made in ``folder``: an existing folder whose mode does not let its
    owner write in it. None when it can be used (or does not exist yet: it will be made 0700).

    Read from the mode bits, not ``os.access``, so root is told the same as anyone: a socket
    folder made read-only was made so on purpose, and neither caldrix nor aerix changes it. The
    line ends where each command names its own way out (``--socket``, ``pool.socket``)."""
    try:
        info = os.stat(folder)
    except OSError:
        return None
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISDIR(info.st_mode) or mode & _OWNER_WRITES == _OWNER_WRITES:
        return None
    return (
        f"the socket folder {folder} is not writable (mode {mode:03o}); "
        f"make it writable (chmod u+wx {folder}) or choose another socket"
    )


def overlong_socket_path(path: Path) -> str | None:
    """Why ``path`` cannot be a Unix socket: longer than SOCKET_PATH_MAX_BYTES. None when it fits.

    Checked before a pool loads anything: the bind would fail only after the members loaded,
    with the kernel's bare "AF_UNIX path too long". The line ends where each command names its
    own way out (``--socket``, ``pool.socket``)."""
    size = len(os.fsencode(path))
    if size <= SOCKET_PATH_MAX_BYTES:
        return None
    return (
        f"the socket path {path} is {size} bytes, longer than the {SOCKET_PATH_MAX_BYTES} a Unix "
        "socket path may have; choose a shorter one"
    )

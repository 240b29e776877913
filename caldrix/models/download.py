"""Download a model file into the cache: resumable, checksummed, atomic.

The bytes go to ``<file>.part``; an interrupted download leaves that file behind and the next
attempt asks the server for the rest with an HTTP ``Range`` request. The sha256 is computed
while writing, compared with the server's when it publishes one (a ``#sha256=`` fragment, or
an ``X-Linked-Etag``/``ETag`` that is a sha256, as the Hugging Face hub sends), and kept beside
the file as ``<file>.sha256``. Only a complete, verified file is renamed into place, so a file
in the cache under its final name is always whole.

Only the standard library is used (urllib); every failure becomes one
:class:`~caldrix.errors.DownloadFailed` line that names the URL and what to do.
"""

from __future__ import annotations

import fcntl
import hashlib
import http.client
import os
import re
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from caldrix import __version__
from caldrix.errors import DownloadFailed

#: Seconds a connect or a read may stall before the attempt counts as failed.
DOWNLOAD_TIMEOUT_SECS = 30.0
#: Attempts per download; each one after the first resumes from the ``.part`` file.
DOWNLOAD_ATTEMPTS = 3
#: Bytes read and hashed per chunk.
CHUNK_BYTES = 1024 * 1024
PART_SUFFIX = ".part"
CHECKSUM_SUFFIX = ".sha256"
LOCK_SUFFIX = ".lock"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Downloaded:
    """A file now complete in the cache, with its sha256."""

    path: Path
    sha256: str


class _Interrupted(Exception):
    """The body ended before the length the server announced; the .part file is kept."""


def checksum_path(path: Path) -> Path:
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def part_path(path: Path) -> Path:
    return path.with_name(path.name + PART_SUFFIX)


def read_checksum(path: Path) -> str | None:
    """The sha256 kept beside ``path`` (``sha256sum`` format), if any."""
    try:
        text = checksum_path(path).read_text().split()
    except OSError:
        return None
    return text[0] if text and _SHA256.match(text[0]) else None


def write_checksum(path: Path, digest: str) -> None:
    checksum_path(path).write_text(f"{digest}  {path.name}\n")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(
    url: str, dest: Path, *, progress: bool = False, headers: dict[str, str] | None = None
) -> Downloaded:
    """Fetch ``url`` into ``dest`` (resuming a ``.part`` left by an earlier attempt). A
    download already running for ``dest`` in another process is waited for, not repeated."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(dest):
        finished = read_checksum(dest)
        if dest.is_file() and finished:
            return Downloaded(dest, finished)
        return _download_locked(url, dest, progress, headers or {})


@contextmanager
def exclusive(dest: Path) -> Iterator[None]:
    """An advisory lock on ``<file>.lock``: two writers appending to one .part corrupt it."""
    with dest.with_name(dest.name + LOCK_SUFFIX).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _download_locked(url: str, dest: Path, progress: bool, headers: dict[str, str]) -> Downloaded:
    address, _, fragment = url.partition("#")
    expected = _fragment_sha256(fragment)
    for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
        try:
            server_sha = _fetch_to_part(address, part_path(dest), progress, headers)
            break
        except _Interrupted as exc:
            if attempt == DOWNLOAD_ATTEMPTS:
                raise DownloadFailed(
                    f"download of {address} was interrupted {exc}; run the same command again to resume",
                    url=address,
                ) from None
    return _finish(address, dest, expected or server_sha)


def _finish(url: str, dest: Path, expected: str | None) -> Downloaded:
    part = part_path(dest)
    digest = sha256_of(part)
    if expected is not None and digest != expected:
        part.unlink(missing_ok=True)
        raise DownloadFailed(
            f"checksum mismatch for {url}: expected sha256 {expected}, got {digest}; "
            "the partial file was removed, run the command again",
            url=url,
            expected=expected,
            actual=digest,
        )
    write_checksum(dest, digest)
    os.replace(part, dest)
    return Downloaded(dest, digest)


def _fragment_sha256(fragment: str) -> str | None:
    params = urllib.parse.parse_qs(fragment)
    value = next(iter(params.get("sha256", [])), "").lower()
    return value if _SHA256.match(value) else None


def _fetch_to_part(url: str, part: Path, progress: bool, headers: dict[str, str]) -> str | None:
    """Append the rest of ``url`` to ``part``; return the server's sha256 when it gave one."""
    have = part.stat().st_size if part.exists() else 0
    seen_headers: list[Message] = []
    request = urllib.request.Request(url, headers={"User-Agent": f"caldrix/{__version__}", **headers})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = _opener(seen_headers).open(request, timeout=DOWNLOAD_TIMEOUT_SECS)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have and _range_total(exc.headers) == have:
            return _server_sha256([*seen_headers, exc.headers])  # the .part is already whole
        raise DownloadFailed(_http_message(url, exc.code, exc.reason), url=url, status=exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        raise DownloadFailed(_network_message(url, exc), url=url) from None
    with response:
        resumed = response.status == 206
        total = _expected_total(response.headers, have if resumed else 0)
        mode = "ab" if resumed else "wb"
        start = have if resumed else 0
        name = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1] or url
        with part.open(mode) as out, progress_bar(progress, f"downloading {name}", total, start) as shown:
            copied, cut = _copy_body(response, out, shown.advance)
        received = start + copied
        if total is not None and received < total:
            raise _Interrupted(f"at {received} of {total} bytes")
        if cut:
            raise _Interrupted(f"after {received} bytes")
        return _server_sha256([*seen_headers, response.headers])


def _copy_body(response: Any, out: IO[bytes], advance: Callable[[int], None]) -> tuple[int, bool]:
    """Copy the body to ``out``; return the bytes copied and whether the connection was cut."""
    copied = 0
    try:
        for chunk in iter(lambda: response.read(CHUNK_BYTES), b""):
            out.write(chunk)
            copied += len(chunk)
            advance(len(chunk))
    except (http.client.IncompleteRead, OSError) as exc:
        if isinstance(exc, http.client.IncompleteRead) and exc.partial:
            out.write(exc.partial)
            copied += len(exc.partial)
        return copied, True
    return copied, False


def _opener(seen_headers: list[Message]) -> urllib.request.OpenerDirector:
    """An opener that remembers the headers of every redirect it follows: the hub puts the
    file's sha256 on the redirect, not on the CDN's final answer."""

    class RecordingRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, hdrs: Any, newurl: str) -> Any:
            seen_headers.append(hdrs)
            follow = super().redirect_request(req, fp, code, msg, hdrs, newurl)
            moved_host = urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc
            if follow is not None and moved_host:
                follow.remove_header("Authorization")  # a hub token is not for its CDN
            return follow

    return urllib.request.build_opener(RecordingRedirects())


def _server_sha256(all_headers: list[Message]) -> str | None:
    for message in all_headers:
        for name in ("X-Linked-Etag", "ETag"):
            value = (message.get(name) or "").strip().removeprefix("W/").strip('"').lower()
            if _SHA256.match(value):
                return value
    return None


def _expected_total(message: Message, offset: int) -> int | None:
    total = _range_total(message)
    if total is not None:
        return total
    length = message.get("Content-Length")
    return offset + int(length) if length and length.isdigit() else None


def _range_total(message: Message) -> int | None:
    match = re.search(r"/(\d+)\s*$", message.get("Content-Range") or "")
    return int(match.group(1)) if match else None


def _http_message(url: str, status: int, reason: str) -> str:
    hint = {
        401: "the file needs a login (set HF_TOKEN for the Hugging Face hub)",
        403: "access is denied (a gated model needs HF_TOKEN and accepted terms)",
        404: "check the reference's spelling, or download the file yourself and pass its path",
    }.get(status, "try again later, or download the file yourself and pass its path")
    return f"cannot download {url}: HTTP {status} {reason}; {hint}"


def _network_message(url: str, exc: BaseException) -> str:
    reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, socket.gaierror):
        what = "the host name does not resolve (offline?)"
    elif isinstance(reason, ConnectionRefusedError):
        what = "the connection was refused"
    elif isinstance(reason, TimeoutError | socket.timeout):
        what = f"no answer within {DOWNLOAD_TIMEOUT_SECS:.0f} s"
    else:
        what = str(getattr(reason, "strerror", None) or reason)
    return (
        f"cannot download {url}: {what}; check the network, or download the file yourself and pass its path"
    )


@dataclass(frozen=True)
class ShownProgress:
    """The bar a download advances; without a bar (``bar`` None) it draws nothing."""

    bar: Progress | None = None
    task: TaskID | None = None

    def advance(self, n_bytes: int) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, advance=n_bytes)

    def describe(self, text: str) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, description=text)


@contextmanager
def progress_bar(
    enabled: bool, description: str, total: int | None, start: int = 0
) -> Iterator[ShownProgress]:
    """A rich progress bar of bytes on stderr when asked for and stderr is a terminal."""
    if not (enabled and sys.stderr.isatty()):
        yield ShownProgress()
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        yield ShownProgress(bar, bar.add_task(description, total=total, completed=start))

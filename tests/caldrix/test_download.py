"""Downloads against a real HTTP server on 127.0.0.1: full, cut and resumed, checksummed,
through the ``hf:`` endpoint, and offline."""

from __future__ import annotations

import hashlib
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from caldrix.errors import DownloadFailed
from caldrix.models.download import download, part_path, read_checksum
from caldrix.models.references import list_cached, resolve_model
from tests.caldrix.gguf_writer import gguf_bytes, tiny_llama_metadata

#: Three and a half chunks of the downloader, so a body spans several reads.
BODY_BYTES = 3 * 1024 * 1024 + 512 * 1024
#: Where the server cuts a response it was told to cut.
CUT_AT = 1024 * 1024 + 7


@dataclass
class FileServer:
    """What the test server serves and what it saw."""

    files: dict[str, bytes] = field(default_factory=dict)
    etags: dict[str, str] = field(default_factory=dict)
    linked_etags: dict[str, str] = field(default_factory=dict)
    cuts_left: int = 0
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    redirect_host: str | None = None
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def _handler(state: FileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            state.requests.append((self.path, self.headers.get("Range")))
            state.authorizations.append(self.headers.get("Authorization"))
            hub = re.match(r"^/([^/]+)/([^/]+)/resolve/main/(.+)$", self.path)
            if hub:  # the hub answers with a redirect carrying the sha256, like huggingface.co
                target = f"/cdn/{hub.group(3)}"
                self.send_response(302)
                host = f"http://{state.redirect_host}:{state.port}" if state.redirect_host else ""
                self.send_header("Location", host + target)
                if target in state.linked_etags:
                    self.send_header("X-Linked-Etag", f'"{state.linked_etags[target]}"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = state.files.get(self.path)
            if body is None:
                self.send_error(404, "Not Found")
                return
            self._send(body, self.headers.get("Range"))

        def _send(self, body: bytes, range_header: str | None) -> None:
            start = int(range_header.removeprefix("bytes=").rstrip("-")) if range_header else 0
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Length", str(len(body) - start))
            if self.path in state.etags:
                self.send_header("ETag", f'"{state.etags[self.path]}"')
            self.end_headers()
            if state.cuts_left > 0:
                state.cuts_left -= 1
                self.wfile.write(body[start : start + CUT_AT])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body[start:])

    return Handler


@pytest.fixture
def server() -> Iterator[FileServer]:
    state = FileServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "caldrix" / "models"


def _body(seed: int = 1) -> bytes:
    return hashlib.sha256(str(seed).encode()).digest() * (BODY_BYTES // 32)


def test_a_full_download_lands_whole_with_its_checksum(server: FileServer, tmp_path: Path) -> None:
    body = _body()
    server.files["/m.gguf"] = body
    dest = tmp_path / "out" / "m.gguf"
    result = download(server.url("/m.gguf"), dest)
    assert dest.read_bytes() == body
    assert result.sha256 == hashlib.sha256(body).hexdigest() == read_checksum(dest)
    assert not part_path(dest).exists()
    assert server.requests == [("/m.gguf", None)]


def test_a_cut_download_resumes_with_a_range_request(server: FileServer, tmp_path: Path) -> None:
    body = _body()
    server.files["/m.gguf"] = body
    server.etags["/m.gguf"] = hashlib.sha256(body).hexdigest()
    server.cuts_left = 1
    dest = tmp_path / "m.gguf"
    result = download(server.url("/m.gguf"), dest)
    assert server.requests == [("/m.gguf", None), ("/m.gguf", f"bytes={CUT_AT}-")]
    assert result.sha256 == hashlib.sha256(body).hexdigest()
    assert dest.read_bytes() == body


def test_a_part_file_left_by_an_earlier_run_is_resumed(server: FileServer, tmp_path: Path) -> None:
    body = _body()
    server.files["/m.gguf"] = body
    dest = tmp_path / "m.gguf"
    part_path(dest).write_bytes(body[:12345])
    result = download(server.url("/m.gguf"), dest)
    assert server.requests == [("/m.gguf", "bytes=12345-")]
    assert result.sha256 == hashlib.sha256(body).hexdigest()


def test_a_download_cut_every_time_keeps_the_part_and_says_how_to_resume(
    server: FileServer, tmp_path: Path
) -> None:
    server.files["/m.gguf"] = _body()
    server.cuts_left = 10
    dest = tmp_path / "m.gguf"
    with pytest.raises(DownloadFailed, match=r"was interrupted at .* run the same command again to resume"):
        download(server.url("/m.gguf"), dest)
    assert part_path(dest).stat().st_size == 3 * CUT_AT
    assert not dest.exists()


def test_a_checksum_mismatch_fails_and_removes_the_part(server: FileServer, tmp_path: Path) -> None:
    server.files["/m.gguf"] = _body()
    dest = tmp_path / "m.gguf"
    wrong = "0" * 64
    with pytest.raises(DownloadFailed) as caught:
        download(server.url("/m.gguf") + f"#sha256={wrong}", dest)
    message = caught.value.message
    assert message.startswith(f"checksum mismatch for {server.url('/m.gguf')}: expected sha256 {wrong}")
    assert "\n" not in message
    assert not dest.exists() and not part_path(dest).exists()


def test_an_etag_that_disagrees_is_a_mismatch(server: FileServer, tmp_path: Path) -> None:
    server.files["/m.gguf"] = _body()
    server.etags["/m.gguf"] = hashlib.sha256(b"something else").hexdigest()
    with pytest.raises(DownloadFailed, match="checksum mismatch"):
        download(server.url("/m.gguf"), tmp_path / "m.gguf")


def test_an_hf_reference_goes_through_the_overridable_endpoint(
    server: FileServer, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = gguf_bytes(tiny_llama_metadata(), {"token_embd.weight": (64, 100)})
    server.files["/cdn/toy.Q8_0.gguf"] = model
    server.linked_etags["/cdn/toy.Q8_0.gguf"] = hashlib.sha256(model).hexdigest()
    monkeypatch.setenv("CALDRIX_HF_ENDPOINT", server.url(""))
    resolved = resolve_model("hf:owner/repo/toy.Q8_0.gguf")
    assert resolved.path == cache / "hf" / "owner" / "repo" / "toy.Q8_0.gguf"
    assert resolved.info.architecture == "llama"
    requested = [path for path, _ in server.requests]
    assert requested == ["/owner/repo/resolve/main/toy.Q8_0.gguf", "/cdn/toy.Q8_0.gguf"]
    # a second resolve is served from the cache, with no request
    assert resolve_model("hf:owner/repo/toy.Q8_0.gguf").path == resolved.path
    assert len(server.requests) == 2
    listed = {entry.reference: entry for entry in list_cached()}
    assert listed["hf:owner/repo/toy.Q8_0.gguf"].sha256 == hashlib.sha256(model).hexdigest()


def test_the_hub_checksum_on_the_redirect_is_checked(
    server: FileServer, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.files["/cdn/toy.gguf"] = gguf_bytes(tiny_llama_metadata())
    server.linked_etags["/cdn/toy.gguf"] = "f" * 64
    monkeypatch.setenv("CALDRIX_HF_ENDPOINT", server.url(""))
    with pytest.raises(DownloadFailed, match="checksum mismatch"):
        resolve_model("hf:owner/repo/toy.gguf")


def test_a_missing_file_is_one_line_naming_the_status(server: FileServer, cache: Path) -> None:
    url = server.url("/nothing.gguf")
    with pytest.raises(DownloadFailed) as caught:
        resolve_model(url)
    assert caught.value.message.startswith(f"cannot download {url}: HTTP 404")
    assert caught.value.code == "model_not_found"


def test_offline_is_one_clear_line(cache: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on: bound, then released
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/model.gguf"
    with pytest.raises(DownloadFailed) as caught:
        resolve_model(url)
    assert caught.value.message == (
        f"cannot download {url}: the connection was refused; check the network, "
        "or download the file yourself and pass its path"
    )


def test_two_downloads_of_one_file_fetch_it_once(server: FileServer, tmp_path: Path) -> None:
    body = _body()
    server.files["/m.gguf"] = body
    dest = tmp_path / "m.gguf"
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(download(server.url("/m.gguf"), dest).sha256))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [hashlib.sha256(body).hexdigest()] * 2
    assert server.requests == [("/m.gguf", None)]


def test_the_hub_token_goes_to_the_hub_but_not_to_another_host(
    server: FileServer, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.files["/cdn/toy.gguf"] = gguf_bytes(tiny_llama_metadata())
    server.redirect_host = "localhost"  # the same server under another name, as a CDN would be
    monkeypatch.setenv("CALDRIX_HF_ENDPOINT", server.url(""))
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    resolve_model("hf:owner/repo/toy.gguf")
    assert server.authorizations == ["Bearer hf_secret", None]

"""llama.cpp's own ``llama-server``, the peer people point Claude Code at, for the benchmarks.

It is built from the llama.cpp sources that llama-cpp-python's sdist vendors (the version
caldrix runs on), with the same CPU flags as the wheel ``scripts/setup`` builds, so both sides
run the same kernels. The build takes long (over an hour on 2 busy cores), so it happens on
demand, once, into a cache folder that later runs reuse: ``~/.cache/aerix-bench/llama-server-
<version>/llama-server``. ``AERIX_LLAMA_SERVER`` names a binary to use instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from caldrix.processes import stop_process

#: The llama-cpp-python release whose vendored llama.cpp is built (the one caldrix pins).
LLAMA_CPP_PYTHON: Final = "0.3.36"
CACHE: Final = Path.home() / ".cache" / "aerix-bench" / f"llama-server-{LLAMA_CPP_PYTHON}"
#: The wheel's flags (scripts/setup): the same kernels on both sides.
CMAKE_FLAGS: Final = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
)
#: Loading a model and answering /health on a shared, slow machine.
START_SECS: Final = 180.0


def llama_server_binary() -> Path:
    """The llama-server to run: ``AERIX_LLAMA_SERVER``, else the cached build, else built now."""
    named = os.environ.get("AERIX_LLAMA_SERVER")
    if named:
        return Path(named)
    binary = CACHE / "llama-server"
    if not binary.exists():
        _build(binary)
    return binary


def _build(binary: Path) -> None:
    source = CACHE / "src" / f"llama_cpp_python-{LLAMA_CPP_PYTHON}" / "vendor" / "llama.cpp"
    if not source.exists():
        _unpack_sdist(CACHE)
    print(f"building llama-server from {source} (long: over an hour on 2 busy cores)", file=sys.stderr)
    build = CACHE / "build"
    with (CACHE / "build.log").open("w") as log:
        for command in (
            ["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS],
            ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(os.cpu_count() or 1)],
        ):
            subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)
    shutil.copy2(build / "bin" / "llama-server", binary)
    shutil.rmtree(build, ignore_errors=True)


def _unpack_sdist(cache: Path) -> None:
    """Download llama-cpp-python's sdist with pip and unpack it under ``cache/src``."""
    sdist = cache / "sdist"
    sdist.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--dest",
            str(sdist),
            f"llama-cpp-python=={LLAMA_CPP_PYTHON}",
        ],
        check=True,
    )
    archive = next(sdist.glob("llama_cpp_python-*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(cache / "src", filter="data")


@dataclass
class LlamaServer:
    """One running llama-server and its log."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_process(self.process)


def start_llama_server(
    model: Path, folder: Path, *extra: str, port: int, ctx: int, threads: int, alias: str = "local"
) -> LlamaServer:
    """llama-server on ``model`` with one slot, ``ctx`` rows and ``threads`` threads (batch
    threads too), its log in ``folder``; ``extra`` are further options (the cache ones)."""
    log_path = folder / f"llama-server-{port}.log"
    command = [
        str(llama_server_binary()),
        "--model",
        str(model),
        "--alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        str(ctx),
        "--parallel",
        "1",
        "--threads",
        str(threads),
        "--threads-batch",
        str(threads),
        "--jinja",
        *extra,
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LlamaServer(process, port, log_path)
    deadline = time.monotonic() + START_SECS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited with {process.returncode}:\n{server.log()[-3000:]}")
        if _healthy(server):
            return server
        time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"llama-server did not answer within {START_SECS:g} s:\n{server.log()[-3000:]}")


def _healthy(server: LlamaServer) -> bool:
    try:
        with urllib.request.urlopen(server.url + "/health", timeout=5) as reply:
            return bool(reply.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def scratch_folder(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))

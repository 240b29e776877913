"""The precheck on the real embedded model, and on damaged copies of it."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from caldrix.engines.loader import engine_for_file
from caldrix.errors import PrecheckFailed
from caldrix.models.architectures import LLAMA_CPP_ARCHITECTURES
from caldrix.models.gguf import precheck
from caldrix.models.references import resolve_model
from tests.caldrix.ggml_writer import TinyFalcon, write_tiny_falcon, write_tiny_gpt2
from tests.caldrix.gguf_writer import gguf_bytes, tiny_llama_metadata, write_gguf

#: Bytes of the real file copied for checks decided by the header alone.
HEADER_COPY_BYTES = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def real_model() -> Path:
    return resolve_model("smollm2-135m").path


def _copy_head(source: Path, target: Path, n_bytes: int) -> Path:
    with source.open("rb") as src:
        target.write_bytes(src.read(n_bytes))
    return target


def _patch(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as handle:
        handle.seek(offset)
        handle.write(data)


def test_the_real_model_passes_with_its_figures(real_model: Path) -> None:
    info = precheck(real_model)
    assert (info.format, info.version, info.architecture) == ("gguf", 3, "llama")
    assert (info.n_layer, info.n_head, info.n_head_kv, info.n_embd) == (30, 9, 3, 576)
    assert (info.head_dim_k, info.context_length, info.n_vocab) == (64, 8192, 49152)
    assert info.tensor_count == 272
    assert info.has_chat_template
    # the tensor data ends exactly at the end of the file
    assert info.tensor_bytes is not None and info.tensor_bytes < info.file_size == real_model.stat().st_size


def test_a_truncated_copy_names_both_sizes(real_model: Path, tmp_path: Path) -> None:
    size = real_model.stat().st_size
    cut = _copy_head(real_model, tmp_path / "cut.gguf", size // 2)
    with pytest.raises(PrecheckFailed, match=rf"file is truncated: {size // 2} of {size} bytes"):
        precheck(cut)


def test_a_copy_cut_inside_the_header_is_truncated(real_model: Path, tmp_path: Path) -> None:
    cut = _copy_head(real_model, tmp_path / "header.gguf", 4096)
    with pytest.raises(PrecheckFailed, match="its header runs past the end of its 4096 bytes"):
        precheck(cut)


def test_a_wrong_magic_is_not_a_gguf_file(real_model: Path, tmp_path: Path) -> None:
    copy = _copy_head(real_model, tmp_path / "zip.gguf", HEADER_COPY_BYTES)
    _patch(copy, 0, b"PK\x03\x04")
    with pytest.raises(PrecheckFailed, match=r"not a GGUF file \(magic b'PK\\x03\\x04'\)") as caught:
        precheck(copy)
    assert caught.value.code == "precheck_failed"
    assert "\n" not in caught.value.message


def test_version_1_is_refused(real_model: Path, tmp_path: Path) -> None:
    copy = _copy_head(real_model, tmp_path / "v1.gguf", HEADER_COPY_BYTES)
    _patch(copy, 4, struct.pack("<I", 1))
    with pytest.raises(PrecheckFailed, match="GGUF version 1 is not supported"):
        precheck(copy)


def test_an_unknown_architecture_is_refused(real_model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "zzzzz.gguf"
    shutil.copyfile(real_model, copy)
    with copy.open("rb") as handle:
        data = handle.read(HEADER_COPY_BYTES)
    key = b"general.architecture"
    # the key, its u32 value type, the u64 string length, then the five bytes "llama"
    value_at = data.index(key) + len(key) + 4 + 8
    assert data[value_at : value_at + 5] == b"llama"
    _patch(copy, value_at, b"zzzzz")
    with pytest.raises(PrecheckFailed, match=r"architecture 'zzzzz' is not supported by llama\.cpp"):
        precheck(copy)


def test_an_embedding_architecture_is_refused_by_name(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "bert.gguf", tiny_llama_metadata("bert"))
    with pytest.raises(PrecheckFailed, match="architecture 'bert' is an embedding model"):
        precheck(path)


@pytest.mark.parametrize("architecture", ["qwen2", "phi3", "gemma2", "gpt2", "starcoder2", "olmo"])
def test_common_architectures_pass(tmp_path: Path, architecture: str) -> None:
    assert architecture in LLAMA_CPP_ARCHITECTURES
    info = precheck(write_gguf(tmp_path / "toy.gguf", tiny_llama_metadata(architecture)))
    assert info.architecture == architecture
    assert (info.n_layer, info.n_head_kv, info.head_dim_k, info.n_vocab) == (2, 2, 16, 100)


def test_version_2_files_are_read(tmp_path: Path) -> None:
    info = precheck(write_gguf(tmp_path / "v2.gguf", version=2))
    assert info.version == 2
    assert info.tensor_bytes == 64 * 100 * 4


def test_a_toy_file_missing_its_last_bytes_is_truncated(tmp_path: Path) -> None:
    whole = gguf_bytes(tiny_llama_metadata(), {"token_embd.weight": (64, 100)})
    path = tmp_path / "short.gguf"
    path.write_bytes(whole[:-1])
    with pytest.raises(PrecheckFailed, match=f"file is truncated: {len(whole) - 1} of {len(whole)} bytes"):
        precheck(path)


def test_a_file_without_architecture_is_refused(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "anon.gguf", {"general.name": "anonymous"}, tensors={})
    with pytest.raises(PrecheckFailed, match=r"no general\.architecture"):
        precheck(path)


def test_a_legacy_ggml_file_is_recognised_for_ctransformers(tmp_path: Path) -> None:
    info = precheck(write_tiny_gpt2(tmp_path / "gpt2.bin"))
    assert (info.format, info.legacy_magic, info.is_legacy) == ("ggml", "ggml", True)


def test_a_falcon_ggcc_file_is_recognised_as_legacy_and_sent_to_ctransformers(tmp_path: Path) -> None:
    shape = TinyFalcon()
    path = write_tiny_falcon(tmp_path / "falcon.bin", shape)
    info = precheck(path)
    assert (info.format, info.legacy_magic, info.is_legacy, info.version) == ("ggml", "ggcc", True, 10)
    # Multi-query attention: the fit counts the header's one KV head, not one per head.
    assert (info.n_layer, info.n_head, info.n_head_kv) == (shape.n_layer, shape.n_head, shape.n_head_kv)
    assert info.head_dim_k == shape.n_embd // shape.n_head
    assert engine_for_file(path) == "ctransformers"


def test_a_ggml_lora_adapter_is_not_a_model(tmp_path: Path) -> None:
    path = tmp_path / "adapter.bin"
    path.write_bytes(struct.pack("<II", 0x67676C61, 1) + b"\0" * 64)
    with pytest.raises(PrecheckFailed, match="LoRA adapter"):
        precheck(path)


def test_a_directory_or_a_tiny_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(PrecheckFailed, match="it is a folder, not a regular file"):
        precheck(tmp_path)
    tiny = tmp_path / "tiny.gguf"
    tiny.write_bytes(b"GGU")
    with pytest.raises(PrecheckFailed, match=r"not a model file \(3 bytes\)"):
        precheck(tiny)

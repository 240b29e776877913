"""The memory fit: footprint figures, the default limit, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from caldrix.errors import NoFit
from caldrix.limits import LEGACY_SCRATCH_BYTES
from caldrix.models.fit import (
    COMPUTE_BUFFER_BASE_BYTES,
    DEFAULT_MEMORY_SHARE,
    MIB,
    check_fit,
    default_memory_limit,
    estimate_footprint,
    kv_bytes,
    window_for,
)
from caldrix.models.gguf import ModelInfo, precheck
from caldrix.models.references import resolve_model
from tests.caldrix.ggml_writer import TinyGpt2, tiny_vocab, write_tiny_gpt2

GIB = 1024 * MIB


@pytest.fixture(scope="module")
def smollm2_info() -> ModelInfo:
    return resolve_model("smollm2-135m").info


def test_kv_matches_what_llama_cpp_reserves_for_smollm2(smollm2_info: ModelInfo) -> None:
    # llama.cpp reports "KV buffer size = 180.00 MiB" for this model at 8192 cells:
    # 30 layers x 8192 rows x 3 KV heads x 64 dims x (K and V) x 2 bytes.
    assert kv_bytes(smollm2_info, 8192) == 180 * MIB
    assert kv_bytes(smollm2_info, 1) == 23040  # ~23 KB a token, as design.md measured


def test_footprint_is_weights_plus_kv_plus_compute(smollm2_info: ModelInfo) -> None:
    footprint = estimate_footprint(smollm2_info, 8192)
    assert smollm2_info.tensor_bytes is not None
    # compute: the larger of logits (49152 x 256) and scores (8192 x 256 x 9 heads), f32
    compute = COMPUTE_BUFFER_BASE_BYTES + 8192 * 256 * 9 * 4
    assert footprint == smollm2_info.tensor_bytes + 180 * MIB + compute
    # at a small window the logits dominate the compute buffer instead
    small = estimate_footprint(smollm2_info, 512)
    assert small == smollm2_info.tensor_bytes + 180 * MIB // 16 + COMPUTE_BUFFER_BASE_BYTES + 49152 * 256 * 4


def test_the_window_defaults_to_the_training_window_at_most_8k(smollm2_info: ModelInfo) -> None:
    assert window_for(smollm2_info, None) == 8192
    assert window_for(smollm2_info, 2048) == 2048


def test_a_legacy_footprint_comes_from_its_header(tmp_path: Path) -> None:
    """The weights are the file, the KV is f32 for gpt2 over the file's own window of 512 (its
    loader keeps it whatever is asked), and ggml's scratch buffer is counted."""
    shape = TinyGpt2()
    path = write_tiny_gpt2(tmp_path / "gpt2.bin", shape)
    info = precheck(path)
    assert (info.n_layer, info.n_embd, info.n_head, info.context_length) == (2, 32, 4, 512)
    assert info.n_vocab == len(tiny_vocab()) and info.kv_element_bytes == 4
    kv = shape.n_layer * 2 * shape.n_embd * 512 * 4
    compute = COMPUTE_BUFFER_BASE_BYTES + LEGACY_SCRATCH_BYTES + 512 * 512 * shape.n_head * 4
    assert estimate_footprint(info, 256, batch=512) == path.stat().st_size + kv + compute


def test_a_refusal_gives_the_figures_in_mib() -> None:
    with pytest.raises(NoFit) as caught:
        check_fit(700 * MIB, [300 * MIB], limit=1 * GIB, budget_per_member=50 * MIB)
    error = caught.value
    assert error.code == "no_fit"
    assert error.message == (
        "the model needs 700 MiB; with 300 MiB resident and 100 MiB of context budgets that is "
        "1100 MiB, over the 1024 MiB limit (use a smaller --ctx, unload a member, or raise --memory-limit)"
    )
    assert error.details == {
        "footprint_bytes": 700 * MIB,
        "resident_bytes": 300 * MIB,
        "budget_bytes": 100 * MIB,
        "needed_bytes": 1100 * MIB,
        "limit_bytes": 1 * GIB,
    }


def test_members_that_fit_together_are_accepted() -> None:
    check_fit(400 * MIB, [300 * MIB, 100 * MIB], limit=1 * GIB, budget_per_member=50 * MIB)
    check_fit(1 * GIB, [], limit=1 * GIB)


def test_an_unknown_footprint_loads_only_alone() -> None:
    check_fit(None, [], limit=1 * MIB)
    with pytest.raises(NoFit, match="footprint is unknown, so it loads only alone"):
        check_fit(None, [100 * MIB], limit=1 * GIB)
    with pytest.raises(NoFit, match="resident member's memory footprint is unknown"):
        check_fit(100 * MIB, [None], limit=1 * GIB)


def _meminfo(tmp_path: Path, available_kib: int) -> Path:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       99999999 kB\nMemAvailable:   {available_kib} kB\n")
    return path


def test_the_default_limit_is_a_share_of_available_memory(tmp_path: Path) -> None:
    meminfo = _meminfo(tmp_path, 8 * 1024 * 1024)  # 8 GiB
    no_cgroup = tmp_path / "no-cgroup"
    assert default_memory_limit(no_cgroup, meminfo) == int(8 * GIB * DEFAULT_MEMORY_SHARE)


def test_a_cgroup_v2_limit_caps_the_default(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "memory.max").write_text(f"{2 * GIB}\n")
    (root / "memory.current").write_text(f"{512 * MIB}\n")
    meminfo = _meminfo(tmp_path, 8 * 1024 * 1024)
    assert default_memory_limit(root, meminfo) == int(1536 * MIB * DEFAULT_MEMORY_SHARE)
    (root / "memory.max").write_text("max\n")
    assert default_memory_limit(root, meminfo) == int(8 * GIB * DEFAULT_MEMORY_SHARE)


def test_a_cgroup_v1_limit_caps_the_default(tmp_path: Path) -> None:
    v1 = tmp_path / "cgroup" / "memory"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text(f"{1 * GIB}\n")
    (v1 / "memory.usage_in_bytes").write_text(f"{256 * MIB}\n")
    meminfo = _meminfo(tmp_path, 8 * 1024 * 1024)
    assert default_memory_limit(tmp_path / "cgroup", meminfo) == int(768 * MIB * DEFAULT_MEMORY_SHARE)


def test_the_default_limit_on_this_machine_is_positive() -> None:
    assert default_memory_limit() > 0


def test_a_model_alone_over_the_limit_is_refused_in_few_words() -> None:
    with pytest.raises(NoFit) as caught:
        check_fit(361 * MIB, [], limit=1 * MIB)
    assert caught.value.message == (
        "the model needs 361 MiB, over the 1 MiB memory limit (use a smaller --ctx or raise --memory-limit)"
    )


def test_a_small_window_is_sized_as_llama_cpp_pads_it(smollm2_info: ModelInfo) -> None:
    assert estimate_footprint(smollm2_info, 64) == estimate_footprint(smollm2_info, 256)

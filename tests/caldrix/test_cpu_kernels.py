"""Which CPU kernels setup builds llama.cpp with, and the engine's refusal of a build made for
another CPU.

The choice (:mod:`caldrix.engines.cpu_kernels`) is pure: checked here on the flag lines of real
CPUs and on the real text ``llama_print_system_info`` gives. The refusal runs the real engine
on this machine's real build, told through its seam that the CPU has fewer flags than it has.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import llama_cpp.llama_cpp as llama_c
import pytest

from caldrix.engine_seam import ServingFlags
from caldrix.engines._llama import built_cpu_features
from caldrix.engines.cpu_kernels import (
    ALWAYS_OFF,
    KERNEL_OPTIONS,
    build_features_of,
    built_features,
    cmake_options,
    cpu_flags,
    missing_for_build,
    this_cpu_flags,
)
from caldrix.engines.llamacpp import open_llamacpp
from caldrix.errors import PrecheckFailed
from tests.default_model import default_model_path

CPU_KERNELS_SCRIPT = Path(__file__).resolve().parents[2] / "caldrix" / "engines" / "cpu_kernels.py"

#: The flags of a 2 vCPU AMD EPYC (Zen 2, family 23) under KVM: AVX2 and FMA, no AVX-512.
EPYC_ZEN2 = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse "
    "sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm rep_good nopl cpuid extd_apicid "
    "tsc_known_freq pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx "
    "f16c rdrand hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch "
    "osvw topoext ssbd ibrs ibpb stibp vmmcall fsgsbase bmi1 avx2 smep bmi2 rdseed adx smap "
    "clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 clzero xsaveerptr wbnoinvd arat npt "
    "nrip_save umip rdpid"
)
#: The flags of the 2 vCPU Intel Xeon this was written on (KVM, family 6): AVX-512 with VNNI,
#: BF16 and VBMI, AVX-VNNI, and AMX.
XEON_SPR = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse "
    "sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc "
    "cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt "
    "tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch "
    "cpuid_fault fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm avx512f avx512dq "
    "rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt "
    "xsavec xgetbv1 xsaves avx_vnni avx512_bf16 arat avx512vbmi umip avx512_vbmi2 gfni vaes "
    "vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid cldemote movdiri movdir64b fsrm "
    "serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8 arch_capabilities"
)
#: What ``llama_print_system_info`` said for setup's build on that Xeon.
XEON_BUILD_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
    "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | "
    "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
#: What it said for the build setup made before (``-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON``).
AVX2_BUILD_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
AVX512_NAMES = ["AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"]


def cpuinfo(*flag_lines: str) -> str:
    """A ``/proc/cpuinfo`` text with one processor per flag line."""
    return "".join(
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: a CPU\nflags\t\t: {flags}\n"
        f"bugs\t\t: spectre_v1\n\n"
        for i, flags in enumerate(flag_lines)
    )


def options(flags: str) -> dict[str, str]:
    """``cmake_options`` for a flag line, as ``{"GGML_AVX2": "ON", ...}``."""
    chosen = cmake_options(cpu_flags(cpuinfo(flags)))
    assert all(option.startswith("-D") for option in chosen)
    return dict(option[2:].split("=") for option in chosen)


def test_an_avx2_cpu_builds_avx2_kernels_and_no_avx512() -> None:
    chosen = options(EPYC_ZEN2)
    for on in ("GGML_SSE42", "GGML_AVX", "GGML_F16C", "GGML_FMA", "GGML_BMI2", "GGML_AVX2"):
        assert chosen[on] == "ON", on
    for off in ("GGML_AVX_VNNI", "GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"):
        assert chosen[off] == "OFF", off


def test_amx_and_native_detection_stay_off_even_where_the_cpu_has_amx() -> None:
    chosen = options(XEON_SPR)
    assert {"amx_tile", "amx_int8", "amx_bf16"} <= cpu_flags(cpuinfo(XEON_SPR))
    for off in ALWAYS_OFF:
        assert chosen[off] == "OFF", off
    for on in ("GGML_AVX2", "GGML_AVX_VNNI", "GGML_AVX512", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"):
        assert chosen[on] == "ON", on
    # One option each, AMX and native named off explicitly (GGML_NATIVE would turn AMX back on).
    assert len(chosen) == len(ALWAYS_OFF) + len(KERNEL_OPTIONS)


def test_avx512_needs_its_whole_base_not_avx512f_alone() -> None:
    # A Xeon Phi (Knights Landing) has AVX-512F and CD but not BW, DQ or VL.
    knights_landing = EPYC_ZEN2 + " avx512f avx512cd avx512er avx512pf"
    chosen = options(knights_landing)
    assert chosen["GGML_AVX512"] == "OFF"
    assert chosen["GGML_AVX512_VNNI"] == "OFF"
    assert missing_for_build(["AVX512"], cpu_flags(cpuinfo(knights_landing))) == ["AVX512"]


def test_cpuinfo_without_flags_gives_no_flags_and_every_kernel_off() -> None:
    text = "processor\t: 0\nvendor_id\t: SomeVendor\nmodel name\t: an emulated CPU\n\n"
    assert cpu_flags(text) == frozenset()
    assert cpu_flags("") == frozenset()
    chosen = options("")
    assert set(chosen.values()) == {"OFF"}


def test_the_first_processor_s_flags_are_read() -> None:
    flags = cpu_flags(cpuinfo("sse4_2 avx avx2", "sse4_2 avx avx2 avx512f"))
    assert flags == frozenset({"sse4_2", "avx", "avx2"})


def test_built_features_reads_the_names_set_to_one_in_the_system_info_text() -> None:
    assert built_features(XEON_BUILD_INFO) >= {"AVX2", "AVX512", "AVX512_VNNI", "AVX512_BF16", "AVX_VNNI"}
    assert "AVX512" not in built_features(AVX2_BUILD_INFO)
    assert built_features(AVX2_BUILD_INFO) >= {"SSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"}
    assert built_features("CPU : AVX2 = 1 | AVX512 = 0 | ") == frozenset({"AVX2"})
    assert built_features("") == frozenset()


def test_missing_for_build_names_what_the_cpu_lacks_in_ggml_s_order() -> None:
    epyc = cpu_flags(cpuinfo(EPYC_ZEN2))
    xeon = cpu_flags(cpuinfo(XEON_SPR))
    assert missing_for_build(built_features(XEON_BUILD_INFO), epyc) == ["AVX_VNNI", *AVX512_NAMES]
    assert missing_for_build(built_features(XEON_BUILD_INFO), xeon) == []
    assert missing_for_build(built_features(AVX2_BUILD_INFO), epyc) == []
    assert missing_for_build(built_features(AVX2_BUILD_INFO), xeon) == []
    # Names the build reports beyond the x86 kernels (OPENMP, REPACK, ...) need no CPU flag.
    assert missing_for_build(["OPENMP", "LLAMAFILE", "REPACK"], frozenset()) == []


def test_a_library_s_features_come_from_ggml_s_has_functions_by_their_system_info_names() -> None:
    library = SimpleNamespace(
        ggml_cpu_has_avx2=lambda: 1,
        ggml_cpu_has_avx512=lambda: 1,
        ggml_cpu_has_avx512_vnni=lambda: 0,
        ggml_cpu_has_f16c=lambda: 1,
    )
    # A function a build does not export (an older ggml) counts as not built.
    assert build_features_of(library) == frozenset({"AVX2", "AVX512", "F16C"})


def test_the_script_prints_setup_s_options_and_checks_the_installed_build() -> None:
    printed = subprocess.run(
        [sys.executable, str(CPU_KERNELS_SCRIPT)], capture_output=True, text=True, check=True
    ).stdout.split()
    this_cpu = this_cpu_flags()
    if this_cpu is not None:
        assert printed == cmake_options(this_cpu)
    # Setup built this venv's llama.cpp on this machine, so it runs here: exit 0, nothing said.
    installed = subprocess.run(
        [sys.executable, str(CPU_KERNELS_SCRIPT), "--installed"], capture_output=True, text=True
    )
    assert (installed.returncode, installed.stdout) == (0, "")


def test_the_engine_reads_the_same_features_llama_print_system_info_shows() -> None:
    # Safe here only because this CPU runs this build (setup built it on this machine).
    shown = built_features(llama_c.llama_print_system_info().decode())
    kernels = {name for _, _, name in KERNEL_OPTIONS}
    assert built_cpu_features() == shown & kernels
    this_cpu = this_cpu_flags()
    if this_cpu is not None:
        assert missing_for_build(built_cpu_features(), this_cpu) == []


@pytest.mark.model
def test_the_engine_refuses_a_build_using_kernels_the_cpu_lacks_in_one_line() -> None:
    built = built_cpu_features()
    assert built, "a build for x86 names its kernels"
    with pytest.raises(PrecheckFailed) as refused:
        open_llamacpp(default_model_path(), ServingFlags(threads=1), cpu_flags=lambda: frozenset())
    message = str(refused.value)
    assert "\n" not in message
    in_order = [name for _, _, name in KERNEL_OPTIONS if name in built]
    assert message.startswith(f"this llama.cpp build uses {', '.join(in_order)}, which this CPU lacks")
    assert "scripts/setup" in message and "docs/engine.md" in message
    assert refused.value.code == "precheck_failed"


@pytest.mark.model
def test_the_engine_names_only_the_kernels_missing() -> None:
    built = built_cpu_features()
    if "AVX512" not in built:
        pytest.skip("this build has no AVX-512 kernels to take away")
    this_cpu = this_cpu_flags() or frozenset()
    without_avx512 = frozenset(flag for flag in this_cpu if not flag.startswith("avx512"))
    with pytest.raises(PrecheckFailed, match=r"^this llama\.cpp build uses AVX512\b") as refused:
        open_llamacpp(default_model_path(), ServingFlags(threads=1), cpu_flags=lambda: without_avx512)
    assert "AVX2" not in str(refused.value)


@pytest.mark.model
def test_unknown_cpu_flags_check_nothing() -> None:
    engine = open_llamacpp(default_model_path(), ServingFlags(threads=1, ctx=256), cpu_flags=lambda: None)
    engine.close()

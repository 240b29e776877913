"""Which of ggml's x86 kernels a CPU can run, as CMake options for a llama.cpp build.

Setup builds llama.cpp for the CPU it runs on, but not with ``GGML_NATIVE``: that turns on
every extension the compiler sees, AMX included, and ggml's AMX path crashes on some Xeons. So
the options are chosen here, one by one, from the flags the kernel reports
(``/proc/cpuinfo``), and AMX is always off.

The same table, read the other way, tells whether an installed build can run on this CPU: a
venv copied from a machine with AVX-512 to one without would die with an illegal instruction
on its first matrix product. :func:`missing_for_build` names what the build needs and the CPU
lacks, so the engine refuses such a build with one line before loading anything.

Run as a script it prints the options for this machine, one per line, for ``scripts/setup``;
with ``--installed`` it says instead whether the llama.cpp installed beside it runs here (exit
1, printing what it lacks, when not), so setup rebuilds a copied venv. Nothing here imports
anything outside the standard library but that one check, which imports llama_cpp: setup runs
the rest before caldrix's dependencies are installed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: ggml's CMake option for each x86 extension, with the ``/proc/cpuinfo`` flag that says the
#: CPU has it and the name ``llama_print_system_info`` gives it once built in. Ordered as ggml
#: lists them; each implies the ones before it only by the CPUs that exist, so each is checked.
KERNEL_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("GGML_SSE42", "sse4_2", "SSE3"),
    ("GGML_AVX", "avx", "AVX"),
    ("GGML_F16C", "f16c", "F16C"),
    ("GGML_FMA", "fma", "FMA"),
    ("GGML_BMI2", "bmi2", "BMI2"),
    ("GGML_AVX2", "avx2", "AVX2"),
    ("GGML_AVX_VNNI", "avx_vnni", "AVX_VNNI"),
    ("GGML_AVX512", "avx512f", "AVX512"),
    ("GGML_AVX512_VBMI", "avx512vbmi", "AVX512_VBMI"),
    ("GGML_AVX512_VNNI", "avx512_vnni", "AVX512_VNNI"),
    ("GGML_AVX512_BF16", "avx512_bf16", "AVX512_BF16"),
)

#: Options kept off whatever the CPU says: ggml's AMX kernels crash on some Xeons
#: (docs/engine.md), and native detection would turn them back on.
ALWAYS_OFF: tuple[str, ...] = ("GGML_NATIVE", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")

#: AVX-512 needs every one of these for ggml's AVX-512 kernels to compile as ggml expects
#: (its own CMake turns them on together under ``GGML_AVX512``).
AVX512_BASE_FLAGS: frozenset[str] = frozenset({"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"})


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The feature flags of the first processor in a ``/proc/cpuinfo`` text."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def cmake_options(flags: Iterable[str]) -> list[str]:
    """The ``-D`` options that build ggml's widest kernels these CPU flags allow, never AMX."""
    have = frozenset(flags)
    options = [f"-D{option}=OFF" for option in ALWAYS_OFF]
    avx512 = have >= AVX512_BASE_FLAGS
    for option, flag, _ in KERNEL_OPTIONS:
        usable = flag in have
        if option.startswith("GGML_AVX512"):
            usable = usable and avx512
        options.append(f"-D{option}={'ON' if usable else 'OFF'}")
    return options


def built_features(system_info: str) -> frozenset[str]:
    """The extensions a build says it was compiled with, from ``llama_print_system_info``.

    The text looks like ``CPU : SSE3 = 1 | AVX = 1 | AVX512 = 0 | ...``; only names set to 1.
    """
    built = set()
    for part in system_info.replace("|", "\n").splitlines():
        name, _, value = part.rpartition("=")
        name = name.split(":")[-1].strip()
        if name and value.strip() == "1":
            built.add(name)
    return frozenset(built)


def build_features_of(library: Any) -> frozenset[str]:
    """The extensions a loaded llama.cpp library (a ``ctypes.CDLL`` of libllama, which reaches
    ggml's symbols) was built with, named as ``llama_print_system_info`` names them.

    Read from ggml's ``ggml_cpu_has_*`` functions (``ggml_cpu_has_avx512_vnni`` for
    ``AVX512_VNNI``): each returns a constant compiled into the library, and that CPU line is
    made of them. ``llama_print_system_info`` itself cannot be asked on a CPU that may lack the
    build's kernels: it registers ggml's CPU backend first, whose ``ggml_cpu_init`` is compiled
    with those kernels and dies of an illegal instruction (docs/engine.md)."""
    built = set()
    for _, _, name in KERNEL_OPTIONS:
        has_feature = getattr(library, f"ggml_cpu_has_{name.lower()}", None)
        if has_feature is not None and has_feature():
            built.add(name)
    return frozenset(built)


def missing_for_build(built: Iterable[str], flags: Iterable[str]) -> list[str]:
    """The extensions a build uses that the CPU lacks, in ggml's order (empty: it can run)."""
    have = frozenset(flags)
    built_names = frozenset(built)
    missing = []
    for option, flag, name in KERNEL_OPTIONS:
        if name not in built_names:
            continue
        needed = {flag} | (set(AVX512_BASE_FLAGS) if option == "GGML_AVX512" else set())
        if not needed <= have:
            missing.append(name)
    return missing


def this_cpu_flags() -> frozenset[str] | None:
    """This machine's CPU flags, or None where there is no ``/proc/cpuinfo`` (not Linux)."""
    try:
        return cpu_flags(Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        return None


def installed_build_check() -> int:
    """``--installed``: 0 when the llama.cpp importable here runs on this CPU, else 1 after
    printing the extensions it uses that this CPU lacks (comma-separated, on one line)."""
    import llama_cpp.llama_cpp as llama_c  # imports and loads the library, runs none of ggml's CPU code

    flags = this_cpu_flags()
    missing = [] if flags is None else missing_for_build(build_features_of(llama_c._lib), flags)
    if missing:
        print(", ".join(missing))
        return 1
    return 0


def main() -> int:
    if sys.argv[1:] == ["--installed"]:
        return installed_build_check()
    flags = this_cpu_flags()
    if flags is None:
        # No /proc/cpuinfo: leave the choice to ggml's defaults, AMX and native detection off.
        print("\n".join(f"-D{option}=OFF" for option in ALWAYS_OFF))
        return 0
    print("\n".join(cmake_options(flags)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The fingerprint of the machine every result carries."""

from __future__ import annotations

import functools
import os
import platform
from typing import Any

from . import _core

# Flags that decide how fast symmetric ciphers run.
X86_CRYPTO_FLAGS = (
    "aes", "vaes", "pclmulqdq", "vpclmulqdq", "ssse3", "avx", "avx2",
    "avx512f", "avx512bw", "avx512vl", "sha_ni", "bmi2", "adx",
)
ARM_CRYPTO_FLAGS = ("aes", "pmull", "sha1", "sha2", "sha512", "asimd", "neon")

# MIDR_EL1 / /proc/cpuinfo "CPU implementer" codes (Arm ARM, "MIDR_EL1") and the
# common parts of each: the cores of phones, boards, servers and laptops that run Linux.
ARM_IMPLEMENTERS = {
    0x00: "software (an emulator, e.g. QEMU)", 0x41: "Arm", 0x42: "Broadcom", 0x43: "Cavium",
    0x46: "Fujitsu", 0x48: "HiSilicon", 0x4E: "NVIDIA", 0x50: "APM", 0x51: "Qualcomm",
    0x53: "Samsung", 0x61: "Apple", 0x6D: "Microsoft", 0xC0: "Ampere",
}
ARM_PARTS = {
    0x41: {0xD01: "Cortex-A32", 0xD03: "Cortex-A53", 0xD04: "Cortex-A35", 0xD05: "Cortex-A55",
           0xD06: "Cortex-A65", 0xD07: "Cortex-A57", 0xD08: "Cortex-A72", 0xD09: "Cortex-A73",
           0xD0A: "Cortex-A75", 0xD0B: "Cortex-A76", 0xD0C: "Neoverse N1", 0xD0D: "Cortex-A77",
           0xD0E: "Cortex-A76AE", 0xD40: "Neoverse V1", 0xD41: "Cortex-A78", 0xD42: "Cortex-A78AE",
           0xD44: "Cortex-X1", 0xD46: "Cortex-A510", 0xD47: "Cortex-A710", 0xD48: "Cortex-X2",
           0xD49: "Neoverse N2", 0xD4A: "Neoverse E1", 0xD4B: "Cortex-A78C", 0xD4C: "Cortex-X1C",
           0xD4D: "Cortex-A715", 0xD4E: "Cortex-X3", 0xD4F: "Neoverse V2", 0xD80: "Cortex-A520",
           0xD81: "Cortex-A720", 0xD82: "Cortex-X4", 0xD84: "Neoverse V3", 0xD85: "Cortex-X925",
           0xD87: "Cortex-A725", 0xD8E: "Neoverse N3"},
    0x43: {0x0A1: "ThunderX", 0x0AF: "ThunderX2"},
    0x46: {0x001: "A64FX"},
    0x48: {0xD01: "TaiShan v110 (Kunpeng 920)"},
    0x4E: {0x003: "Denver 2", 0x004: "Carmel"},
    0x51: {0x800: "Kryo 2xx Gold", 0x801: "Kryo 2xx Silver", 0x802: "Kryo 3xx Gold",
           0x803: "Kryo 3xx Silver", 0x804: "Kryo 4xx Gold", 0x805: "Kryo 4xx Silver",
           0xC00: "Falkor", 0x001: "Oryon"},
    0x53: {0x001: "Exynos M1", 0x002: "Exynos M3", 0x003: "Exynos M4", 0x004: "Exynos M5"},
    0x61: {0x022: "M1 Icestorm", 0x023: "M1 Firestorm", 0x024: "M1 Pro Icestorm",
           0x025: "M1 Pro Firestorm", 0x028: "M1 Max Icestorm", 0x029: "M1 Max Firestorm",
           0x032: "M2 Blizzard", 0x033: "M2 Avalanche"},
    0xC0: {0xAC3: "Ampere-1", 0xAC4: "Ampere-1a"},
}


def arm_part_name(implementer: int, part: int) -> str:
    """'Cortex-A55' for (0x41, 0xd05); 'Qualcomm part 0x123' for a part not in the table."""
    name = ARM_PARTS.get(implementer, {}).get(part)
    if name is not None:
        return name
    vendor = ARM_IMPLEMENTERS.get(implementer, f"implementer 0x{implementer:02x}")
    return f"{vendor.split(' (')[0]} part 0x{part:03x}"


def arm_cores(cpuinfo: str) -> list[tuple[str, int]]:
    """The core types of an ARM /proc/cpuinfo and how many of each, most first
    ([('Cortex-A55', 4)] on an RK3568; big.LITTLE phones list two or three types)."""
    counts: dict[str, int] = {}
    implementer = None
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        try:
            if key == "cpu implementer":
                implementer = int(value.strip(), 0)
            elif key == "cpu part" and implementer is not None:
                name = arm_part_name(implementer, int(value.strip(), 0))
                counts[name] = counts.get(name, 0) + 1
        except ValueError:
            continue
    return sorted(counts.items(), key=lambda kv: -kv[1])


def arm_model(cpuinfo: str, midr: int) -> str | None:
    """'4x Cortex-A55', '4x Kryo 2xx Silver + 4x Kryo 2xx Gold': from /proc/cpuinfo,
    else from this core's MIDR_EL1 (under qemu-user, /proc/cpuinfo is the host's)."""
    cores = arm_cores(cpuinfo)
    if cores:
        return " + ".join(f"{n}x {name}" for name, n in cores)
    if midr:
        return arm_part_name((midr >> 24) & 0xFF, (midr >> 4) & 0xFFF)
    return None


def _is_arm() -> bool:
    m = platform.machine().lower()
    return m in ("aarch64", "arm64") or m.startswith("arm")


def _cpuinfo() -> tuple[str, list[str]]:
    """CPU model and its crypto-relevant flags: /proc/cpuinfo where there is one; on ARM
    the core names from the implementer/part table and the flags from the kernel's
    HWCAP (what the C probe read), which hold under emulation too."""
    model = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and value.strip():
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    if not _is_arm():
        return model, [f for f in X86_CRYPTO_FLAGS if f in flags]
    info = _core.cpu_info()
    flags = set(info["features"].split()) or flags
    if "asimd" in flags:
        flags.add("neon")
    cores = arm_model(text, int(info["midr"]))
    if cores is not None:
        # the SoC ("Hardware", on some kernels) in front of the cores; a "model name" of
        # another architecture (qemu-user shows the host's /proc/cpuinfo) is dropped
        hardware = next((line.partition(":")[2].strip() for line in text.splitlines()
                         if line.lower().startswith("hardware") and line.partition(":")[2].strip()),
                        None)
        model = f"{hardware}: {cores}" if hardware else cores
    return model, [f for f in ARM_CRYPTO_FLAGS if f in flags]


@functools.lru_cache(maxsize=1)
def _fingerprint() -> dict[str, Any]:
    from . import __version__

    model, flags = _cpuinfo()
    return {
        "cpu_model": model,
        "cpu_flags": flags,
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "openssl_version": _core.OPENSSL_VERSION,
        "openssl_build_version": _core.OPENSSL_BUILD_VERSION,
        "compiler": _core.COMPILER,
        "tea_impl": _core.TEA_IMPL,
        "b64_impl": _core.B64_IMPL,  # the store's Base64 decoder (PCB_B64_SCALAR=1 forces scalar)
        "tsc": bool(_core.TSC_AVAILABLE),
        # the fixed-rate counter behind cycles_per_byte ('tsc', 'cntvct_el0'; None without)
        # and its rate where the CPU says (aarch64's CNTFRQ_EL0), else None
        "cycle_counter": _core.cpu_info()["counter"] or None,
        "cycle_counter_hz": _core.cpu_info()["counter_hz"] or None,
        # whether samples count involuntary context switches (Linux's RUSAGE_THREAD);
        # False: the context-switch warnings cannot fire on this build
        "thread_switches": bool(_core.cpu_info()["thread_switches"]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "package_version": __version__,
    }


def machine() -> dict[str, Any]:
    """CPU model and crypto flags, cores, OpenSSL version, compiler, Python and package version.

    Every :class:`~pycipherbench.Measurement` carries this dict so that results
    from different machines are never mistaken for each other.
    """
    fp = _fingerprint()
    return {**fp, "cpu_flags": list(fp["cpu_flags"])}

"""The fingerprint of the machine every result carries."""

from __future__ import annotations

import functools
import os
import platform
import re
import time
from dataclasses import dataclass
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


# -- what makes this machine's figures move (``pycipherbench machine --check``) ---------------

@dataclass(frozen=True)
class Check:
    """One thing about this machine that moves timings: its ``state`` as read, ``ok``
    (True fine, False off, None unreadable or for information), what it does to the
    figures and the command that fixes it (as ``pyperf system show`` says)."""

    name: str
    state: str
    ok: bool | None
    effect: str = ""
    fix: str = ""


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _cpus() -> list[int]:
    found = sorted(int(m.group(1)) for name in os.listdir(_CPU)
                   if (m := re.fullmatch(r"cpu(\d+)", name))) if os.path.isdir(_CPU) else []
    return found or list(range(os.cpu_count() or 1))


_CPU = "/sys/devices/system/cpu"


def _check_load() -> Check:
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        return Check("load average", "unreadable", None)
    return Check("load average", f"{load:.2f} (1 min) on {cores} core{'s' * (cores != 1)}",
                 load < 1.0,
                 "other processes compete for the CPU and its caches: slower, noisier rounds",
                 "stop other work (top shows what runs), or measure on an idle machine")


def _check_governor(cpus: list[int]) -> Check:
    govs = {g for c in cpus if (g := _read(f"{_CPU}/cpu{c}/cpufreq/scaling_governor"))}
    if not govs:
        return Check("CPU frequency governor", "not exposed (a VM, or no cpufreq driver)", None)
    return Check("CPU frequency governor", ", ".join(sorted(govs)), govs == {"performance"},
                 "the clock follows the load: the first rounds of a process run slower, "
                 "and the frequency a process starts at varies",
                 "sudo cpupower frequency-set -g performance (or: sudo pyperf system tune)")


def _check_boost() -> Check:
    no_turbo = _read(f"{_CPU}/intel_pstate/no_turbo")
    boost = _read(f"{_CPU}/cpufreq/boost")
    if no_turbo is not None:
        on, fix = no_turbo == "0", "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo"
    elif boost is not None:
        on, fix = boost == "1", "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost"
    else:
        return Check("turbo/boost", "not exposed (a VM, or no cpufreq driver)", None)
    return Check("turbo/boost", "on" if on else "off", not on,
                 "the clock rises while the package is cool and few cores work, then falls: "
                 "figures depend on temperature and on what else runs", fix)


def _busy(cpus: list[int], seconds: float = 0.2) -> dict[int, float]:
    """Share of time each CPU was busy over ``seconds`` (from /proc/stat)."""
    def snap() -> dict[int, tuple[int, int]]:
        out = {}
        for line in (_read("/proc/stat") or "").splitlines():
            m = re.match(r"cpu(\d+)\s+(.*)", line)
            if m:
                v = [int(x) for x in m.group(2).split()]
                out[int(m.group(1))] = (sum(v), v[3] + (v[4] if len(v) > 4 else 0))
        return out
    a = snap()
    time.sleep(seconds)
    b = snap()
    return {c: 1.0 - (b[c][1] - a[c][1]) / max(b[c][0] - a[c][0], 1) for c in a if c in b}


def _check_smt(cpus: list[int]) -> Check:
    groups = {s for c in cpus
              if (s := _read(f"{_CPU}/cpu{c}/topology/thread_siblings_list")) and ("," in s or "-" in s)}
    if not groups:
        return Check("SMT siblings", "none (one thread per core)", True)
    busy = _busy(cpus)
    hot = sorted(c for c, b in busy.items() if b > 0.5)
    return Check("SMT siblings", f"{len(groups)} cores with siblings ({', '.join(sorted(groups))}); "
                 f"busy now: {', '.join(f'cpu{c}' for c in hot) or 'none'}", not hot,
                 "a busy sibling thread shares the core's execution units and caches: the "
                 "benchmark on the other thread runs slower by an amount that varies",
                 "stop the work on the siblings, or: echo off | sudo tee "
                 "/sys/devices/system/cpu/smt/control")


def _check_thp() -> Check:
    raw = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    if raw is None:
        return Check("transparent huge pages", "not exposed", None)
    chosen = re.search(r"\[(\w+)\]", raw)  # "always [madvise] never": the bracketed one
    mode = chosen.group(1) if chosen else raw
    return Check("transparent huge pages", str(mode), mode != "always",
                 "whether a process's large buffers get huge pages varies from process to "
                 "process (TLB misses differ): the worker processes' spread covers it, at the "
                 "cost of wider intervals",
                 "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled")


def _check_aslr() -> Check:
    raw = _read("/proc/sys/kernel/randomize_va_space")
    if raw is None:
        return Check("ASLR", "not exposed", None)
    on = raw != "0"
    return Check("ASLR", f"{'on' if on else 'off'} (randomize_va_space={raw})", True,
                 "each process gets another memory layout (cache-set and 4 KiB aliasing "
                 "effects differ): the worker processes sample it" if on else
                 "every process gets the same layout: intervals cannot see layout effects, "
                 "which another machine's layout may show", "")


def _check_isolated() -> Check:
    raw = _read(f"{_CPU}/isolated")
    if raw is None:
        return Check("isolated CPUs", "not exposed", None)
    return Check("isolated CPUs", raw or "none", None if not raw else True,
                 "" if raw else "the benchmark shares its CPU with every other task and with "
                 "interrupts: preemptions show as slow rounds",
                 "" if raw else "boot with isolcpus=N (and rcu_nocbs=N), then run under "
                 "taskset -c N (pyperf's advice for the quietest figures)")


def _check_throttle(cpus: list[int]) -> Check:
    counts: dict[str, int] = {}
    for c in cpus:
        for kind in ("core", "package"):
            v = _read(f"{_CPU}/cpu{c}/thermal_throttle/{kind}_throttle_count")
            if v is not None and v.isdigit():
                counts[kind] = counts.get(kind, 0) + int(v)
    if not counts:
        return Check("thermal throttling", "counters not exposed (a VM, or not Intel)", None)
    total = sum(counts.values())
    return Check("thermal throttling", ", ".join(f"{k} {v} since boot" for k, v in counts.items()),
                 total == 0, "a hot CPU lowers its clock in the middle of a run: a drift "
                 "between the first and the last rounds", "cool the machine (airflow, a "
                 "lower fixed clock: sudo cpupower frequency-set -u <freq>)")


def check_machine() -> list[Check]:
    """What on this machine makes timings move, read without root and changing nothing."""
    cpus = _cpus()
    return [_check_load(), _check_governor(cpus), _check_boost(), _check_smt(cpus),
            _check_thp(), _check_aslr(), _check_isolated(), _check_throttle(cpus)]


def format_checks(checks: list[Check]) -> str:
    """The checks as ``pyperf system show`` prints them: state, and for what is off its
    effect and fix."""
    tag = {True: "ok  ", False: "OFF ", None: "info"}
    lines = ["# What makes this machine's figures move (read only; nothing changed)"]
    for c in checks:
        lines.append(f"[{tag[c.ok]}] {c.name}: {c.state}")
        if c.ok is not True and c.effect:
            lines.append(f"       effect: {c.effect}")
        if c.ok is not True and c.fix:
            lines.append(f"       fix: {c.fix}")
    off = [c.name for c in checks if c.ok is False]
    lines.append(f"# {len(off)} of {len(checks)} off" + (f": {', '.join(off)}" if off else ""))
    return "\n".join(lines)


def check_summary(checks: list[Check] | None = None) -> str:
    """One line for a run's header naming what is off ('' when nothing is)."""
    checks = check_machine() if checks is None else checks
    off = [f"{c.name} {c.state}" for c in checks if c.ok is False]
    return ("# Noisy machine: " + "; ".join(off) + " (pycipherbench machine --check says what to do)"
            if off else "")

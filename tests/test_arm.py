"""ARM64 as a platform (issue 20): the NEON TEA/XTEA kernels, the CPU fingerprint
(implementer/part names, HWCAP features, the cntvct_el0 counter) and hw_aes=False's
OPENSSL_armcap mask reaching the child.

The tests marked aarch64 run where the interpreter is aarch64: on ARM hardware, or under
qemu-aarch64-static in .ci/aarch64.sh (PCB_AARCH64_EMULATED=1), where timings say nothing
about a real core, so no test here compares speeds. The others run everywhere.
"""

import json
import os
import platform
import subprocess
import tempfile
import sys
import textwrap
from pathlib import Path

import pytest

import pycipherbench as pcb
from conftest import child_env  # noqa: E402
from pycipherbench import _core, _hwaes, _machine

REPO = Path(__file__).resolve().parent.parent
AARCH64 = platform.machine().lower() in ("aarch64", "arm64")
aarch64_only = pytest.mark.skipif(not AARCH64, reason="needs an aarch64 interpreter")


def _child(script, *args, env_extra=None):
    # The pycipherbench under test (installed or built in place), from a neutral directory:
    # "python -c" in the checkout would import its sources without the extension.
    env = child_env(**(env_extra or {}))
    return subprocess.run([sys.executable, "-c", script, *args], cwd=tempfile.gettempdir(),
                          env=env, capture_output=True, text=True, timeout=600)


# --------------------------------------------------------------- fingerprint (everywhere)

# /proc/cpuinfo as arm64 Linux prints it (trimmed to what matters): an RK3568 board
# (4x Cortex-A55, no AES instructions) and a Snapdragon 835 phone (4 + 4 Kryo 280).
RK3568 = "".join(
    f"processor\t: {i}\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
    f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x2\n"
    f"CPU part\t: 0xd05\nCPU revision\t: 0\n\n" for i in range(4))
SD835 = "".join(
    f"processor\t: {i}\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n"
    f"CPU implementer\t: 0x51\nCPU architecture: 8\nCPU variant\t: 0xa\n"
    f"CPU part\t: {'0x801' if i < 4 else '0x800'}\nCPU revision\t: 4\n\n" for i in range(8)
) + "Hardware\t: Qualcomm Technologies, Inc MSM8998\n"


@pytest.mark.parametrize("implementer, part, name", [
    (0x41, 0xD03, "Cortex-A53"), (0x41, 0xD05, "Cortex-A55"), (0x41, 0xD08, "Cortex-A72"),
    (0x41, 0xD0B, "Cortex-A76"), (0x41, 0xD44, "Cortex-X1"), (0x41, 0xD0C, "Neoverse N1"),
    (0x41, 0xD40, "Neoverse V1"), (0x41, 0xD4F, "Neoverse V2"), (0x51, 0x800, "Kryo 2xx Gold"),
    (0x61, 0x023, "M1 Firestorm"), (0xC0, 0xAC3, "Ampere-1"),
    # not in the table: the vendor and the number, never a guess
    (0x51, 0x123, "Qualcomm part 0x123"), (0x7F, 0x001, "implementer 0x7f part 0x001"),
    (0x00, 0x051, "software part 0x051"),  # what qemu's "max" CPU reports
])
def test_arm_part_names(implementer, part, name):
    assert _machine.arm_part_name(implementer, part) == name


def test_arm_cores_from_cpuinfo():
    assert _machine.arm_cores(RK3568) == [("Cortex-A55", 4)]
    assert _machine.arm_model(RK3568, 0) == "4x Cortex-A55"
    assert sorted(_machine.arm_cores(SD835)) == [("Kryo 2xx Gold", 4), ("Kryo 2xx Silver", 4)]
    # no ARM lines (x86's /proc/cpuinfo, as qemu-user shows it): this core's MIDR_EL1
    assert _machine.arm_model("processor\t: 0\nmodel name\t: AMD EPYC\n", 0x410FD0B1) == "Cortex-A76"
    assert _machine.arm_model("", 0) is None


def test_cpu_info_shape():
    info = _core.cpu_info()
    assert set(info) == {"features", "midr", "openssl_cpu_settings", "counter", "counter_hz",
                         "thread_switches"}
    assert isinstance(info["features"], str) and isinstance(info["midr"], int)
    # OpenSSL names its own capability variable: the one hw_aes=False sets on this CPU
    _, mask = _hwaes.masked_environment()
    assert info["openssl_cpu_settings"].startswith(mask.partition("=")[0] + "=")
    fp = pcb.machine()
    assert fp["cycle_counter"] == (info["counter"] or None)
    assert fp["tsc"] == (info["counter"] != "")
    assert fp["thread_switches"] is info["thread_switches"]


# --------------------------------------------------------------- hw_aes=False (everywhere)

def test_hw_aes_false_mask_reaches_the_child():
    """The child's OpenSSL reports the mask it read from its environment and a
    capability word without AES; the parent's OpenSSL saw no mask."""
    parent = _core.cpu_info()["openssl_cpu_settings"]
    with _hwaes.MaskedWorker() as w:
        child = w.openssl_cpu_settings
        child_env = w.call(None, "cpu_info")
    var, _, value = w.mask.partition("=")
    assert child == child_env["openssl_cpu_settings"]
    assert f"env:{value}" in child.split(), child
    if var not in os.environ:
        assert "env:" not in parent, parent
    word = int(child.split()[0].partition("=")[2].split(":")[0], 16)
    assert not word & (1 << _hwaes.AES_BIT[var]), child
    if var == "OPENSSL_armcap":
        assert word == 0x1, child  # NEON only: no AES, PMULL, SHA-1/2/512


@pytest.mark.parametrize("report", [
    "",  # an OpenSSL that reports nothing: cannot be checked, accepted
    "OPENSSL_armcap=0x1 env:0x1",
])
def test_check_mask_reached_accepts(report):
    assert _hwaes.check_mask_reached("OPENSSL_armcap=0x1", report) == report


@pytest.mark.parametrize("mask, report", [
    ("OPENSSL_armcap=0x1", "OPENSSL_armcap=0xfd"),  # the variable never reached OpenSSL
    ("OPENSSL_armcap=0x1", "OPENSSL_armcap=0x5 env:0x1"),  # AES still on
    ("OPENSSL_ia32cap=~0x200000200000000", "OPENSSL_ia32cap=0xfffa3203078bffff:0x0"),
    ("OPENSSL_ia32cap=~0x200000200000000",
     "OPENSSL_ia32cap=0xfffa3203078bffff:0x0 env:~0x200000200000000"),  # bit 57 set
])
def test_check_mask_reached_refuses(mask, report):
    with pytest.raises(RuntimeError, match="hw_aes=False"):
        _hwaes.check_mask_reached(mask, report)


def test_hw_aes_false_measures():
    m = pcb.measure("AES/GCM/NoPadding", payload=1024, hw_aes=False, min_time=0.002,
                    repeats=3, warmup=0.0)
    assert not m.hw_aes and m.hw_mask == _hwaes.masked_environment()[1]
    assert len(m.samples) == 3 and all(s > 0 for s in m.samples)


# --------------------------------------------------------------- TEA implementation names

def test_tea_impl_neon_is_known_and_refused_where_absent():
    r = _child("import pycipherbench as p; print(p._core.TEA_IMPL)",
               env_extra={"PCB_TEA_IMPL": "neon"})
    if "neon" in _core.tea_impls():
        assert r.returncode == 0 and r.stdout.strip() == "neon", r.stderr
    else:  # a known name this CPU cannot run: a clean ImportError saying so
        assert r.returncode != 0 and "PCB_TEA_IMPL=neon: this CPU cannot run it" in r.stderr, r.stderr


# --------------------------------------------------------------- aarch64 only

@aarch64_only
def test_aarch64_fingerprint():
    fp = pcb.machine()
    info = _core.cpu_info()
    assert fp["arch"] in ("aarch64", "arm64")
    features = set(info["features"].split())
    assert "asimd" in features  # part of the aarch64 ABI
    assert set(fp["cpu_flags"]) <= set(_machine.ARM_CRYPTO_FLAGS)
    assert {f for f in fp["cpu_flags"] if f != "neon"} == features & set(_machine.ARM_CRYPTO_FLAGS)
    assert "neon" in fp["cpu_flags"]
    assert not any(x86 in fp["cpu_model"] for x86 in ("AMD", "Intel", "EPYC", "Xeon")), fp["cpu_model"]
    if info["midr"]:
        implementer, part = (info["midr"] >> 24) & 0xFF, (info["midr"] >> 4) & 0xFFF
        assert _machine.arm_part_name(implementer, part) in fp["cpu_model"]
    assert fp["tea_impl"] == "neon"
    # the speed table's flag line names ARM's features
    from pycipherbench.experiments import _machine_line
    line = _machine_line(fp)
    assert "crypto flags: " in line and "asimd" in line
    assert ("aes" in line) == ("aes" in features)


@aarch64_only
def test_aarch64_cycle_counter_is_cntvct():
    fp = pcb.machine()
    assert fp["cycle_counter"] == "cntvct_el0" and fp["tsc"]
    assert fp["cycle_counter_hz"] and fp["cycle_counter_hz"] >= 1_000_000
    m = pcb.measure("TEA/CTR/NoPadding", payload=4096, min_time=0.005, repeats=3, warmup=0.0)
    assert m.cycles_per_byte is not None and m.cycles_per_byte > 0


@aarch64_only
def test_aarch64_hw_aes_reported():
    openssl = next(b for b in pcb.backends() if b["name"] == "openssl")
    assert openssl["hw_aes"] == ("aes" in _core.cpu_info()["features"].split())


_NEON_VECTORS = textwrap.dedent(
    """
    import json, sys
    import pycipherbench as pcb
    assert pcb._core.TEA_IMPL == "neon", pcb._core.TEA_IMPL
    vectors = json.load(open(sys.argv[1]))["vectors"]
    n = 0
    for v in vectors:
        key, pt, ct = (bytes.fromhex(v[k]) for k in ("key", "plaintext", "ciphertext"))
        for count in (4, 15, 37, 64):  # every NEON group size (8, 4, 2, 1 vectors) and the scalar tail
            got = pcb.encrypt(v["transformation"], key, pt * count, rounds=v["rounds"])
            assert got == ct * count, (v["name"], count)
            assert pcb.decrypt(v["transformation"], key, ct * count, rounds=v["rounds"]) == pt * count
            n += 1
    print("OK", n)
    """
)


@aarch64_only
def test_tea_neon_published_vectors():
    """Every published TEA/XTEA vector through the NEON kernel: the block repeated so the
    multi-block path runs, forced with PCB_TEA_IMPL=neon."""
    path = REPO / "tests" / "vectors" / "tea_xtea.json"
    r = _child(_NEON_VECTORS, str(path), env_extra={"PCB_TEA_IMPL": "neon"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["OK", str(4 * len(json.loads(path.read_text())["vectors"]))]


@aarch64_only
def test_tea_neon_default_and_equal_to_scalar():
    """NEON is what auto picks, and it agrees with the interleaved scalar kernel (forced in a
    child) and the reference on odd lengths, all modes; test_interop's matrix goes wider."""
    assert _core.TEA_IMPL == "neon" and "neon" in _core.tea_impls()
    script = textwrap.dedent(
        """
        import random, pycipherbench as pcb
        rng = random.Random(20)
        out = []
        for t in ("TEA/ECB/NoPadding", "XTEA/CBC/NoPadding", "TEA/CTR/NoPadding", "XTEA/CTR/NoPadding"):
            for n in (0, 8, 24, 32, 40, 64, 96, 128, 256, 264, 1000 * 8 + 3 * (t.endswith("CTR/NoPadding"))):
                key, pt = rng.randbytes(16), rng.randbytes(n)
                iv = None if "ECB" in t else rng.randbytes(8)
                ct = pcb.encrypt(t, key, pt, iv=iv, rounds=32)
                assert ct == pcb.encrypt(t.replace("/", "-ref/", 1), key, pt, iv=iv, rounds=32), (t, n)
                out.append(ct.hex())
        print(pcb._core.TEA_IMPL, len(out), hash(tuple(out)))
        """
    )
    neon = _child(script, env_extra={"PCB_TEA_IMPL": "neon", "PYTHONHASHSEED": "0"})
    scalar = _child(script, env_extra={"PCB_TEA_IMPL": "scalar", "PYTHONHASHSEED": "0"})
    assert neon.returncode == 0 and scalar.returncode == 0, neon.stderr + scalar.stderr
    n_impl, n_count, n_hash = neon.stdout.split()
    s_impl, s_count, s_hash = scalar.stdout.split()
    assert (n_impl, s_impl) == ("neon", "scalar") and n_count == s_count == "44"
    assert n_hash == s_hash


# --------------------------------------------------------------- a portable core

# Linux-only names (calls, constants, struct fields, headers): each use in csrc/ must sit
# inside a preprocessor condition that names the platform, the fallback switch or the
# name itself; the open flags only need a `#ifndef FLAG` fallback in their file.
LINUX_ONLY = ("getrandom", "getauxval", "sys/auxv.h", "MADV_HUGEPAGE", "RUSAGE_THREAD",
              "F_OFD_SETLK", "F_OFD_SETLKW", "F_OFD_GETLK", "st_mtim", "pipe2", "accept4",
              "memfd_create", "statx", "renameat2", "O_TMPFILE", "O_PATH", "sched_getaffinity",
              "pthread_setaffinity_np", "pthread_getaffinity_np", "gettid", "prctl",
              "sync_file_range", "copy_file_range", "fallocate", "MAP_POPULATE", "MAP_HUGETLB",
              "CLOCK_MONOTONIC_RAW", "CLOCK_BOOTTIME", "epoll_create1", "eventfd", "inotify_init1",
              "HWCAP_ASIMD", "HWCAP_AES")
FLAG_FALLBACKS = ("O_DIRECTORY", "O_CLOEXEC")
GUARD_WORDS = ("__linux__", "PCB_FORCE_FALLBACKS", "PCB_HAVE_", "PCB_CPU_AUXV")


def _strip_comments(text):
    import re
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)  # string literals (messages, docs)


def _unguarded_uses(text):
    """(line number, name) of every Linux-only name outside a condition that guards it."""
    import re
    stack, out = [], []
    for no, line in enumerate(_strip_comments(text).splitlines(), 1):
        d = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        if d:
            kind, cond = d.groups()
            if kind in ("if", "ifdef", "ifndef"):
                stack.append(cond)
            elif kind in ("elif", "else") and stack:
                stack[-1] += " " + cond  # an #else still belongs to its #if's question
            elif kind == "endif" and stack:
                stack.pop()
            continue
        for name in LINUX_ONLY:
            if re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", line):
                guarded = any(w in c for c in stack for w in GUARD_WORDS + (name,))
                if not guarded:
                    out.append((no, name))
    for flag in FLAG_FALLBACKS:
        if re.search(r"\b" + flag + r"\b", text) and not re.search(r"#\s*ifndef\s+" + flag + r"\b", text):
            out.append((0, flag + " without a #ifndef fallback"))
    return out


def test_linux_only_calls_are_guarded():
    found = {str(p.relative_to(REPO)): _unguarded_uses(p.read_text())
             for p in sorted((REPO / "csrc").glob("*/*.[ch]"))}
    assert {f: u for f, u in found.items() if u} == {}


def test_guard_checker_finds_unguarded_uses():
    """The checker itself: an unguarded use is found, a guarded one is not."""
    assert _unguarded_uses("int f(void) { return getrandom(0, 0, 0); }\n") == [(1, "getrandom")]
    assert _unguarded_uses("#if defined(__linux__)\nx = getrandom(k, 8, 0);\n#else\ny = 0;\n#endif\n") == []
    assert _unguarded_uses("#ifdef F_OFD_SETLK\nfcntl(fd, F_OFD_SETLK, &fl);\n#endif\n") == []
    assert _unguarded_uses("/* getrandom in a comment */\n") == []
    assert _unguarded_uses('doc("RUSAGE_THREAD in a string");\n') == []
    assert _unguarded_uses("open(p, O_DIRECTORY);\n") == [(0, "O_DIRECTORY without a #ifndef fallback")]
    assert _unguarded_uses("#ifndef O_DIRECTORY\n#define O_DIRECTORY 0\n#endif\nopen(p, O_DIRECTORY);\n") == []


def _undeclared_without_linux(cc, path, incs):
    """Warnings about undeclared functions when path compiles as if not on Linux."""
    r = subprocess.run([cc, "-std=c11", "-fsyntax-only", "-U__linux__", "-D_DEFAULT_SOURCE",
                        "-Wimplicit-function-declaration", *(f"-I{d}" for d in incs), str(path)],
                       capture_output=True, text=True, timeout=120, check=False)
    # gcc: "implicit declaration of function"; clang: "call to undeclared function"
    return [line for line in r.stderr.splitlines()
            if "implicit declaration" in line or "undeclared function" in line]


EMULATED_CC = pytest.mark.skipif(
    bool(os.environ.get("PCB_AARCH64_EMULATED")),
    reason="under qemu the compiler is the x86-64 host's and the headers the aarch64 interpreter's")


@EMULATED_CC
def test_non_linux_branches_declare_what_they_call():
    """Every C file compiled with __linux__ undefined (the branches macOS and the BSDs
    take, on this system's headers, which then show their default, BSD-visible API) still
    declares every function it calls: a fallback's header must not hide behind a Linux
    guard (getentropy's did)."""
    import shutil
    import sysconfig
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None or shutil.which("pkg-config") is None:
        pytest.skip("needs a C compiler and pkg-config")
    ssl = subprocess.run(["pkg-config", "--cflags-only-I", "libcrypto"], capture_output=True,
                         text=True, check=True)
    incs = [REPO / "csrc", sysconfig.get_paths()["include"],
            *(f[2:] for f in ssl.stdout.split() if f.startswith("-I"))]
    found = {str(p.relative_to(REPO)): _undeclared_without_linux(cc, p, incs)
             for p in sorted((REPO / "csrc").glob("*/*.c"))}
    assert {f: w for f, w in found.items() if w} == {}


@EMULATED_CC
def test_undeclared_checker_finds_a_call_behind_a_linux_guard(tmp_path):
    """The checker itself: a header behind __linux__ leaves the call undeclared elsewhere."""
    import shutil
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler")
    src = tmp_path / "f.c"
    src.write_text("#if defined(__linux__)\n#include <stdio.h>\n#endif\n"
                   "int f(void) { return puts(\"x\"); }\n")
    assert len(_undeclared_without_linux(cc, src, [])) == 1
    src.write_text("#include <stdio.h>\nint f(void) { return puts(\"x\"); }\n")
    assert _undeclared_without_linux(cc, src, []) == []


@pytest.mark.skipif(not os.environ.get("PCB_EXPECT_FALLBACKS"),
                    reason="only for a PCB_FORCE_FALLBACKS=1 build (.ci/run sets PCB_EXPECT_FALLBACKS)")
def test_forced_fallbacks_reached_the_build():
    """The switch reached the C code: no per-thread context switches (RUSAGE_THREAD off)
    and, on aarch64, no HWCAP probe (NEON assumed, no crypto bits)."""
    info = _core.cpu_info()
    assert info["thread_switches"] is False and pcb.machine()["thread_switches"] is False
    if AARCH64:
        assert info["features"] == "asimd" and info["midr"] == 0

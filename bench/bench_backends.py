#!/usr/bin/env python3
"""Backends benchmark (issue 13): each crypto library through pycipherbench, side by side
with the library's own benchmark, per-message costs with intervals, and threads scaling.

Usage: python bench/bench_backends.py [--rounds N] [--quick] [--strict] [--seconds S]
                                      [--openssl PATH] [--json FILE] [--cryptest-seconds S]
                                      [--only SECTION ...]

A report, not a test: it prints PASS/FAIL per bar and exits 0 unless --strict.

1. AES-128-CTR (stream scope) and AES-GCM (whole messages) at 16 KiB, for every C backend,
   against the library's own loop, in interleaved rounds (one reference run, then one
   pycipherbench sample, per round); the bar is the median per-round ratio >= 0.95.
   - openssl: `openssl speed -elapsed -mr -evp aes-128-ctr|aes-128-gcm -bytes 16384`.
     `openssl speed`'s GCM re-keys every message (see bench_kernels.py), so its GCM
     counterpart here is pycipherbench's rekey scope; CTR streams in place = stream scope.
   - nettle, gcrypt, mbedtls, sodium: Debian packages no benchmark program of theirs
     (nettle-bin 3.8.1 has no nettle-benchmark; libgcrypt's bench-slope and Mbed TLS's
     benchmark are not installed), so bench/backend_ref.c stands in: the library's own
     call in a bare C loop, built here with the flags pkg-config gives. Its CTR loop is
     what nettle-benchmark times (ctr_crypt over a buffer, in place); its GCM loop is one
     whole message per operation with a fresh IV and the key schedule kept (= message
     scope). libsodium has GCM only, with AES-256. If `nettle-benchmark` is on PATH it
     is run too and printed, for information.
2. Per-message cost at 16 B for every backend (C and Python) with 95% intervals, and the
   paired ratio to OpenSSL (Results.ratio: the backends are points of one sweep, sampled
   in the same rounds): ChaCha20-Poly1305 and AES-256-GCM (the GCM every backend has).
3. threads=2 aggregate vs threads=1, AES-128-CTR 16 KiB stream, for every C backend
   that has it (paired rounds); bar >= 1.8 on a quiet 2-core machine.
4. Crypto++ against its own harness (`cryptest b2 SECONDS`, Debian's libcrypto++-utils),
   where both are here: pycipherbench-through-Crypto++ over Crypto++'s own MiB/s for
   AES/CTR-128, AES/GCM, AES/CBC-128, TEA/CTR, XTEA/CTR, DES, 3DES and ChaCha20/Poly1305,
   alternating (one `cryptest b2` run, then every case of ours in shuffled order, per
   round) in one sitting; the goal is 0.9-1.1x. cryptest times ProcessString over a
   2048-byte buffer in place, a stream: ours is stream scope at 2048 B, encryption.
   cryptest's clock is clock(), CPU time: the goal's ratio sets ours by this thread's CPU
   time (Measurement.cpu_fraction) beside it; the wall-time ratio is printed too.
   Our transformations have no DES/3DES CTR (OpenSSL has none): theirs DES/CTR and
   DES-EDE3/CTR are set beside ours DES/ECB and DESede/ECB (the block function is the
   cost; the label says so).

The backends come from pycipherbench.backends() and csrc/crypto/backends.def (the one list
of them): a new row is benchmarked without an edit here.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import _checkout  # noqa: F401,E402  (the checkout's build before an installed copy)
import pycipherbench as pcb  # noqa: E402
from pycipherbench.stats import median_ci, median_ci_level  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PAYLOAD = 16384
BAR_REF = 0.95
BAR_THREADS = 1.8
CRYPTOPP_GOAL = (0.9, 1.1)
CRYPTEST_BUF = 2048  # cryptest b2's buffer (bench1.cpp: ProcessString over 2048 bytes)
# (label, cryptest b2's row, ours: transformation, key bits)
CRYPTEST_CASES = (
    ("AES/CTR-128", "AES/CTR (128-bit key)", "AES/CTR/NoPadding", 128),
    ("AES/GCM", "AES/GCM", "AES/GCM/NoPadding", 128),
    ("AES/CBC-128", "AES/CBC (128-bit key)", "AES/CBC/NoPadding", 128),
    ("TEA/CTR", "TEA/CTR (128-bit key)", "TEA/CTR/NoPadding", 128),
    ("XTEA/CTR", "XTEA/CTR (128-bit key)", "XTEA/CTR/NoPadding", 128),
    ("DES (theirs CTR, ours ECB)", "DES/CTR (64-bit key)", "DES/ECB/NoPadding", 64),
    ("3DES (theirs CTR, ours ECB)", "DES-EDE3/CTR (192-bit key)", "DESede/ECB/NoPadding", 192),
    ("ChaCha20/Poly1305", "ChaCha20/Poly1305 (256-bit key)", "ChaCha20-Poly1305", 256),
)
_spec = importlib.util.spec_from_file_location(
    "backends_def", os.path.join(os.path.dirname(HERE), "csrc", "crypto", "backends_def.py"))
backends_def = importlib.util.module_from_spec(_spec)
sys.modules["backends_def"] = backends_def
_spec.loader.exec_module(backends_def)  # type: ignore[union-attr]
# backend_ref.c's libraries: the C rows probed by pkg-config (a C++ library has its own
# harness: section 4), each -DREF_<ID> with its pkg-config module or its -l flags.
REF_ROWS = {b.name: b for b in backends_def.table() if b.build == "probe"}


class Report:
    def __init__(self) -> None:
        self.bars: list[tuple[str, bool, str]] = []
        self.data: dict[str, object] = {}

    def bar(self, name: str, passed: bool, detail: str) -> None:
        self.bars.append((name, passed, detail))
        print(f"  [{'PASS' if passed else 'FAIL'}] {name}: {detail}")


def interval(xs: list[float], spec: str = ".3f") -> str:
    if len(xs) < 2:
        return f"{statistics.median(xs):{spec}}"
    lo, hi = median_ci(xs)
    return f"{statistics.median(xs):{spec}} [{lo:{spec}}, {hi:{spec}}]"


# ------------------------------------------------------------------ the references

def build_ref(libs: list[str], workdir: str) -> str | None:
    """bench/backend_ref.c built for the libraries this machine has; None if none."""
    cc = os.environ.get("CC", "cc")
    flags: list[str] = []
    for lib in libs:
        row = REF_ROWS[lib]
        r = subprocess.run(["pkg-config", "--cflags", "--libs", row.pkgconfig.split()[0]],
                           capture_output=True, text=True)
        fallback = [f"-l{x}" for x in row.libs.split()]
        flags += [f"-D{row.define.replace('PCB_HAVE_', 'REF_')}",
                  *(r.stdout.split() if r.returncode == 0 else fallback)]
    if not flags:
        return None
    exe = os.path.join(workdir, "backend_ref")
    cmd = [cc, "-O2", "-o", exe, os.path.join(HERE, "backend_ref.c"), *flags]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"# could not build backend_ref: {r.stderr.strip()[-400:]}")
        return None
    return exe


def ref_rate(exe: str, lib: str, mode: str, seconds: float) -> float:
    """MB/s of the library's own loop."""
    out = subprocess.run([exe, lib, mode, str(PAYLOAD), str(seconds)], capture_output=True,
                         text=True, check=True).stdout
    return float(out) / 1e6


def openssl_rate(exe: str, cipher: str, seconds: int) -> float:
    """MB/s of `openssl speed -elapsed -evp <cipher> -bytes 16384`."""
    cmd = [exe, "speed", "-elapsed", "-mr", "-seconds", str(max(1, int(seconds))), "-bytes",
           str(PAYLOAD), "-evp", cipher]
    p = subprocess.run(cmd, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("+F:"):
            return float(line.split(":")[-1]) / 1e6
    raise RuntimeError(f"no +F line from {' '.join(cmd)}: {(p.stderr or p.stdout)[-300:]}")


def ours(t: str, backend: str, scope: str, key_bits: int, min_time: float) -> float:
    m = pcb.measure(t, payload=PAYLOAD, scope=scope, key_bits=key_bits, backend=backend,
                    repeats=1, min_time=min_time, warmup=min(0.05, min_time))
    return m.mb_per_s


def bench_references(rep: Report, have: list[str], args: argparse.Namespace) -> None:
    print(f"\n== 1. AES-128-CTR and AES-GCM at {PAYLOAD} B: pycipherbench / the library's own "
          f"loop, {args.rounds} interleaved rounds (bar >= {BAR_REF}) ==")
    if shutil.which("nettle-benchmark"):
        out = subprocess.run(["nettle-benchmark", "aes128", "gcm_aes128"], capture_output=True,
                             text=True, timeout=120).stdout
        print("  nettle-benchmark (for information):")
        for line in out.splitlines():
            if "aes128" in line.lower() and ("ctr" in line.lower() or "gcm" in line.lower()):
                print(f"    {line.strip()}")
    else:
        print("  (nettle-benchmark is not installed: Debian's nettle-bin does not ship it; "
              "bench/backend_ref.c stands in for every library but OpenSSL)")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_ref([b for b in have if b in REF_ROWS], tmp)
        cases = []
        for b in have:
            if b == "openssl":
                cases += [(b, "AES/CTR/NoPadding", "stream", 128, ("openssl", "aes-128-ctr")),
                          (b, "AES/GCM/NoPadding", "rekey", 128, ("openssl", "aes-128-gcm"))]
            elif exe is not None and b == "sodium":
                cases.append((b, "AES/GCM/NoPadding", "message", 256, ("ref", "gcm")))
            elif exe is not None and b in REF_ROWS:
                cases += [(b, "AES/CTR/NoPadding", "stream", 128, ("ref", "ctr")),
                          (b, "AES/GCM/NoPadding", "message", 128, ("ref", "gcm"))]
        for b, t, scope, key_bits, (kind, what) in cases:
            ratios, theirs_l, ours_l = [], [], []
            for _ in range(args.rounds):
                theirs = (openssl_rate(args.openssl, what, args.seconds) if kind == "openssl"
                          else ref_rate(exe, b, what, args.seconds))  # type: ignore[arg-type]
                mine = ours(t, b, scope, key_bits, args.min_time)
                theirs_l.append(theirs)
                ours_l.append(mine)
                ratios.append(mine / theirs)
            label = f"{b} AES-{key_bits}-{t.split('/')[1]} ({scope} scope)"
            print(f"  {label}: ours {interval(ours_l, ',.0f')} MB/s, theirs "
                  f"{interval(theirs_l, ',.0f')} MB/s")
            rep.bar(f"{label} / {'openssl speed' if kind == 'openssl' else 'backend_ref'}",
                    statistics.median(ratios) >= BAR_REF, f"ratio {interval(ratios)}")
            rep.data[f"ref:{label}"] = {"ours": ours_l, "theirs": theirs_l, "ratios": ratios}


def bench_per_message(rep: Report, args: argparse.Namespace) -> None:
    print(f"\n== 2. Per-message cost at 16 B, every backend, {args.repeats} paired rounds ==")
    avail = pcb.backends()
    for t, key_bits in (("ChaCha20-Poly1305", 256), ("AES/GCM/NoPadding", 256)):
        names = [b["name"] for b in avail if b["available"] and t in b["transformations"]]
        r = pcb.sweep("cipher", transformation=t, payload=16, key_bits=key_bits, backend=names,
                      repeats=args.repeats, min_time=args.min_time, progress=False)
        print(f"  {t} (key {key_bits} bits, message scope):")
        for params, m in r.items():
            lo, hi = m.ci
            line = f"    {params['backend']:<16} {m.ns_per_op:8.1f} ns [{lo:.1f}, {hi:.1f}]"
            if params["backend"] != "openssl":
                q = r.ratio({"backend": params["backend"]}, {"backend": "openssl"})
                line += f"   x{q.estimate:.2f} of OpenSSL [{q.low:.2f}, {q.high:.2f}]"
            print(line)
            rep.data[f"16B:{t}:{params['backend']}"] = {"ns": m.ns_per_op, "ci": list(m.ci)}


def bench_threads(rep: Report, have: list[str], args: argparse.Namespace) -> None:
    print(f"\n== 3. threads=2 aggregate / threads=1, AES-128-CTR {PAYLOAD} B stream, "
          f"{args.repeats} paired rounds (bar >= {BAR_THREADS} on a quiet 2-core machine; "
          f"this one has {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}) ==")
    ctr = {b["name"] for b in pcb.backends() if "AES/CTR/NoPadding" in b["transformations"]}
    for b in have:
        if b not in ctr:
            continue
        r = pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=PAYLOAD, scope="stream",
                      backend=b, threads=[1, 2], repeats=args.repeats, min_time=args.min_time,
                      progress=False)
        q = r.ratio({"threads": 1}, {"threads": 2})  # time per op, 1 thread over 2: the speedup
        two = r.one(threads=2)
        rep.bar(f"{b} threads=2 speedup", q.estimate >= BAR_THREADS,
                f"x{q.estimate:.2f} [{q.low:.2f}, {q.high:.2f}] (threads=2: "
                f"{two.mb_per_s:,.0f} MB/s, spread {two.thread_spread or 1:.2f})")
        rep.data[f"threads:{b}"] = {"speedup": q.estimate, "ci": [q.low, q.high]}


def cryptest_b2(seconds: float) -> dict[str, float]:
    """MiB/s per row of one `cryptest b2 SECONDS` run (its HTML table)."""
    out = subprocess.run(["cryptest", "b2", str(seconds)], capture_output=True, text=True,
                         check=True, timeout=600).stdout
    rows = {}
    for m in re.finditer(r"<TR><TD>([^<]+)<TD>([^<]*)<TD>([0-9.]+)", out):
        rows[m.group(1).strip()] = float(m.group(3))
    return rows


def ours_mib(t: str, key_bits: int, min_time: float) -> tuple[float, float]:
    """MiB/s of pycipherbench through Crypto++ (stream scope, encryption, cryptest's buffer):
    by wall time, and by this thread's CPU time (the sample's wall time scaled by its CPU
    fraction), the clock cryptest reads (clock(): process CPU time)."""
    m = pcb.measure(t, payload=CRYPTEST_BUF, scope="stream", key_bits=key_bits,
                    backend="cryptopp", repeats=1, min_time=min_time, warmup=min(0.05, min_time))
    wall = CRYPTEST_BUF / (m.ns_per_op / 1e9) / 2**20
    frac = float(m.cpu_fraction[0]) if m.cpu_fraction is not None and len(m.cpu_fraction) else 1.0
    return wall, wall / max(frac, 1e-9)


def bench_cryptest(rep: Report, have: list[str], args: argparse.Namespace) -> None:
    lo_goal, hi_goal = CRYPTOPP_GOAL
    print(f"\n== 4. Crypto++: pycipherbench (backend='cryptopp', stream, {CRYPTEST_BUF} B) / "
          f"`cryptest b2 {args.cryptest_seconds}`, {args.rounds} alternating rounds "
          f"(goal {lo_goal}-{hi_goal}x) ==")
    if "cryptopp" not in have:
        print("  (backend cryptopp is not in this build: nothing to compare)")
        return
    if shutil.which("cryptest") is None:
        print("  (cryptest is not installed: Debian's libcrypto++-utils has it)")
        return
    rng = random.Random(1)
    theirs: dict[str, list[float]] = {c[0]: [] for c in CRYPTEST_CASES}
    mine: dict[str, list[float]] = {c[0]: [] for c in CRYPTEST_CASES}  # by CPU time
    wall: dict[str, list[float]] = {c[0]: [] for c in CRYPTEST_CASES}
    for _ in range(args.rounds):
        rows = cryptest_b2(args.cryptest_seconds)
        order = list(CRYPTEST_CASES)
        rng.shuffle(order)
        for label, row, t, key_bits in order:
            if row not in rows:
                continue
            theirs[label].append(rows[row])
            w, c = ours_mib(t, key_bits, args.min_time)
            wall[label].append(w)
            mine[label].append(c)
    n = min((len(v) for v in theirs.values() if v), default=0)
    if n:
        print(f"  figures: median [interval] over {n} rounds, ratios paired by round; the intervals "
              f"(order statistics) cover {median_ci_level(n):.0%}")
    print("  cryptest b2 times with clock(), the process's CPU time: ours is set beside it by this\n"
          "  thread's CPU time too (the goal's ratio); by wall time for information (below 1 when\n"
          "  other processes took the CPU during our samples)")
    print(f"  {'':<28} {'ours MiB/s (CPU time)':>22} {'cryptest MiB/s':>22}   {'ours/theirs':>22}"
          f"   {'by wall time':>22}")
    for label, row, t, _ in CRYPTEST_CASES:
        if not theirs[label]:
            print(f"  {label:<28} (no row '{row}' in this cryptest's output)")
            continue
        ratios = [a / b for a, b in zip(mine[label], theirs[label])]
        wall_ratios = [a / b for a, b in zip(wall[label], theirs[label])]
        q = statistics.median(ratios)
        print(f"  {label:<28} {interval(mine[label], ',.0f'):>22} "
              f"{interval(theirs[label], ',.0f'):>22}   {interval(ratios):>22}   "
              f"{interval(wall_ratios):>22}")
        if t.split("/")[1:2] == row.split(" ")[0].split("/")[1:2] or "/" not in t:
            rep.bar(f"cryptopp {label} / cryptest b2", lo_goal <= q <= hi_goal, f"ratio {q:.3f}")
        else:  # the modes differ (ECB here, CTR there): a figure, not the goal's
            print(f"    (modes differ: for information, no goal)")
        rep.data[f"cryptest:{label}"] = {"ours_cpu_mib": mine[label], "ours_wall_mib": wall[label],
                                         "theirs_mib": theirs[label], "ratios": ratios,
                                         "wall_ratios": wall_ratios, "ours": t, "theirs": row}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds vs the references")
    ap.add_argument("--repeats", type=int, default=10, help="rounds of the sweeps (sections 2, 3)")
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="seconds per reference run (openssl speed rounds it up to whole seconds)")
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per pycipherbench sample")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2 rounds, short samples")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a bar fails")
    ap.add_argument("--openssl", default="openssl", help="the openssl binary")
    ap.add_argument("--json", metavar="FILE", help="also write the raw figures")
    ap.add_argument("--cryptest-seconds", type=float, default=0.1,
                    help="cryptest b2's time per algorithm (it runs ~100 of them per round)")
    ap.add_argument("--only", choices=("references", "per-message", "threads", "cryptest"),
                    action="append", help="run only these sections (repeatable)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.repeats, args.seconds, args.min_time = 2, 3, 0.1, 0.01
        args.cryptest_seconds = min(args.cryptest_seconds, 0.02)
    have = [b["name"] for b in pcb.backends() if b["kind"] == "c" and b["available"]]
    print(f"# backends: {', '.join(have)}; "
          f"missing: {', '.join(b['name'] for b in pcb.backends() if not b['available']) or 'none'}")
    m = pcb.machine()
    print(f"# machine: {m.get('cpu_model')}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    rep = Report()
    sections = args.only or ["references", "per-message", "threads", "cryptest"]
    if "references" in sections:
        bench_references(rep, have, args)
    if "per-message" in sections:
        bench_per_message(rep, args)
    if "threads" in sections:
        bench_threads(rep, have, args)
    if "cryptest" in sections:
        bench_cryptest(rep, have, args)
    failed = [name for name, ok, _ in rep.bars if not ok]
    print(f"\n# {len(rep.bars) - len(failed)} of {len(rep.bars)} bars passed"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    if args.quick:
        print("# --quick: a smoke run; the figures are rough, the bars not meaningful")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": pcb.machine(), "bars": rep.bars, "data": rep.data}, f, indent=1)
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())

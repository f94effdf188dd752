#!/usr/bin/env python3
"""The hardware floor (issue 21): how far each library, and the lean store, sit from
pycipherbench's own AES-NI + PCLMULQDQ kernels (backend="floor").

Usage: python bench/bench_floor.py [--rounds N] [--quick] [--strict] [--min-time S]
                                   [--seconds S] [--openssl PATH] [--json FILE]
                                   [--sections 1,2,3]

A report, not a test: it prints each goal as MET / NOT MET with the paired ratio and its
95% interval, and exits 0 unless --strict and a goal is not met.

1. AES-256-GCM per message (message scope: key schedule kept, a fresh IV each message),
   every library of this build (C and Python) at 16 B, 64 B, 1 KiB, 16 KiB, as one sweep:
   every point sampled in every round in shuffled order, and each library's time over the
   floor's as the median of the per-round ratios (Results.ratio).
   Goal: OpenSSL's EVP path at 16 B >= 2x the floor's time.
2. The floor at 16 KiB against `openssl speed -evp aes-256-gcm -bytes 16384` (which re-keys
   every message, so the floor runs in rekey scope beside it; message scope printed too),
   interleaved: one `openssl speed` run and one floor sample per round.
   Goal: floor >= 0.90x openssl speed's rate (within 10%).
3. The lean store at its floor: lean get and put (1,000 keys, 32-character names and
   values; crypto_backend="auto", which is the floor on this CPU) over the sum of
   their parts, each measured in the same round (one store sweep):
     floor AES-SIV of the 32-byte name (encryption for get and put alike: a get seals
       the name to look it up), and floor AES-GCM of the 40-byte serialized value (open
       for get, seal for put) WITH the store's associated data (the 72-character Base64
       of the sealed name): the lean store's stage floors (store.bench stages
       "siv_floor" / "aead_floor": the floor kernels keyed with the store's keys, in a
       bare loop, right after the stage clocks);
     Base64 of that associated data: the lean store's base64 stage clock minus the plain
       store's (whose base64 stage does nothing: what is left is the two clock reads);
     lookup and the rest of a get/put without crypto (a plain store's get/put).
   Goal: lean get and put within 1.5x of that sum.
   (Before issue 21's second pass the parts came from a cipher sweep: floor GCM without
   the AAD, SIV decryption for get, Base64 with the clock reads in it.)
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import statistics
import subprocess
import sys

import _checkout  # noqa: E402  (the checkout's build before an installed copy)
import pycipherbench as pcb  # noqa: E402
from pycipherbench import store  # noqa: E402
from pycipherbench.stats import median_ci, paired_ratio  # noqa: E402

GCM = "AES/GCM/NoPadding"
SIZES = (16, 64, 1024, 16384)
GOAL_EVP_16 = 2.0
GOAL_SPEED = 0.90
GOAL_STORE = 1.5


class Report:
    def __init__(self) -> None:
        self.goals: list[tuple[str, bool, str]] = []
        self.data: dict[str, object] = {}

    def goal(self, name: str, met: bool, detail: str) -> None:
        self.goals.append((name, met, detail))
        print(f"  [{'MET' if met else 'NOT MET'}] {name}: {detail}")


def interval(xs: list[float], spec: str = ".1f") -> str:
    lo, hi = median_ci(xs)
    return f"{statistics.median(xs):{spec}} [{lo:{spec}}, {hi:{spec}}]"


def floor_backend() -> dict:
    b = next((b for b in pcb.backends() if b["name"] == "floor"), None)
    if b is None or not b["available"]:
        sys.exit(f"bench_floor: the floor is unavailable here: {b and b['missing']}")
    return b


# ------------------------------------------------------------------ 1. the libraries

def section_libraries(rep: Report, args: argparse.Namespace) -> None:
    names = [b["name"] for b in pcb.backends() if b["available"] and GCM in b["transformations"]]
    print(f"\n== 1. AES-256-GCM per message, every library over the floor, {args.rounds} "
          f"rounds (one sweep: {len(names)} libraries x {len(SIZES)} sizes, shuffled) ==")
    r = pcb.sweep("cipher", transformation=GCM, key_bits=256, payload=list(SIZES), backend=names,
                  scope="message", repeats=args.rounds, min_time=args.min_time, progress=False)
    print(f"  CPU: {r.machine.get('cpu_model')}")
    head = "".join(f"{f'{n} B':>26}" for n in SIZES)
    print(f"  {'library':<16}{head}")
    floor_ns = {n: r.one(backend="floor", payload=n).ns_per_op for n in SIZES}
    print(f"  {'floor (ns)':<16}" + "".join(f"{floor_ns[n]:>26.1f}" for n in SIZES))
    for b in names:
        if b == "floor":
            continue
        cells = []
        for n in SIZES:
            q = r.ratio({"backend": b, "payload": n}, {"backend": "floor", "payload": n})
            cells.append(f"x{q.estimate:.2f} [{q.low:.2f}, {q.high:.2f}]")
            rep.data[f"gcm:{b}:{n}"] = {"ratio": q.estimate, "ci": [q.low, q.high],
                                         "ns": r.one(backend=b, payload=n).ns_per_op,
                                         "floor_ns": floor_ns[n]}
        print(f"  {b:<16}" + "".join(f"{c:>26}" for c in cells))
    q = r.ratio({"backend": "openssl", "payload": 16}, {"backend": "floor", "payload": 16})
    rep.goal(f"OpenSSL EVP at 16 B >= {GOAL_EVP_16:.1f}x the floor", q.low >= GOAL_EVP_16
             if args.strict_intervals else q.estimate >= GOAL_EVP_16, str(q))
    for w in getattr(r, "warnings", None) or []:
        print(f"  warning: {w}")


# ------------------------------------------------------------ 2. against openssl speed

def openssl_rate(exe: str, seconds: int) -> float:
    """MB/s of `openssl speed -elapsed -mr -evp aes-256-gcm -bytes 16384`."""
    cmd = [exe, "speed", "-elapsed", "-mr", "-seconds", str(max(1, seconds)), "-bytes", "16384",
           "-evp", "aes-256-gcm"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60 + 10 * seconds)
    for line in p.stdout.splitlines():
        if line.startswith("+F:"):
            return float(line.split(":")[-1]) / 1e6
    raise RuntimeError(f"no +F line from {' '.join(cmd)}: {(p.stderr or p.stdout)[-300:]}")


def section_speed(rep: Report, args: argparse.Namespace) -> None:
    print(f"\n== 2. the floor at 16 KiB / `openssl speed -evp aes-256-gcm`, {args.rounds} "
          f"interleaved rounds (goal >= {GOAL_SPEED:.2f}) ==")
    if not shutil.which(args.openssl):
        print(f"  ({args.openssl} not found: skipped)")
        return
    theirs, rekey, message = [], [], []
    for _ in range(args.rounds):
        theirs.append(openssl_rate(args.openssl, args.seconds))
        for scope, out in (("rekey", rekey), ("message", message)):
            m = pcb.measure(GCM, payload=16384, key_bits=256, scope=scope, backend="floor",
                            repeats=1, min_time=args.min_time, warmup=min(0.05, args.min_time))
            out.append(m.mb_per_s)
    print(f"  openssl speed:         {interval(theirs, ',.0f')} MB/s")
    print(f"  floor (rekey scope):   {interval(rekey, ',.0f')} MB/s")
    print(f"  floor (message scope): {interval(message, ',.0f')} MB/s")
    q = paired_ratio(rekey, theirs)
    rep.goal(f"floor (rekey) at 16 KiB >= {GOAL_SPEED:.2f}x openssl speed", q.estimate >= GOAL_SPEED,
             str(q))
    qm = paired_ratio(message, theirs)
    print(f"  (message scope / openssl speed: {qm})")
    rep.data["speed16k"] = {"openssl": theirs, "floor_rekey": rekey, "floor_message": message}


# ---------------------------------------------------------------- 3. the lean store

def section_store(rep: Report, args: argparse.Namespace) -> None:
    print(f"\n== 3. lean get/put over the sum of their parts at the floor, {args.rounds} "
          f"rounds (each round: one store sweep with stages and their floors; goal <= "
          f"{GOAL_STORE:.1f}x) ==")
    kw = dict(n_keys=1000, key_len=32, value_len=32, min_time=args.min_time, progress=False)
    per = {op: {"lean": [], "siv": [], "gcm": [], "b64": [], "plain": [], "sum": []}
           for op in ("get", "put")}
    for _ in range(args.rounds):
        s = pcb.sweep("store", workload=["get", "put"], encrypted=[True, False], repeats=1,
                      stages=True, **kw)
        for op in ("get", "put"):
            lean = s.one(workload=op, encrypted=True)
            plain = s.one(workload=op, encrypted=False)
            ls, ps = lean.stages or {}, plain.stages or {}
            if "siv_floor" not in ls or "aead_floor" not in ls:
                sys.exit("bench_floor: the lean store's stages have no floor (is the floor "
                         "unavailable, or is this pycipherbench older than its stage floors?)")
            siv, gcm = float(ls["siv_floor"]), float(ls["aead_floor"])
            b64 = max(0.0, float(ls.get("base64", 0)) - float(ps.get("base64", 0)))
            d = per[op]
            d["lean"].append(lean.ns_per_op)
            d["siv"].append(siv)
            d["gcm"].append(gcm)
            d["b64"].append(b64)
            d["plain"].append(plain.ns_per_op)
            d["sum"].append(siv + gcm + b64 + plain.ns_per_op)
    for op, d in per.items():
        print(f"  {op}: lean {interval(d['lean'])} ns = sum of parts {interval(d['sum'])} ns")
        print(f"       parts: floor SIV {interval(d['siv'])}, floor GCM with AAD "
              f"{interval(d['gcm'])}, Base64 {interval(d['b64'])}, plain {op} "
              f"{interval(d['plain'])} ns")
        q = paired_ratio(d["lean"], d["sum"])
        rep.goal(f"lean {op} <= {GOAL_STORE:.1f}x the sum of its parts", q.estimate <= GOAL_STORE,
                 str(q))
        rep.data[f"store:{op}"] = d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9, help="rounds per section (default 9)")
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds per sample")
    ap.add_argument("--seconds", type=int, default=1, help="seconds per `openssl speed` run")
    ap.add_argument("--openssl", default="openssl", help="the openssl binary")
    ap.add_argument("--quick", action="store_true", help="5 rounds of 0.02 s samples")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a goal is not met")
    ap.add_argument("--strict-intervals", action="store_true",
                    help="a goal is met only when its whole interval is on the right side")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--sections", default="1,2,3", help="which sections to run (default 1,2,3)")
    args = ap.parse_args(argv)
    sections = set(args.sections.split(","))
    if sections - {"1", "2", "3"}:
        ap.error("--sections: a comma-separated subset of 1,2,3")
    if args.quick:
        args.rounds, args.min_time = 5, 0.02
    fb = floor_backend()
    print(f"bench_floor: {_checkout.which()}")
    print(f"bench_floor: floor = {fb['version']}; {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; store crypto_backend default: "
          f"{inspect.signature(store.open).parameters['crypto_backend'].default!r}")
    rep = Report()
    for key, section in (("1", section_libraries), ("2", section_speed), ("3", section_store)):
        if key in sections:
            section(rep, args)
    print("\n== summary ==")
    for name, met, detail in rep.goals:
        print(f"  [{'MET' if met else 'NOT MET'}] {name}: {detail}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"goals": [dict(name=n, met=m, detail=d) for n, m, d in rep.goals],
                       "data": rep.data}, f, indent=1)
    return 1 if args.strict and not all(m for _, m, _ in rep.goals) else 0


if __name__ == "__main__":
    sys.exit(main())

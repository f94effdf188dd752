#!/usr/bin/env python3
"""Ordering test of `Results.ratio`: pairs with a known order, measured in one sweep.

Usage: python bench/bench_order.py [--sweeps 5] [--pairs 30] [--quick] [--strict] [--json FILE]

Four pairs whose order is known (their true ratios measured on a 2-core Xeon VM):
  - AES-256 vs AES-128, CTR, 16 KiB (about 1.33: 14 vs 10 AES rounds)
  - GCM with a 16-byte vs a 12-byte IV, 64 B (about 1.07: GHASH of the IV)
  - TEA 32 vs 16 cycles, 1 KiB (about 1.9)
  - store get, names by AES-SIV vs plain names, 1000 entries (about 1.45)

Reference: for each pair, a careful ABBA run of `--pairs` alternating pairs of
samples, each from a new instance (kernels: new buffers and keys; stores: a new
store), each sample as long as the sweep's (min_time); the median of the per-pair ratios.
Then `--sweeps` ordinary sweeps (default rounds) per target, and for each pair
`Results.ratio`. Bars: the order right and the ratio within 10% of the reference
(20% for the store) in every sweep; the reference inside the reported 95%
interval in at least 4 of 5. A report, not a test: exit 0 unless --strict.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import _checkout  # noqa: F401,E402  (the checkout's build before an installed copy)
import pycipherbench as pcb  # noqa: E402
from pycipherbench import _core

CIPHER_PAIRS: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ("AES-256/AES-128 CTR 16 KiB", dict(transformation="AES/CTR/NoPadding", payload=16384),
     dict(key_bits=256), dict(key_bits=128)),
    ("GCM IV 16/12 B, 64 B", dict(transformation="AES/GCM/NoPadding", payload=64),
     dict(iv_len=16), dict(iv_len=12)),
    ("TEA 32/16 cycles 1 KiB", dict(transformation="TEA/ECB/NoPadding", payload=1024),
     dict(rounds=32), dict(rounds=16)),
]
STORE_PAIR = ("store get SIV on/off", dict(workload="get", n_keys=1000),
              dict(key_encryption="siv"), dict(key_encryption="none"))


def abba(make: Callable[[dict[str, Any]], Any], a: dict[str, Any], b: dict[str, Any], pairs: int,
         min_time: float) -> float:
    """Median ratio a/b of ns per op over `pairs` ABBA-ordered pairs of samples, each
    sample from a new instance, warmed up and calibrated."""
    ratios = []
    for i in range(pairs):
        got: dict[str, float] = {}
        for side in (("a", "b") if i % 2 == 0 else ("b", "a")):
            k = make(a if side == "a" else b)
            n = k.calibrate(min_time)
            got[side] = k.sample(n)[0] / n
            k.close()
        ratios.append(got["a"] / got["b"])
    return float(np.median(ratios))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweeps", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=30, help="ABBA pairs of the reference")
    ap.add_argument("--quick", action="store_true", help="2 sweeps, 10 reference pairs")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    if args.quick:
        args.sweeps, args.pairs = 2, 10
    min_time = 0.02
    t0 = time.monotonic()
    print(f"pycipherbench ordering: {args.sweeps} sweeps, reference {args.pairs} ABBA pairs")

    refs: dict[str, float] = {}
    for name, common, a, b in CIPHER_PAIRS:
        refs[name] = abba(lambda p, c=common: _core.Kernel(**c, **p), a, b, args.pairs,
                          min_time)
    tmp = tempfile.mkdtemp(prefix="pcb-order-")
    try:
        name, common, a, b = STORE_PAIR

        def make_store(p: dict[str, Any]) -> Any:
            return _core.StoreKernel(directory=tempfile.mkdtemp(dir=tmp), **common, **p)

        refs[name] = abba(make_store, a, b, args.pairs, min_time)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("reference ratios (ABBA): " + ", ".join(f"{k} {v:.3f}" for k, v in refs.items()))

    rows: dict[str, list[Any]] = {k: [] for k in refs}
    cipher_grid: dict[str, Any] = dict(min_time=min_time, progress=False)
    for i in range(args.sweeps):
        for name, common, a, b in CIPHER_PAIRS:
            r = pcb.sweep("cipher", **{k: [v] for k, v in common.items()},
                          **{k: [a[k], b[k]] for k in a}, **cipher_grid)
            rows[name].append(r.ratio(a, b))
        name, common, a, b = STORE_PAIR
        r = pcb.sweep("store", **{k: [v] for k, v in common.items()},
                      **{k: [a[k], b[k]] for k in a}, min_time=min_time, stages=False,
                      progress=False)
        rows[name].append(r.ratio(a, b))
        print(f"  sweep {i + 1}: " + ", ".join(f"{k} {v[-1]}" for k, v in rows.items()))

    ok_all = True
    report = {}
    print()
    for name, ratios in rows.items():
        ref = refs[name]
        tol = 0.2 if name.startswith("store") else 0.1
        order = sum(r.estimate > 1 for r in ratios)
        close = sum(abs(math.log(r.estimate / ref)) <= math.log(1 + tol) for r in ratios)
        covered = sum(r.low <= ref <= r.high for r in ratios)
        ok = order == len(ratios) and close == len(ratios) and covered >= math.ceil(0.8 * len(ratios))
        ok_all &= ok
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: reference {ref:.3f}; right order "
              f"{order}/{len(ratios)}, within {tol:.0%} {close}/{len(ratios)}, reference inside "
              f"the interval {covered}/{len(ratios)}")
        report[name] = {"reference": ref, "ratios": [[r.estimate, r.low, r.high] for r in ratios]}
    print(f"\n{'all bars passed' if ok_all else 'some bars FAILED'}; total time "
          f"{time.monotonic() - t0:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": pcb.machine(), "pairs": report}, f, indent=1)
    return 1 if args.strict and not ok_all else 0


if __name__ == "__main__":
    sys.exit(main())

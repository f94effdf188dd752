#!/usr/bin/env python3
"""Slicing a long sample (Ctrl-C checks between ~0.1 s slices) must not change what it times.

Usage: python bench/bench_slices.py [--rounds 15] [--strict]

For a few kernels, takes interleaved rounds of two samples of one kernel instance: a
sample of N operations that runs as one slice (~20 ms) and a sample of 30 N operations
that runs as several slices (~0.6 s; `Kernel.last_call` says how many). The clocks run
inside the slices only, so per operation both should cost the same: the paired ratio
(sliced / one slice, ns per operation, median of the per-round ratios with its 95%
interval) is printed for each kernel, side by side in one run. The bar: every ratio
within 2% of 1, or its interval containing 1. A report, not a test: exit 0 unless
--strict and the bar fails.
"""

from __future__ import annotations

import argparse
import random
import sys

import _checkout  # noqa: F401,E402  (the checkout's build before an installed copy)
import pycipherbench as pcb  # noqa: E402
from pycipherbench import _core
from pycipherbench.stats import paired_ratio

KERNELS = [("AES/CTR/NoPadding", 16384, "stream"), ("AES/GCM/NoPadding", 64, "message"),
           ("TEA/ECB/NoPadding", 4096, "message")]
BAR = 0.02


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15, help="rounds per kernel (default 15)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if the bar fails")
    args = ap.parse_args(argv)
    ok = True
    print(f"# {pcb.machine()['cpu_model']}; {args.rounds} rounds per kernel, order shuffled per round")
    for name, payload, scope in KERNELS:
        k = _core.Kernel(name, payload=payload, scope=scope)
        n = k.calibrate(0.02)
        one, sliced, slices = [], [], 0
        for _ in range(args.rounds):
            order = [1, 30]
            random.shuffle(order)
            for mult in order:
                ns = k.sample(n * mult)[0] / (n * mult)
                (one if mult == 1 else sliced).append(ns)
                if mult > 1:
                    slices = k.last_call[1]
        k.close()
        r = paired_ratio(sliced, one)
        good = abs(r.estimate - 1) <= BAR or r.low <= 1 <= r.high
        ok &= good
        print(f"  {'PASS' if good else 'FAIL'}  {name} {payload} B {scope}: sliced ({slices} slices) / "
              f"one slice = {r}")
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())

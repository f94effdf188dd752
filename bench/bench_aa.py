#!/usr/bin/env python3
"""A/A test of `Results.compare`: the same sweep, run again, must not look different.

Usage: python bench/bench_aa.py [--runs 8] [--quick] [--strict] [--json FILE]

Runs one small cipher sweep `--runs` times back to back (default rounds), then
compares every pair of runs point by point with `Results.compare` (alpha 0.05).
Nothing changed between the runs, so a "faster"/"slower" verdict is a false
positive: the bar is at most 1 in 10 point comparisons. Every run's warnings
are counted too. A report, not a test: exit 0 unless --strict and the bar fails.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time

import _checkout  # noqa: F401,E402  (the checkout's build before an installed copy)
import pycipherbench as pcb  # noqa: E402

BAR = 0.10
GRID = dict(
    transformation=["AES/GCM/NoPadding", "AES/CTR/NoPadding", "ChaCha20-Poly1305",
                    "TEA/ECB/NoPadding"],
    payload=[64, 16384],
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=8, help="sweeps to run (default 8)")
    ap.add_argument("--quick", action="store_true", help="shorter samples (min_time 5 ms)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if the bar fails")
    ap.add_argument("--json", metavar="FILE", help="write the verdicts as JSON")
    args = ap.parse_args(argv)
    min_time = 0.005 if args.quick else 0.02
    t0 = time.monotonic()
    print(f"pycipherbench A/A: {args.runs} identical sweeps of {GRID}, min_time {min_time} s, "
          f"default rounds; loadavg {os.getloadavg()}")
    runs = []
    for i in range(args.runs):
        r = pcb.sweep("cipher", **GRID, min_time=min_time, progress=False)
        warned = sum(bool(m.warnings) for m in r)
        print(f"  run {i + 1}: {len(r)} points x {r[0].n_rounds} rounds, {warned} points with warnings")
        runs.append(r)
    verdicts = []
    for a, b in itertools.combinations(range(len(runs)), 2):
        for row in runs[b].compare(runs[a]):
            verdicts.append({"runs": [a, b], "params": row.params, "verdict": row.verdict,
                             "speedup": row.speedup, "p": row.p_value})
    significant = [v for v in verdicts if v["verdict"] in ("faster", "slower")]
    rate = len(significant) / max(1, len(verdicts))
    print(f"\n{len(verdicts)} point comparisons between {len(runs)} identical runs "
          f"({len(runs) * (len(runs) - 1) // 2} pairs of runs):")
    by_verdict: dict[str, int] = {}
    for v in verdicts:
        by_verdict[v["verdict"]] = by_verdict.get(v["verdict"], 0) + 1
    for k, n in sorted(by_verdict.items()):
        print(f"  {k}: {n}")
    ok = rate <= BAR
    print(f"\n  {'PASS' if ok else 'FAIL'}  A/A 'significant' rate {rate:.3f} "
          f"({len(significant)}/{len(verdicts)})   bar <= {BAR:.2f}; total time "
          f"{time.monotonic() - t0:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": pcb.machine(), "verdicts": verdicts, "rate": rate}, f, indent=1)
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Do intervals that miss come with a warning? Calls of measure() against each other.

Usage: python bench/bench_coverage.py [--calls 9] [--quick] [--strict] [--json FILE]

For a few kernels and a store workload, `--calls` identical calls. For each
call, the median of the other calls is the "truth" it is checked against: a
call whose 95% interval misses it either had bad luck (about 1 in 20) or ran
in a slow period its interval does not show; such a call must carry a warning.
Bar: at least 3 of 4 calls whose interval misses carry a warning. Also shown:
how often intervals miss at all. A report, not a test: exit 0 unless --strict.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import _checkout  # noqa: F401,E402  (the checkout's build before an installed copy)
import pycipherbench as pcb  # noqa: E402
from pycipherbench import store

CASES: list[tuple[str, Callable[[], Any]]] = [
    ("GCM 16 B", lambda: pcb.measure("AES/GCM/NoPadding", payload=16, min_time=0.02)),
    ("GCM 1 MiB", lambda: pcb.measure("AES/GCM/NoPadding", payload=1 << 20, min_time=0.02)),
    ("TEA 4 KiB", lambda: pcb.measure("TEA/ECB/NoPadding", payload=4096, min_time=0.02)),
    ("store get, 1000 keys", lambda: store.bench("get", n_keys=1000, min_time=0.02, stages=False)),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=9)
    ap.add_argument("--quick", action="store_true", help="5 calls per case")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    calls = 5 if args.quick else args.calls
    t0 = time.monotonic()
    misses = warned_misses = total = 0
    report: dict[str, Any] = {}
    for name, run in CASES:
        ms = [run() for _ in range(calls)]
        medians = np.array([m.median for m in ms])
        rows = []
        for i, m in enumerate(ms):
            truth = float(np.median(np.delete(medians, i)))
            low, high = m.ci
            miss = not (low <= truth <= high)
            rows.append({"median": m.median, "ci": [low, high], "truth": truth, "miss": miss,
                         "warnings": list(m.warnings)})
            total += 1
            misses += miss
            warned_misses += miss and bool(m.warnings)
        n_miss = sum(r["miss"] for r in rows)
        n_warn = sum(bool(r["warnings"]) for r in rows)
        spread = medians.max() / medians.min()
        print(f"  {name}: medians {medians.min():,.0f}..{medians.max():,.0f} ns (max/min "
              f"{spread:.2f}); {n_miss}/{calls} intervals miss the others' median; "
              f"{n_warn}/{calls} calls warned")
        report[name] = rows
    share = warned_misses / misses if misses else 1.0
    ok = share >= 0.75
    print(f"\n  {'PASS' if ok else 'FAIL'}  calls whose interval missed: {misses}/{total}; of those "
          f"{warned_misses} carried a warning ({share:.0%})   bar >= 75%; total time "
          f"{time.monotonic() - t0:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": pcb.machine(), "cases": report}, f, indent=1)
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())

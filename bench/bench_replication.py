#!/usr/bin/env python3
"""Coverage measured, not asserted: do the intervals hold in the next process? (issue 27)

Usage: python bench/bench_replication.py [--runs 10] [--busy] [--quick] [--json FILE]

Starts ``--runs`` fresh Python processes one after another. Each computes, with the
defaults (rounds spread over fresh worker processes), the median and interval of AES-GCM
16 B, AES-CTR 16 KiB, TEA 4 KiB and store get at 1,000 keys, and the paired ratios
AES-256/AES-128 CTR, TEA 32/16 cycles and store get SIV on/off. For each quantity it
counts how many of the runs' intervals cover the median of the other runs' estimates
(goal: at least 9 of 10), and gives the A/A false-positive rate of ``compare`` between
separate runs (every pair of runs, the four medians; goal: at most 5%).

Beside it, from the same sitting, the previous version's intervals: every quantity
measured again in the same run with ``processes=1`` (all rounds in the run's own process),
its median interval from order statistics over the rounds, its ratio interval widened by
the previous version's run-to-run constant (1.5%, added in quadrature; kept here only to
show what it gave), and compare over rounds as that version did.

``--busy`` runs one busy loop (a Python ``while True``) beside the whole experiment.
A report, not a test: prints the table and exits 0.

The history of this machine's speed (``pycipherbench._levels``) is what the intervals of
the medians take the clock's drift between runs from. Run with
``PYCIPHERBENCH_LEVELS=/tmp/new-file`` to start as a new user does, with none (the first
runs' first intervals then say the level is not yet known); the runs' own ``measure``,
``sweep`` and ``store.bench`` calls fill it as they go, 14 lines per run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import time
from typing import Any

import _checkout  # noqa: F401,E402  (the checkout's build before an installed copy)
import numpy as np  # noqa: E402

import pycipherbench as pcb  # noqa: E402
from pycipherbench import stats  # noqa: E402

#: The previous version's constant (stats.RUN_TO_RUN, removed by issue 27), for the old column.
OLD_CONSTANT = 0.015

MEDIANS = {
    "AES-GCM 16 B": ("measure", dict(transformation="AES/GCM/NoPadding", payload=16)),
    "AES-CTR 16 KiB": ("measure", dict(transformation="AES/CTR/NoPadding", payload=16384)),
    "TEA 4 KiB": ("measure", dict(transformation="TEA/ECB/NoPadding", payload=4096)),
    "store get, 1000 keys": ("bench", dict(workload="get", n_keys=1000)),
}
RATIOS = {
    "AES-256/128 CTR 16 KiB": ("cipher", dict(transformation="AES/CTR/NoPadding", payload=16384,
                                              key_bits=[128, 256]),
                               {"key_bits": 256}, {"key_bits": 128}),
    "TEA 32/16 cycles 4 KiB": ("cipher", dict(transformation="TEA/ECB/NoPadding", payload=4096,
                                              rounds=[16, 32]),
                               {"rounds": 32}, {"rounds": 16}),
    "store get SIV on/off": ("store", dict(workload="get", n_keys=1000,
                                           key_encryption=["siv", "none"]),
                             {"key_encryption": "siv"}, {"key_encryption": "none"}),
}


def _old_ratio(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """The previous version's paired-ratio interval: order statistics over the rounds'
    log ratios, OLD_CONSTANT added in quadrature."""
    logs = np.log(num) - np.log(den)
    mid = float(np.median(logs))
    lo, hi = stats.median_ci(logs)
    extra = math.log1p(OLD_CONSTANT)
    return math.exp(mid - math.hypot(mid - lo, extra)), math.exp(mid + math.hypot(hi - mid, extra))


def one_run(quick: bool) -> dict[str, Any]:
    """What one fresh process measures: each quantity with the defaults and with
    processes=1 (the previous version's way)."""
    timing: dict[str, Any] = dict(min_time=0.005, warmup=0.0) if quick else {}
    out: dict[str, Any] = {}
    for processes, tag in ((None, "new"), (1, "old")):
        for name, (kind, kw) in MEDIANS.items():
            if kind == "measure":
                m = pcb.measure(processes=processes, **kw, **timing)
            else:
                m = pcb.store.bench(processes=processes, stages=False, **kw, **timing)
            lo, hi = m.ci
            out[f"{tag}:{name}"] = dict(est=m.median, low=lo, high=hi, words=m.ci_words,
                                        samples=m.samples.tolist(),
                                        canary=None if m.canary is None else m.canary.tolist(),
                                        process=None if m.process is None else m.process.tolist())
        for name, (target, grid, num, den) in RATIOS.items():
            r = pcb.sweep(target, progress=False, processes=processes, **grid, **timing)
            ratio = r.ratio(num, den)
            if tag == "new":
                lo, hi = ratio.low, ratio.high
            else:
                a, b = r.one(**num), r.one(**den)
                lo, hi = _old_ratio(a.samples, b.samples)
            out[f"{tag}:{name}"] = dict(est=ratio.estimate, low=lo, high=hi, words=ratio.words)
    return out


def coverage(runs: list[dict[str, Any]], key: str) -> tuple[int, float]:
    """How many runs' intervals cover the median of the other runs' estimates; the
    median relative half-width."""
    est = np.array([r[key]["est"] for r in runs])
    hits, halves = 0, []
    for i, r in enumerate(runs):
        others = float(np.median(np.delete(est, i)))
        hits += r[key]["low"] <= others <= r[key]["high"]
        halves.append((r[key]["high"] - r[key]["low"]) / (r[key]["high"] + r[key]["low"]))
    return hits, float(np.median(halves))


def false_positives(runs: list[dict[str, Any]], tag: str) -> tuple[int, int]:
    """A/A: compare between every pair of separate runs, the median quantities."""
    called = total = 0
    for name in MEDIANS:
        for a, b in itertools.combinations(runs, 2):
            x, y = a[f"{tag}:{name}"], b[f"{tag}:{name}"]
            c = stats.compare_rounds(x["samples"], y["samples"], process_a=x["process"],
                                     process_b=y["process"], canary_a=x.get("canary"),
                                     canary_b=y.get("canary"))
            called += bool(c.significant)
            total += 1
    return called, total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="fresh processes (default 10)")
    ap.add_argument("--busy", action="store_true", help="one busy loop beside the experiment")
    ap.add_argument("--quick", action="store_true", help="5 ms samples (a smoke run)")
    ap.add_argument("--json", metavar="FILE", help="write every run's figures as JSON")
    ap.add_argument("--table", metavar="FILE", help="print the table of a --json file again "
                    "(compare's verdicts recomputed by this version)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    runs: list[dict[str, Any]]
    if args.child:
        print(json.dumps(one_run(args.quick)))
        return 0
    if args.table:
        with open(args.table) as f:
            runs = json.load(f)
        print(f"# bench_replication: the {len(runs)} runs of {args.table}")
        table(runs)
        return 0
    busy = (subprocess.Popen([sys.executable, "-c", "while True: pass"])
            if args.busy else None)
    runs = []
    t0 = time.monotonic()
    load0 = os.getloadavg()[0]
    try:
        for i in range(args.runs):
            cmd = [sys.executable, os.path.abspath(__file__), "--child",
                   *(["--quick"] if args.quick else [])]
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if r.returncode:
                sys.exit(f"run {i + 1} failed:\n{r.stderr}")
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
            print(f"# run {i + 1}/{args.runs} done ({time.monotonic() - t0:.0f} s)",
                  file=sys.stderr, flush=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    load1 = os.getloadavg()[0]
    fp = pcb.machine()
    print(f"# bench_replication: {args.runs} fresh processes, "
          f"{'one busy loop beside' if args.busy else 'no added load'}; load average "
          f"{load0:.2f} -> {load1:.2f} on {os.cpu_count()} cores; {time.monotonic() - t0:.0f} s")
    print(f"# {fp['cpu_model']}; {fp['openssl_version']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f)
    table(runs)
    return 0


def table(runs: list[dict[str, Any]]) -> None:
    """Coverage and half-widths per quantity, new beside old; the A/A rates."""
    new_words = runs[0][f"new:{next(iter(MEDIANS))}"]["words"]
    print(f"# new: defaults ({new_words}); old: processes=1, order statistics over the rounds"
          f" (ratios: + {OLD_CONSTANT:.1%} in quadrature, the removed constant)")
    rows = []
    for name in [*MEDIANS, *RATIOS]:
        hn, wn = coverage(runs, f"new:{name}")
        ho, wo = coverage(runs, f"old:{name}")
        rows.append([name, f"{hn}/{len(runs)}", f"+-{wn:.1%}", f"{ho}/{len(runs)}", f"+-{wo:.1%}"])
    head = ["quantity", "new covers", "new half-width", "old covers", "old half-width"]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in [head, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    for tag, what in (("new", "Welch over processes, on the times and in canary units"),
                      ("old", "over rounds, in-process")):
        called, total = false_positives(runs, tag)
        print(f"# A/A compare between separate runs, {tag} ({what}): {called} of {total} "
              f"called different ({called / total:.1%}; goal <= 5%)")


if __name__ == "__main__":
    sys.exit(main())

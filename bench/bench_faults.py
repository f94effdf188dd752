#!/usr/bin/env python3
"""The full fault table (issue 25; SQLite's ioerr tests), a CI stage of its own.

Usage: python bench/bench_faults.py [--op NAME ...] [--mode NAME ...] [--dir DIR]
                                    [--allow-known] [--json FILE] [-v]

Every operation of tests/fault_table.py (create at open, open, commit, apply + flush,
clear + put + apply after another writer's commit, a commit merging another writer's,
full/lazy/passphrase/master-key rotation, close with pending changes, the MMKV model's
open and put + flush),
in every store mode it applies to (entries, layout="file", cache, faithful, plain; a
passphrase store; the MMKV model), every system call it makes, every call of that name
(nth = 1, 2, ... until nothing fires), every errno mode (EIO, ENOSPC, EINTR once, a short
write, EIO from then on): the checks of fault_table.run_case. Prints the table (operation x
failure points x errno modes, mismatches) and every mismatch; exits 1 on a mismatch
(``--allow-known``: only on one that tests/test_store_faults.py's KNOWN does not list).
About 10 s on a tmpfs (the default: /dev/shm where there is one), minutes on a disk.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

import _checkout  # noqa: F401  (the checkout's build first on sys.path)

sys.path.insert(0, os.path.join(_checkout.ROOT, "tests"))

import fault_table as ft  # noqa: E402
from test_store_faults import KNOWN, known  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", action="append", choices=sorted(ft.OPS), help="only these operations")
    ap.add_argument("--mode", action="append", help="only these store modes")
    ap.add_argument("--dir", help="where cases run (default: /dev/shm, else the temp dir)")
    ap.add_argument("--allow-known", action="store_true",
                    help="exit 0 when every mismatch is a known bug (KNOWN)")
    ap.add_argument("--json", help="write every case's result here")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per (op, call, errno)")
    a = ap.parse_args()
    print(f"# fault table: {_checkout.which()}")
    root = a.dir or ft.base_dir()
    print(f"# cases run in {root}; errno modes: {', '.join(ft.ERRNOS)} "
          f"(EINTR not for {', '.join(ft.NO_EINTR)}; short for write/pwrite; "
          f"EIO-persist for {', '.join(ft.PERSIST_CALLS)})")
    t0 = time.monotonic()
    results = ft.table(ops=a.op, modes=a.mode, root=root,
                       progress=print if a.verbose else None)
    dt = time.monotonic() - t0

    rows: dict[tuple[str, str], dict] = {}
    for r in results:
        row = rows.setdefault((r.op, r.mode), {"calls": collections.Counter(), "cases": 0,
                                               "errnos": collections.Counter(),
                                               "bad": collections.Counter(), "known": 0})
        row["cases"] += 1
        row["errnos"][r.errno] += 1
        if r.fired:
            row["calls"][r.call] = max(row["calls"][r.call], r.nth)
        if r.problems:
            row["bad"][r.errno] += 1
            row["known"] += known(r) is not None
    print()
    print(f"{'operation [mode]':34} {'calls':>5} {'points':>6} "
          + " ".join(f"{e:>11}" for e in ft.ERRNOS) + f" {'mismatch':>8} {'known':>5}")
    tot = collections.Counter()
    for (op, mode), row in rows.items():
        points = sum(row["calls"].values())
        cells = []
        for e in ft.ERRNOS:
            n, b = row["errnos"][e], row["bad"][e]
            cells.append(f"{(f'{n}' + (f' ({b} bad)' if b else '')) if n else '-':>11}")
        bad = sum(row["bad"].values())
        print(f"{op + ' [' + mode + ']':34} {len(row['calls']):>5} {points:>6} " + " ".join(cells)
              + f" {bad:>8} {row['known']:>5}")
        tot["points"] += points
        tot["cases"] += row["cases"]
        tot["bad"] += bad
        tot["known"] += row["known"]
    print(f"{'total':34} {'':>5} {tot['points']:>6} {tot['cases']:>11} cases"
          f"{'':>{12 * (len(ft.ERRNOS) - 1) - 6}} {tot['bad']:>8} {tot['known']:>5}")
    print(f"# {tot['cases']} cases over {tot['points']} failure points in {dt:.1f} s; "
          f"{tot['bad']} mismatches, {tot['known']} of them known bugs")
    bad = [r for r in results if r.problems]
    if bad:
        print("\n# mismatches (known bug in brackets):")
        for r in bad:
            k = known(r)
            print(f"  [{k or 'NEW'}] {r.describe()}")
        print("\n# known bugs:")
        for name, (_, reason) in KNOWN.items():
            print(f"  {name}: {reason}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([r.__dict__ for r in results], f, indent=1)
    new = [r for r in bad if known(r) is None]
    if new or (bad and not a.allow_known):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

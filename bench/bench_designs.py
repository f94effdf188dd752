#!/usr/bin/env python3
"""Store designs on the start-up path (issue 19), side by side on this machine.

Usage: python bench/bench_designs.py [--quick] [--budget MS] [--json FILE] [--from PREFS.xml]

With --from PREFS.xml (issue 29) it replays that SharedPreferences file instead
(pycipherbench.replay: first launch with the migration, cold and warm start, one apply,
the footprint, per design), then times ESP's migration of it against a bare loop written
here (open the plain file, read all, write all into a new store, commit, remove the plain
file: the store API only, no pycipherbench.replay code), alternating, paired; and the C
migration workloads beside rotate at the file's entry count.

1. The start-up table: every design of pycipherbench.designs (plain SharedPreferences,
   ESP, ESP + cache, tiered, tiered + lazy, SQLCipher 4, plain SQLite) opening its store
   cold (first launch) and warm (the article's 100 random 32-character pairs) and reading
   N = 20 and 100 items, then warm at 10^3 and 10^5 entries; all in the same rounds, paired
   ratios to plain SharedPreferences with 95% intervals.
2. Per-op workloads of each engine (ESP, SQLCipher 4, our MMKV design model; get, put,
   commit of 10, open_warm, open_cold), encrypted and plain, with
   paired ratios to ESP lean, all at the Python call (SQLCipher has only a Python binding).
3. A reference: SQLCipher timed by a bare loop of sqlcipher3 calls written here (no
   pycipherbench code), alternating with pycipherbench's figure for the same operation,
   so that the engine's overhead over the library shows.

Every figure is timed at the Python call (see pycipherbench.designs.LEVEL_NOTE).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np  # noqa: E402

import _checkout  # noqa: F401,E402  (the checkout's build before an installed copy)

import pycipherbench as pcb  # noqa: E402
from pycipherbench import designs, engines  # noqa: E402
from pycipherbench.stats import paired_ratio  # noqa: E402


def startup(quick: bool, budget: float) -> list:
    repeats = 6 if quick else 10
    cases = [{"cold": c, "n_reads": n} for n in (20, 100) for c in (True, False)]
    # a start-up path that reads no secret: where lazy opening pays off
    cases += [{"cold": c, "n_reads": 20, "sensitive_reads": 0.0} for c in (True, False)]
    recs, info = designs.run(cases=cases, repeats=repeats, min_time=0.0 if quick else 0.02,
                             progress=False)
    print(f"== 1. Start-up, {info.rounds} rounds (every design and case interleaved) ==")
    print(designs.format_designs(recs, budget_ms=budget))
    for s in designs.budget_sentences(recs, budget):
        print("  " + s)
    sizes = (1000,) if quick else (1000, 100_000)
    big = [{"cold": False, "n_reads": 20, "n_entries": n} for n in sizes]
    recs2, info2 = designs.run(cases=big, repeats=repeats, min_time=0.0)
    print(f"\n== 1b. Start-up at {', '.join(f'{n:,}' for n in sizes)} entries, "
          f"{info2.rounds} rounds ==")
    print(designs.format_designs(recs2, budget_ms=budget))
    for s in designs.budget_sentences(recs2, budget):
        print("  " + s)
    return recs + recs2


def per_op(quick: bool) -> dict:
    repeats = 6 if quick else 10
    r = pcb.sweep("store", workload=["get", "put", "commit", "open_warm", "open_cold"],
                  engine=["esp", "sqlcipher", "mmkv"], encrypted=[True, False], level="python",
                  n_keys=1000, batch=10, repeats=repeats, min_time=0.02 if quick else 0.05)
    print(f"\n== 2. Per operation, 1,000 entries, at the Python call, {repeats} rounds ==")
    print(r.table())
    out = {}
    print("  ratio to ESP lean (same workload, paired by round):")
    for w in ("get", "put", "commit", "open_warm", "open_cold"):
        for eng, enc, label in (("sqlcipher", True, "SQLCipher 4"), ("sqlcipher", False, "SQLite"),
                                ("mmkv", True, "MMKV model (AES-CFB)"),
                                ("mmkv", False, "MMKV model (plain)"),
                                ("esp", False, "plain SharedPreferences")):
            num = {"workload": w, "engine": eng, "encrypted": enc}
            if eng == "esp":
                num["level"] = "python"
            ratio = r.ratio(num, {"workload": w, "engine": "esp", "encrypted": True,
                                  "level": "python"})
            out[f"{w}/{label}"] = [ratio.estimate, ratio.low, ratio.high]
            print(f"    {w:10s} {label:24s} {ratio}")
    print("  (the MMKV rows are our C MODEL of MMKV's design, not Tencent's library; its "
          "encryption is unauthenticated, and its commit is an msync)")
    print("  (SQLCipher's put is one INSERT in an open transaction: its page encryption "
          "happens at COMMIT, so compare 'commit' for the full write cost)")
    return out


def reference(quick: bool) -> dict:
    """Bare sqlcipher3 loops against pycipherbench's engine, alternating, paired."""
    import sqlcipher3

    rounds = 6 if quick else 10
    d = tempfile.mkdtemp(prefix="pcb-ref-")
    try:
        h = engines.open_engine("sqlcipher", d)
        names = [secrets.token_hex(16) for _ in range(1000)]
        engines.fill(h, ((n, secrets.token_hex(16)) for n in names))
        h.close()
        passphrase = open(os.path.join(d, "prefs.db.key")).read()
        path = os.path.join(d, "prefs.db")
        n_gets = 2000

        def bare_open() -> int:
            t = time.perf_counter_ns()
            c = sqlcipher3.connect(path)
            c.execute(f"PRAGMA key = '{passphrase}'")
            c.execute("SELECT count(*) FROM sqlite_master").fetchone()
            t = time.perf_counter_ns() - t
            c.close()
            return t

        def ours_open() -> int:
            t = time.perf_counter_ns()
            h = engines.open_engine("sqlcipher", d)
            t = time.perf_counter_ns() - t
            h.close()
            return t

        def bare_get() -> float:
            c = sqlcipher3.connect(path)
            c.execute(f"PRAGMA key = '{passphrase}'")
            c.execute("SELECT count(*) FROM sqlite_master").fetchone()
            t = time.perf_counter_ns()
            for i in range(n_gets):
                c.execute("SELECT value FROM prefs WHERE name = ?", (names[i % 1000],)).fetchone()
            t = time.perf_counter_ns() - t
            c.close()
            return t / n_gets

        def ours_get() -> float:
            h = engines.open_engine("sqlcipher", d)
            t = time.perf_counter_ns()
            for i in range(n_gets):
                h.get(names[i % 1000])
            t = time.perf_counter_ns() - t
            h.close()
            return t / n_gets

        res = {}
        print(f"\n== 3. Reference: bare sqlcipher3 loops vs pycipherbench's SQLCipher engine, "
              f"{rounds} alternating rounds ==")
        for name, ours, bare in (("open (KDF)", ours_open, bare_open), ("get", ours_get, bare_get)):
            o, b = [], []
            for i in range(rounds):
                if i % 2:
                    b.append(bare()); o.append(ours())
                else:
                    o.append(ours()); b.append(bare())
            r = paired_ratio(o, b)
            res[name] = dict(ours=statistics.median(o), bare=statistics.median(b),
                             ratio=[r.estimate, r.low, r.high])
            print(f"  {name:12s} ours {statistics.median(o) / 1e3:10.1f} us   bare "
                  f"{statistics.median(b) / 1e3:10.1f} us   ours/bare {r}")
        print("  (ours/bare above 1 on get is the ESP value decoding and the method call)")
        return res
    finally:
        shutil.rmtree(d, ignore_errors=True)


def replay_file(path: str, quick: bool, budget: float) -> dict:
    from pycipherbench import replay, store

    repeats = 3 if quick else 10
    res = replay.replay(path, repeats=repeats, min_time=0.0 if quick else 0.02)
    print(f"== Replay of {path}, {res.run.rounds} rounds ==")
    print(res.format(budget))

    # the migration against a bare read-all + write-all loop, alternating, paired
    w = res.workload
    d = tempfile.mkdtemp(prefix="pcb-replay-ref-")
    try:
        def ours() -> int:
            where = tempfile.mkdtemp(dir=d)
            replay._write_old(w, where, "esp")
            t = time.perf_counter_ns()
            replay.migrate("esp", where, w).close()
            t = time.perf_counter_ns() - t
            shutil.rmtree(where)
            return t

        def bare() -> int:
            where = tempfile.mkdtemp(dir=d)
            replay._write_old(w, where, "esp")
            old = os.path.join(where, "old_prefs.xml")
            t = time.perf_counter_ns()
            with store.open(old, encrypted=False) as o:
                items = o.all()
            with store.open(os.path.join(where, "prefs.xml"),
                            master_key_file=os.path.join(where, "prefs.key")) as s, s.edit() as e:
                for k, v in items.items():
                    if isinstance(v, bool):
                        e.put_bool(k, v)
                    elif isinstance(v, str):
                        e.put_string(k, v)
                    elif isinstance(v, int):
                        (e.put_long if w.kinds[k] == "long" else e.put_int)(k, v)
                    elif isinstance(v, float):
                        e.put_float(k, v)
                    else:
                        e.put_string_set(k, v)
            os.remove(old)
            t = time.perf_counter_ns() - t
            shutil.rmtree(where)
            return t

        o, b = [], []
        for i in range(2 * repeats):
            if i % 2:
                b.append(bare()); o.append(ours())
            else:
                o.append(ours()); b.append(bare())
        r = paired_ratio(o, b)
        print(f"\n== Reference: ESP's migration of this file, replay's vs a bare loop, "
              f"{2 * repeats} alternating rounds ==")
        print(f"  replay {statistics.median(o) / 1e6:8.2f} ms   bare {statistics.median(b) / 1e6:8.2f} ms"
              f"   replay/bare {r}")
    finally:
        shutil.rmtree(d, ignore_errors=True)

    # C level: the migrations beside rotate at this file's entry count
    n = len(w.entries)
    sizes = sorted(len(v) for v in w.entries.values() if isinstance(v, str))
    vlen = sizes[len(sizes) // 2] if sizes else 32
    r2 = pcb.sweep("store", workload=["rotate", "migrate", "migrate_keys"], n_keys=n,
                   value_len=vlen, repeats=repeats, min_time=0.01 if quick else 0.05,
                   progress=False)
    print(f"\n== C level: migrate, migrate_keys and rotate, {n} entries of {vlen} characters "
          f"(this file's count and median string size) ==")
    print(r2.table())
    for w2 in ("migrate", "migrate_keys"):
        print(f"  {w2}/rotate (paired): {r2.ratio({'workload': w2}, {'workload': 'rotate'})}")
    return res.to_dict()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=900.0,
                    help="start-up budget in ms (the article's: 900)")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--from", dest="from_file", metavar="PREFS.xml",
                    help="replay this SharedPreferences file through every design instead")
    a = ap.parse_args()
    if engines.cipher_version() is None:
        print(f"SQLCipher is not installed: {engines.PEERS_HINT}", file=sys.stderr)
        return 2
    m = pcb.machine()
    print(f"# {m['cpu_model']}; {m['openssl_version']}; SQLCipher {engines.cipher_version()}; "
          f"Python {sys.version.split()[0]}")
    t0 = time.monotonic()
    if a.from_file:
        doc = replay_file(a.from_file, a.quick, a.budget)
        print(f"\n# total {time.monotonic() - t0:.0f} s")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(doc, f)
        return 0
    recs = startup(a.quick, a.budget)
    ops = per_op(a.quick)
    ref = reference(a.quick)
    print(f"\n# total {time.monotonic() - t0:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"startup": [r.to_dict() for r in recs], "per_op_ratios": ops,
                       "reference": ref}, f, default=lambda x: x.tolist()
                      if isinstance(x, np.ndarray) else str(x))
    return 0


if __name__ == "__main__":
    sys.exit(main())

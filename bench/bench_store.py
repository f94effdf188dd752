#!/usr/bin/env python3
"""Store benchmark: pycipherbench.store vs a straightforward Python peer, side by side.

Usage: python bench/bench_store.py [--quick] [--strict] [--json FILE] [--only SECTIONS]
                                   [--big-n N]

--only runs some sections (comma-separated: peer, scale, open, footprint, seed,
latency); --big-n sets bar 2's large store (default 1,000,000; 200,000 with --quick).

A report, not a test: it prints PASS/FAIL per bar and exits 0 unless --strict
and a bar fails. Where two sides are compared they are interleaved: each round
runs both sides, the side that goes first alternates, and the result is the
median of the per-round ratios (plus each side's own median), so that a burst
of load from something else on the machine hits both sides alike.

Sides:
* ours (C): ``store.bench(workload, ...)``, timed in C on a store built for the
  call (random 32-character [A-Za-z0-9] keys and values, random access order).
  No Python call overhead.
* ours (Py): the same store driven from Python (``store.open``), timed like the
  peer. This is what a Python user pays, call overhead included.
* peer: ``bench/esp_peer.py`` (the same file format on the ``cryptography``
  package), timed in Python with time.perf_counter_ns over passes of many calls
  in a shuffled key order, after a warm-up; the cost of the bare ``for`` loop is
  measured in the same sample and subtracted.

Bars:
  1. lean encrypted get (1,000 keys)  <= 1/5 of the peer's get_string
     lean encrypted put (one editor put) <= 1/5 of the peer's editor put_string
  2. get at 1,000,000 keys (200,000 with --quick) <= 2x get at 1,000 keys
  3. encrypted open_warm (100,000 entries) <= 1.3x plain open_warm
Goals (reported, not bars): heap bytes per entry <= 2x disk bytes per entry.

Note on bar 1's put: both sides encrypt at put time, as ESP's Editor does
(putEncryptedObject); commit only applies and writes.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import string
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
import _checkout  # noqa: E402  (the checkout's build before an installed copy)
import pycipherbench as pcb  # noqa: E402
from pycipherbench import store  # noqa: E402
from pycipherbench.stats import median_ci, median_ci_level  # noqa: E402

sys.path.insert(0, HERE)
from esp_peer import PeerStore, PlainPeerStore  # noqa: E402

ALPHABET = string.ascii_letters + string.digits
KEY_LEN = VALUE_LEN = 32
OPEN_BAR = 1.3  # bar 3: encrypted open_warm over plain (issue 21)
SECTIONS = ("peer", "scale", "open", "footprint", "seed", "latency")
NS = time.perf_counter_ns

STAGES = ("siv", "nonce", "aead", "base64", "lookup", "io")  # store.bench's stage clocks
FLOORS = {"siv": "siv_floor", "aead": "aead_floor"}  # a crypto stage -> its floor (where measured)
MODES = {  # label -> store options (store.open / store.bench)
    "plain": dict(encrypted=False),
    "lean": dict(),
    "faithful": dict(faithful=True),
    "cache": dict(cache=True),
}


# ----------------------------------------------------------------------- helpers

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    """min..max as a short string."""
    return f"{min(xs):,.0f}..{max(xs):,.0f}" if xs else "-"


def floor_row(label, st, width):
    """The stage table's floor line under a row: each crypto stage's floor (that stage's
    crypto alone on the floor kernels, same sizes, the store's AAD), or '' if none."""
    if not any(FLOORS[k] in st for k in FLOORS):
        return ""
    cells = "".join(f"{st[FLOORS[s]]:8,.0f}" if FLOORS.get(s) in st else f"{'':8s}" for s in STAGES)
    return f"\n    {label:{width}s}" + cells


def fmt_ns(ns):
    if ns != ns:
        return "n/a"
    if ns >= 1e6:
        return f"{ns / 1e6:,.2f} ms"
    if ns >= 1e4:
        return f"{ns / 1e3:,.1f} us"
    return f"{ns:,.0f} ns"


def rand_text(rng, n):
    return "".join(rng.choices(ALPHABET, k=n))


class Report:
    def __init__(self):
        self.bars = []    # (name, passed, detail)
        self.goals = []
        self.data = {}

    def bar(self, name, passed, detail):
        """``passed``: True, False, or None when the interval straddles the bar (neither a
        pass nor a fail can be claimed from it: UNDECIDED, shown with the interval)."""
        self.bars.append((name, passed, detail))
        print(f"  -> {verdict_word(passed)}: {name}: {detail}")


def verdict_word(passed):
    return "UNDECIDED" if passed is None else "PASS" if passed else "FAIL"


def under_bar(low, high, bar):
    """Whether a ratio's interval [low, high] is at most ``bar``: True (all of it), False
    (none of it), None (it straddles the bar: the point estimate alone decides nothing)."""
    return True if high <= bar else False if low > bar else None

    def goal(self, name, met, detail):
        self.goals.append((name, met, detail))


class Ctx:
    """Run parameters (rounds, sample lengths) and the scratch directory."""

    def __init__(self, args):
        self.quick = args.quick
        self.rng = random.Random()
        q = args.quick
        # Short samples, many of them, median: on a shared machine a sample of a
        # few ms usually runs in one scheduler slice, so the median is a clean
        # one; long samples all contain someone else's slices. The peer's
        # samples are a few ms too (one pass of 1,000 calls).
        self.min_time = 0.003                # per sample of store.bench
        self.repeats = 9 if q else 15        # samples per store.bench call
        self.rounds = 7 if q else 11         # bar 1
        self.big_n = args.big_n or (200_000 if q else 1_000_000)
        self.big_rounds = 3 if q else 9      # bar 2 (9 rounds: a 95% interval)
        self.open_rounds = 5 if q else 9     # bar 3
        self.seed_rounds = 9 if q else 21    # scenario from Python
        self.seed_c_rounds = 1 if q else 3   # scenario in C
        self.latency_rounds = 1 if q else 3  # section 6
        self.tmp = tempfile.mkdtemp(prefix="pcb-bench-store-")

    def cbench(self, workload, **kw):
        kw.setdefault("min_time", self.min_time)
        kw.setdefault("repeats", self.repeats)
        kw.setdefault("stages", False)
        return store.bench(workload, **kw)

    def fresh_dir(self):
        return tempfile.mkdtemp(dir=self.tmp)


def alternate(r, sides):
    """The sides in round r's order: rotated by one each round."""
    k = r % len(sides)
    return sides[k:] + sides[:k]


def timed_pass(fn, items, passes, empty=True):
    """ns per call of fn over `passes` passes through items, minus the bare loop."""
    t0 = NS()
    for _ in range(passes):
        for it in items:
            fn(it)
    t1 = NS()
    loop = 0
    if empty:
        for _ in range(passes):
            for it in items:
                pass
        loop = NS() - t1
    return max(0.0, (t1 - t0 - loop) / (passes * len(items)))


def timed_pass2(fn, pairs, passes):
    """As timed_pass, for a two-argument fn over (a, b) pairs."""
    t0 = NS()
    for _ in range(passes):
        for a, b in pairs:
            fn(a, b)
    t1 = NS()
    for _ in range(passes):
        for a, b in pairs:
            pass
    loop = NS() - t1
    return max(0.0, (t1 - t0 - loop) / (passes * len(pairs)))


# ------------------------------------------------------------------ section 1

def section_peer(ctx, rep):
    print("\n== 1. Lean encrypted get/put vs the peer (esp_peer.PeerStore), 1,000 keys, "
          "32-char keys and values ==")
    rng = ctx.rng
    n = 1000
    keys = [rand_text(rng, KEY_LEN) for _ in range(n)]
    vals = [rand_text(rng, VALUE_LEN) for _ in range(n)]
    d = ctx.fresh_dir()
    peer = PeerStore(os.path.join(d, "peer_prefs.xml"), os.urandom(32))
    with peer.edit() as e:
        for k, v in zip(keys, vals):
            e.put_string(k, v)
    ours_py = store.open(os.path.join(d, "ours_prefs.xml"), master_key_file=os.path.join(d, "k.key"))
    with ours_py.edit() as e:
        for k, v in zip(keys, vals):
            e.put_string(k, v)
    pairs = list(zip(keys, vals))
    samples, passes = 9, 1  # each sample: one pass of 1,000 calls in a fresh random order

    def shuffled(items):
        order = items[:]
        rng.shuffle(order)
        return order

    def peer_get():
        return med([timed_pass(peer.get_string, shuffled(keys), passes) for _ in range(samples)])

    def peer_put():
        out = []
        for _ in range(samples):
            e = peer.edit()  # discarded, as ours: put alone is timed
            out.append(timed_pass2(e.put_string, shuffled(pairs), passes))
        return med(out)

    def ours_py_get():
        return med([timed_pass(ours_py.get_string, shuffled(keys), passes) for _ in range(samples)])

    def ours_py_put():
        out = []
        for _ in range(samples):
            e = ours_py.edit()
            out.append(timed_pass2(e.put_string, shuffled(pairs), passes))
        return med(out)

    def ours_get():
        return ctx.cbench("get", n_keys=n).ns_per_op

    def ours_put():
        return ctx.cbench("put", n_keys=n).ns_per_op

    # warm-up (peer, and Python side of ours)
    for f in (peer_get, peer_put, ours_py_get, ours_py_put):
        f()
    res = {}
    for op, sides in (("get", [("ours", ours_get), ("peer", peer_get), ("ours_py", ours_py_get)]),
                      ("put", [("ours", ours_put), ("peer", peer_put), ("ours_py", ours_py_put)])):
        got = {name: [] for name, _ in sides}
        ratios = []
        for r in range(ctx.rounds):
            this = {}
            for name, f in alternate(r, sides):
                this[name] = f()
                got[name].append(this[name])
            ratios.append(this["ours"] / this["peer"])
        res[op] = dict(samples=got, ratios=ratios)
        label = {"get": "get_string", "put": "editor put_string"}[op]
        print(f"\n  {op}: {ctx.rounds} rounds, order rotated each round (median; min..max)")
        for name, _ in sides:
            desc = {"ours": f"ours (C, store.bench('{op}'))",
                    "ours_py": "ours from Python (" + ("Store.get_string)" if op == "get" else "Editor.put_string)"),
                    "peer": f"peer {label}"}[name]
            print(f"    {desc:58s} {fmt_ns(med(got[name])):>10s}  ({spread(got[name])} ns)")
        r_med = med(ratios)
        low, high = median_ci(ratios)
        print(f"    ours/peer per round: median {r_med:.3f} (1/{1 / r_med:.1f}); "
              f"{median_ci_level(len(ratios)):.0%} interval [{low:.3f}, {high:.3f}]")
        py = [a / b for a, b in zip(got["ours_py"], got["peer"])]
        print(f"    ours from Python / peer: median {med(py):.3f} (1/{1 / med(py):.1f})  [informative]")
        rep.bar(f"lean {op} <= 1/5 of peer {label}", under_bar(low, high, 0.2),
                f"ours {fmt_ns(med(got['ours']))} vs peer {fmt_ns(med(got['peer']))}, "
                f"median ratio {r_med:.3f} [{low:.3f}, {high:.3f}] (bar 0.200)")
    ours_py.close()
    rep.data["peer"] = res


# ------------------------------------------------------------------ section 2

def section_scale(ctx, rep):
    big = ctx.big_n
    print(f"\n== 2. get at {big:,} keys vs 1,000 keys (random access order, lean encrypted) ==")
    # One sweep: both sizes in the same rounds (a new store instance per round and
    # size, interleaved), the ratio paired by round. Timed without stage clocks (they
    # add the same ~100 ns to both sides and would flatter it); one instrumented call
    # per side afterwards gives the breakdown.
    t0 = time.monotonic()
    r = pcb.sweep("store", workload="get", n_keys=[1000, big], min_time=ctx.min_time,
                  repeats=ctx.big_rounds, stages=False, progress=False)
    ratio = r.ratio({"n_keys": big}, {"n_keys": 1000})
    small_m, big_m = r.one(n_keys=1000), r.one(n_keys=big)
    print(f"    1,000 keys: {fmt_ns(small_m.median)}   {big:,} keys: {fmt_ns(big_m.median)}   "
          f"paired ratio {ratio}  ({time.monotonic() - t0:.0f} s incl. populating)")
    stages = {name: ctx.cbench("get", n_keys=n, stages=True, repeats=1).stages
              for name, n in (("small", 1000), ("big", big))}
    print("    stages, ns/op (one instrumented call per side; siv includes the first touch of the "
          "benchmark's own name string; 'floor': the crypto stages' floor, same run):")
    print(f"    {'':12s}" + "".join(f"{s:>8s}" for s in STAGES) + f"{'total':>8s}")
    for name, label in (("small", "1,000"), ("big", f"{big:,}")):
        row = stages[name]
        print(f"    {label:12s}" + "".join(f"{row[k]:8,.0f}" for k in STAGES + ("total",))
              + floor_row("  floor", row, 12))
    print(f"    at {big:,} keys: heap {big_m.heap_bytes_per_entry:,.0f} B/entry (capacity), "
          f"disk {big_m.disk_bytes_per_entry:,.0f} B/entry")
    warn(r)
    rep.data["scale"] = dict(n_big=big, ratio=[ratio.estimate, ratio.low, ratio.high],
                             samples={"small": small_m.samples.tolist(),
                                      "big": big_m.samples.tolist()}, stages=stages)
    rep.bar(f"get at {big:,} keys <= 2x get at 1,000", under_bar(ratio.low, ratio.high, 2.0),
            f"paired ratio {ratio.estimate:.2f} [{ratio.low:.2f}, {ratio.high:.2f}] (bar 2.00)")


def warn(results):
    """Prints the sweep's instability warnings, if any."""
    for w in results.warnings:
        print(f"    WARNING {w}")


# ------------------------------------------------------------------ section 3

def section_open(ctx, rep):
    n = 100_000
    print(f"\n== 3. open_warm of a {n:,}-entry store: encrypted (lean) vs plain ==")
    # One sweep, both sides in the same rounds (new stores each round), one open per
    # sample (min_time below one open); the ratio paired by round.
    r = pcb.sweep("store", workload="open_warm", n_keys=n, encrypted=[True, False],
                  min_time=ctx.min_time, repeats=ctx.open_rounds, stages=False, progress=False)
    ratio = r.ratio({"encrypted": True}, {"encrypted": False})
    foot = {}
    for name, enc in (("encrypted", True), ("plain", False)):
        m = r.one(encrypted=enc)
        foot[name] = (m.heap_bytes_per_entry, m.disk_bytes_per_entry)
        print(f"    {name:9s} {fmt_ns(m.median):>10s}  ({m.median / n:,.0f} ns/entry; "
              f"heap {foot[name][0]:,.0f} B/entry, disk {foot[name][1]:,.0f} B/entry)")
    print(f"    encrypted/plain, paired by round: {ratio}")
    warn(r)
    py = open_from_python(ctx, n)
    rep.data["open_warm"] = dict(n=n, ratio=[ratio.estimate, ratio.low, ratio.high],
                                 footprint=foot, python=py)
    rep.bar(f"encrypted open_warm (100k) <= {OPEN_BAR:.1f}x plain",
            under_bar(ratio.low, ratio.high, OPEN_BAR),
            f"paired ratio {ratio.estimate:.2f} [{ratio.low:.2f}, {ratio.high:.2f}] "
            f"(bar {OPEN_BAR:.2f})")


def open_from_python(ctx, n):
    """store.open of an n-entry store from Python, interleaved: time and minor page faults."""
    import resource
    rng = ctx.rng
    items = [(rand_text(rng, KEY_LEN), rand_text(rng, VALUE_LEN)) for _ in range(n)]
    paths = {}
    for label in ("encrypted", "plain"):
        d = ctx.fresh_dir()
        kw = dict(master_key_file=os.path.join(d, "k.key")) if label == "encrypted" else dict(encrypted=False)
        p = os.path.join(d, "prefs.xml")
        with store.open(p, **kw) as s:
            with s.edit() as e:
                for k, v in items:
                    e.put_string(k, v)
        paths[label] = (p, kw)
    got = {"encrypted": [], "plain": []}
    faults = {"encrypted": [], "plain": []}
    for r in range(ctx.open_rounds + 1):
        for label in alternate(r, ["encrypted", "plain"]):
            p, kw = paths[label]
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = NS()
            s = store.open(p, **kw)
            t1 = NS()
            f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            s.close()
            if r:
                got[label].append(t1 - t0)
                faults[label].append(f1 - f0)
    ratios = [a / b for a, b in zip(got["encrypted"], got["plain"])]
    print(f"    from Python (store.open of the same {n:,} entries, {ctx.open_rounds} rounds; "
          "minor page faults per open) [informative]:")
    for label in ("encrypted", "plain"):
        print(f"      {label:9s} {fmt_ns(med(got[label])):>10s}  {med(faults[label]):8,.0f} page faults")
    print(f"      encrypted/plain per round: median {med(ratios):.2f}")
    return dict(ns=got, minflt=faults, ratios=ratios)


# ------------------------------------------------------------------ section 4

def section_footprint(ctx, rep):
    n = 1000
    print(f"\n== 4. Footprint: heap vs disk bytes per entry ({n:,} entries of 32-char keys/values; "
          "goal heap <= 2x disk) ==")
    rng = ctx.rng
    keys = [rand_text(rng, KEY_LEN) for _ in range(n)]
    vals = [rand_text(rng, VALUE_LEN) for _ in range(n)]
    print(f"    {'mode':9s} {'disk B/e':>9s} {'heap B/e':>9s} {'heap/disk':>9s}   "
          f"{'heap B/e after reading all':>27s} {'heap/disk':>9s}   (C bench: heap, disk)")
    out = {}
    for label, opt in MODES.items():
        d = ctx.fresh_dir()
        kw = dict(opt)
        if kw.get("encrypted", True):
            kw["master_key_file"] = os.path.join(d, "k.key")
        with store.open(os.path.join(d, "prefs.xml"), **kw) as s:
            with s.edit() as e:
                for k, v in zip(keys, vals):
                    e.put_string(k, v)
            h0, disk = s.heap_bytes / n, s.disk_bytes / n
            for k in keys:
                s.get_string(k)
            h1 = s.heap_bytes / n
        m = ctx.cbench("get", n_keys=n, **opt)
        ch, cd = m.extra["heap_bytes_per_entry"], m.extra["disk_bytes_per_entry"]
        print(f"    {label:9s} {disk:9,.0f} {h0:9,.0f} {h0 / disk:9.2f}   {h1:27,.0f} {h1 / disk:9.2f}"
              f"   ({ch:,.0f}, {cd:,.0f})")
        out[label] = dict(disk=disk, heap=h0, heap_after_reads=h1, c_heap=ch, c_disk=cd)
        worst = max(h0, h1) / disk
        rep.goal(f"{label}: heap <= 2x disk", worst <= 2.0, f"heap/disk {worst:.2f}")
    print("    (heap: the store's own allocations, incl. its hash table; the cache holds decrypted "
          "values once read)")
    rep.data["footprint"] = out


# ------------------------------------------------------------------ section 5

def seed_round_py(ctx, make, keys, vals):
    """100 puts + one commit, then 100 gets, on a fresh store in a fresh directory."""
    d = ctx.fresh_dir()
    s = make(d)
    try:
        t0 = NS()
        e = s.edit()
        for k, v in zip(keys, vals):
            e.put_string(k, v)
        e.commit()
        t1 = NS()
        for k in keys:
            s.get_string(k)
        t2 = NS()
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)
    return t1 - t0, t2 - t1


def section_seed(ctx, rep):
    n = 100
    print(f"\n== 5. The seed's scenario: {n} random 32-char key/value pairs "
          "(seed, on a phone: encrypted/plain ~23x writes, ~40x reads) ==")

    def ours(opt):
        def make(d):
            kw = dict(opt)
            if kw.get("encrypted", True):
                kw["master_key_file"] = os.path.join(d, "k.key")
            return store.open(os.path.join(d, "prefs.xml"), **kw)
        return make

    makers = [("plain", ours(MODES["plain"])), ("lean", ours(MODES["lean"])),
              ("faithful", ours(MODES["faithful"])),
              ("peer plain", lambda d: PlainPeerStore(os.path.join(d, "prefs.xml"))),
              ("peer enc", lambda d: PeerStore(os.path.join(d, "prefs.xml"), os.urandom(32)))]
    w = {m: [] for m, _ in makers}
    rd = {m: [] for m, _ in makers}
    wr = {m: [] for m in ("lean", "faithful", "peer enc")}
    rr = {m: [] for m in wr}
    base = {"lean": "plain", "faithful": "plain", "peer enc": "peer plain"}
    rng = ctx.rng
    for r in range(ctx.seed_rounds + 1):  # round 0 is a warm-up
        keys = [rand_text(rng, KEY_LEN) for _ in range(n)]
        vals = [rand_text(rng, VALUE_LEN) for _ in range(n)]
        this = {}
        for label, make in alternate(r, makers):
            this[label] = seed_round_py(ctx, make, keys, vals)
        if r == 0:
            continue
        for label in this:
            w[label].append(this[label][0])
            rd[label].append(this[label][1])
        for label in wr:
            wr[label].append(this[label][0] / this[base[label]][0])
            rr[label].append(this[label][1] / this[base[label]][1])
    print(f"  From Python (store.open; fresh temp dir per round, {ctx.seed_rounds} rounds, order rotated;"
          " Python call overhead is included: it is part of what a user pays):")
    print(f"    {'':12s} {'100 puts + commit':>18s} {'enc/plain':>10s}   {'100 gets':>10s} {'enc/plain':>10s}")
    for label, _ in makers:
        wx = f"{med(wr[label]):.2f}x" if label in wr else ""
        rx = f"{med(rr[label]):.2f}x" if label in rr else ""
        print(f"    {label:12s} {fmt_ns(med(w[label])):>18s} {wx:>10s}   {fmt_ns(med(rd[label])):>10s} {rx:>10s}")
    print("    (writes are dominated by the durable commit: fsync of file + directory)")

    # The same in C.
    cw = {m: [] for m in ("plain", "lean", "faithful")}
    cr = {m: [] for m in cw}
    ap = {m: [] for m in cw}
    apd = {m: [] for m in cw}
    cwr = {m: [] for m in ("lean", "faithful")}
    crr = {m: [] for m in cwr}
    labels = list(cw)
    for r in range(ctx.seed_c_rounds):
        this = {}
        for label in alternate(r, labels):
            opt = MODES[label]
            c = ctx.cbench("commit", batch=n, n_keys=n, **opt).ns_per_op
            g = ctx.cbench("get", n_keys=n, **opt).ns_per_op * n
            a = ctx.cbench("apply", batch=n, n_keys=n, **opt)
            this[label] = (c, g)
            cw[label].append(c)
            cr[label].append(g)
            ap[label].append(a.ns_per_op)
            apd[label].append(a.extra["durable_median"])
        for label in cwr:
            cwr[label].append(this[label][0] / this["plain"][0])
            crr[label].append(this[label][1] / this["plain"][1])
    print(f"  In C (store.bench('commit', batch={n}, n_keys={n}); {n} x store.bench('get', n_keys={n}); "
          f"{ctx.seed_c_rounds} round(s)):")
    print(f"    {'':12s} {'100 puts + commit':>18s} {'enc/plain':>10s}   {'100 gets':>10s} {'enc/plain':>10s}"
          f"   {'apply blocked':>14s} {'apply durable':>14s}")
    for label in labels:
        wx = f"{med(cwr[label]):.2f}x" if label in cwr else ""
        rx = f"{med(crr[label]):.2f}x" if label in crr else ""
        print(f"    {label:12s} {fmt_ns(med(cw[label])):>18s} {wx:>10s}   {fmt_ns(med(cr[label])):>10s} "
              f"{rx:>10s}   {fmt_ns(med(ap[label])):>14s} {fmt_ns(med(apd[label])):>14s}")
    print("    (commit = blocked until durable; apply blocked = puts + handing the write to the "
          "background thread; apply durable = until that write has landed)")
    rep.data["seed"] = dict(
        python=dict(write_ns=w, read_ns=rd, write_ratio=wr, read_ratio=rr),
        c=dict(commit_ns=cw, read_ns=cr, write_ratio=cwr, read_ratio=crr,
               apply_blocked_ns=ap, apply_durable_ns=apd))


# ------------------------------------------------------------------ section 6

def section_latency(ctx, rep):
    print("\n== 6. Per-operation latency in C (1,000 keys) and where put/get time goes ==")
    ops = ("get", "put", "contains", "get_missing")
    cells = {}
    stage_runs = {}
    for r in range(ctx.latency_rounds):
        for label in alternate(r, list(MODES)):
            for op in ops:
                want = op in ("get", "put") and label in ("lean", "faithful")
                m = ctx.cbench(op, n_keys=1000, stages=want, **MODES[label])
                cells.setdefault((label, op), []).append(m.ns_per_op)
                if want:
                    stage_runs.setdefault((label, op), []).append(m.extra["stages"])
    table = {k: med(v) for k, v in cells.items()}
    stages = {k: {s: int(med([st[s] for st in v])) for s in STAGES + ("total",)
                  + tuple(FLOORS.values()) if all(s in st for st in v)}
              for k, v in stage_runs.items()}
    print(f"  median of {ctx.latency_rounds} round(s), modes rotated:")
    print(f"    {'mode':9s}" + "".join(f"{op:>13s}" for op in ops))
    for label in MODES:
        print(f"    {label:9s}" + "".join(f"{fmt_ns(table[(label, op)]):>13s}" for op in ops))
    print("\n  Stage breakdown, ns per op (a separate run with stage clocks on; 'total' is that run's "
          "wall time per op, clock overhead included; 'floor' under a crypto stage: that "
          "stage's crypto alone on the floor kernels, same sizes and AAD, same run):")
    print(f"    {'':15s}" + "".join(f"{s:>8s}" for s in STAGES) + f"{'total':>8s}")
    for (label, op), st in stages.items():
        print(f"    {label + ' ' + op:15s}" + "".join(f"{st[s]:8,d}" for s in STAGES) + f"{st['total']:8,d}"
              + floor_row("  floor", st, 15))
    hw = {}
    for op in ("get", "put"):
        runs = [ctx.cbench(op, n_keys=1000, hw_aes=False, stages=True)
                for _ in range(ctx.latency_rounds)]
        hw[op] = dict(on=table[("lean", op)], off=med([m.ns_per_op for m in runs]),
                      stages={s: int(med([m.extra["stages"][s] for m in runs])) for s in STAGES})
    print(f"\n  Lean without AES-NI/PCLMULQDQ (hw_aes=False, child process; median of {ctx.latency_rounds}):")
    for op, v in hw.items():
        st = v["stages"] or {}
        print(f"    {op:4s} {fmt_ns(v['off']):>10s}  (with: {fmt_ns(v['on'])}, x{v['off'] / v['on']:.1f})  "
              + ", ".join(f"{s} {st.get(s, 0)}" for s in STAGES if st.get(s)))
    rep.data["latency"] = {f"{k[0]}/{k[1]}": v for k, v in table.items()}
    rep.data["stages"] = {f"{k[0]}/{k[1]}": v for k, v in stages.items()}
    rep.data["hw_aes_off"] = hw


# ----------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short run (~1 min)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if any bar fails")
    ap.add_argument("--json", metavar="FILE", help="write the raw numbers as JSON")
    ap.add_argument("--only", metavar="SECTIONS",
                    help=f"comma-separated sections to run (of {', '.join(SECTIONS)})")
    ap.add_argument("--big-n", type=int, default=0, metavar="N",
                    help="bar 2's large store (default 1,000,000; 200,000 with --quick)")
    args = ap.parse_args(argv)
    only = set(SECTIONS) if not args.only else set(args.only.split(","))
    if only - set(SECTIONS):
        ap.error(f"--only: unknown section(s) {', '.join(sorted(only - set(SECTIONS)))}")

    t_start = time.monotonic()
    ctx = Ctx(args)
    rep = Report()
    machine = pcb.machine()
    print("pycipherbench store benchmark" + (" (--quick)" if args.quick else ""))
    print(_checkout.which())
    print("machine: " + json.dumps(machine))
    try:
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              f"on {os.cpu_count()} CPUs (numbers are noisy on a busy machine)")
    except OSError:
        pass
    try:
        for name, fn in (("peer", section_peer), ("scale", section_scale),
                         ("open", section_open), ("footprint", section_footprint),
                         ("seed", section_seed), ("latency", section_latency)):
            if name in only:
                fn(ctx, rep)
    finally:
        shutil.rmtree(ctx.tmp, ignore_errors=True)

    print("\n== Summary ==")
    for name, passed, detail in rep.bars:
        print(f"  {verdict_word(passed)}  {name}: {detail}")
    for name, met, detail in rep.goals:
        print(f"  {'goal met' if met else 'goal MISSED'}  {name}: {detail}")
    elapsed = time.monotonic() - t_start
    print(f"  ({elapsed:.0f} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(dict(machine=machine, quick=args.quick, elapsed_s=elapsed,
                           bars=[dict(name=n, passed=p, detail=d) for n, p, d in rep.bars],
                           goals=[dict(name=n, met=p, detail=d) for n, p, d in rep.goals],
                           results=rep.data), f, indent=1, default=str)
    failed = [b for b in rep.bars if b[1] is not True]  # undecided is no pass
    return 1 if (args.strict and failed) else 0


if __name__ == "__main__":
    raise SystemExit(main())

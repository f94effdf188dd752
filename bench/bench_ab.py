"""Two builds of pycipherbench side by side: the same store workloads, paired by round.

    python bench/bench_ab.py BEFORE_CHECKOUT [AFTER_CHECKOUT] [--rounds 12] [--workloads get,put]

Each checkout must hold an in-place build (``python setup.py build_ext --inplace``);
AFTER defaults to this checkout. A round runs one fresh process per build, in a random
order (so drift, frequency and cache state fall on both alike), and each process times
every workload with :func:`pycipherbench.store.bench` (its median over ``--repeats``
instances). The result per workload is the paired ratio AFTER/BEFORE over the rounds
with its interval (:func:`pycipherbench.stats.paired_ratio`): 1.00x inside the interval
means no difference this run can see. Used for "costs nothing" claims (issue 25: the
system-call table unarmed; the store's state owners).
"""
from __future__ import annotations

import _checkout  # noqa: F401  (this checkout's build first: pycipherbench.stats below)

import argparse
import json
import os
import random
import subprocess
import sys

import numpy as np

CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import pycipherbench
from pycipherbench import store
assert pycipherbench.__file__.startswith(sys.argv[1]), pycipherbench.__file__
out = {}
for w in sys.argv[2].split(","):
    m = store.bench(w, n_keys=int(sys.argv[3]), repeats=int(sys.argv[4]), stages=False)
    out[w] = m.ns_per_op
print(json.dumps(out))
"""


def _run(checkout: str, workloads: str, n_keys: int, repeats: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH="")
    r = subprocess.run([sys.executable, "-c", CHILD, checkout, workloads, str(n_keys), str(repeats)],
                       capture_output=True, text=True, env=env, timeout=600, check=False)
    if r.returncode != 0:
        raise SystemExit(f"bench_ab: the child for {checkout} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="the checkout measured as the denominator")
    ap.add_argument("after", nargs="?", default=_checkout.ROOT,
                    help="the checkout measured as the numerator (default: this one)")
    ap.add_argument("--rounds", type=int, default=12, help="rounds (default 12)")
    ap.add_argument("--repeats", type=int, default=3, help="store.bench repeats per process (default 3)")
    ap.add_argument("--n-keys", type=int, default=1000, help="store size (default 1000)")
    ap.add_argument("--workloads", default="get,put", help="comma-separated (default get,put)")
    ap.add_argument("--seed", type=int, default=None, help="the order's random seed")
    ap.add_argument("--json", metavar="FILE", help="write the per-round figures as JSON")
    a = ap.parse_args(argv)
    if a.rounds < 3:
        ap.error("--rounds must be at least 3 for an interval")
    checkouts = {"before": os.path.abspath(a.before), "after": os.path.abspath(a.after)}
    for name, path in checkouts.items():
        if not os.path.isdir(os.path.join(path, "pycipherbench")):
            ap.error(f"{name}: {path} is not a pycipherbench checkout")
    from pycipherbench import stats

    rng = random.Random(a.seed)
    workloads = [w.strip() for w in a.workloads.split(",") if w.strip()]
    rounds: dict[str, dict[str, list[float]]] = {k: {w: [] for w in workloads} for k in checkouts}
    print(f"# {a.rounds} rounds, each a fresh process per build in random order; "
          f"store.bench at {a.n_keys} keys, median of {a.repeats} instances a process")
    print(f"# before: {checkouts['before']}\n# after:  {checkouts['after']}")
    for i in range(a.rounds):
        order = list(checkouts)
        rng.shuffle(order)
        for name in order:
            got = _run(checkouts[name], ",".join(workloads), a.n_keys, a.repeats)
            for w in workloads:
                rounds[name][w].append(got[w])
        print(f"round {i + 1}/{a.rounds}: " + ", ".join(
            f"{w} {rounds['before'][w][-1]:.0f} -> {rounds['after'][w][-1]:.0f} ns" for w in workloads),
            flush=True)
    print(f"\n{'workload':<10} {'before ns':>10} {'after ns':>10}  after/before (paired, {a.rounds} rounds)")
    for w in workloads:
        r = stats.paired_ratio(rounds["after"][w], rounds["before"][w])
        print(f"{w:<10} {np.median(rounds['before'][w]):>10.1f} {np.median(rounds['after'][w]):>10.1f}  {r}")
    if a.json:
        with open(a.json, "x") as f:
            json.dump({"checkouts": checkouts, "rounds": rounds, "n_keys": a.n_keys}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The stateful store tests (tests/test_store_stateful.py) with a longer budget.

Usage: python bench/bench_stateful.py [--examples 200] [--steps 40] [pytest args...]

The README's test run gives each store mode 40 examples of 25 steps (derandomized);
this runs the same machines (three Store objects on one file with injected system-call
failures, in every store mode; two Stores and a child process; the known-bug machines,
strict xfails) with ``--examples`` examples of ``--steps`` steps each, through pytest, and
exits with its status.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import _checkout

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--examples", type=int, default=200)
ap.add_argument("--steps", type=int, default=40)
a, rest = ap.parse_known_args()
env = dict(os.environ, PCB_STATEFUL_EXAMPLES=str(a.examples), PCB_STATEFUL_STEPS=str(a.steps),
           PYTHONPATH=os.pathsep.join([_checkout.ROOT, os.environ.get("PYTHONPATH", "")]))
print(f"# stateful store tests: {a.examples} examples x {a.steps} steps per machine; "
      f"{_checkout.which()}", flush=True)
sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          os.path.join(_checkout.ROOT, "tests", "test_store_stateful.py"), *rest],
                         env=env, cwd=_checkout.ROOT))

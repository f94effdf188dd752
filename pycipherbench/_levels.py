"""This machine's speed from run to run, as its canary has read it.

A VM's core clock (and a laptop's, with turbo and thermals) drifts by a few percent over
minutes, for every kernel at once. A run lasting seconds sits at one point of that drift,
and neither its rounds nor its worker processes can see how far the next run will sit
from it: on the development VM one persistent process timing three kernels for 7 minutes
saw their 30-second medians move by SD 1.8-2.0%, together, and the canary (a chain of
dependent additions, about one core cycle each) moved with them (its 30-second medians
SD 2.0%; the kernels' times over the canary's, 0.3-0.5%).

So every run notes its canary level (the median ns per addition over its rounds) in a
small per-user file, one line per run, with the time and a key of this machine; and a
median's interval over worker processes reaches from this run's processes to where a
usual run of this machine would be: it is the hull of the interval over the processes and
that interval moved by how far this run's level sits from the median level of the k
latest runs (this one included), widened by the spread of those levels (a prediction
interval for the next run's level: t(k-1) x robust SD x sqrt(1 + 1/k), k at most :data:`LATEST`). So it covers
this run's processes and the next run's median both. Nothing measured elsewhere enters: with fewer than
:data:`MIN_RUNS` runs recorded on this machine the interval says the level is not yet
known. Paired ratios need none of this (both sides share each round's clock), and
``compare`` reads both runs' canaries directly.

The file: ``$PYCIPHERBENCH_LEVELS`` if set (empty: keep no history), else
``$XDG_CACHE_HOME/pycipherbench/levels.jsonl`` (``~/.cache/...``). Appends are single
``write`` calls of one short line on a file opened ``O_APPEND``, so processes sharing it
do not interleave lines; a line that does not parse is skipped; the file is cut to its
latest :data:`KEEP` lines when it grows past :data:`TRIM_AT`. It is a cache: when it cannot
be read or written, the interval says the level is not known, and nothing fails.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import tempfile
import time

import numpy as np

from ._machine import Check, machine

#: Runs of this machine (this one included) before their levels enter an interval.
MIN_RUNS = 3
#: The latest runs whose levels count, and how old they may be (seconds). Many: the clock
#: wanders between regimes lasting minutes (on the development VM a busy neighbour's and a
#: quiet one's levels differed by 6%), and a notebook or a benchmark script makes dozens of
#: runs in that time; a short window would hold one regime only and miss the next.
LATEST = 1000
HORIZON = 7 * 24 * 3600.0
#: The file is cut back to KEEP lines when it has more than TRIM_AT (about 80 bytes each).
KEEP, TRIM_AT = 1000, 2000


def path() -> str | None:
    """The history file, or None when ``PYCIPHERBENCH_LEVELS`` is set empty."""
    env = os.environ.get("PYCIPHERBENCH_LEVELS")
    if env is not None:
        return env or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pycipherbench", "levels.jsonl")


def machine_key() -> str:
    """Which machine a level belongs to: CPU model, cores, architecture and host name."""
    fp = machine()
    text = "|".join(str(x) for x in (fp["cpu_model"], fp["cores"], fp["arch"], platform.node()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _lines(p: str) -> list[str]:
    try:
        with open(p, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def earlier(key: str, now: float | None = None) -> list[float]:
    """The log canary levels of this machine's latest runs (oldest first), at most
    :data:`LATEST` within :data:`HORIZON`."""
    p = path()
    if p is None:
        return []
    now = time.time() if now is None else now
    out: list[float] = []
    for line in _lines(p):
        try:
            d = json.loads(line)
            t, level = float(d["t"]), float(d["canary"])
        except (ValueError, TypeError, KeyError):
            continue
        if d.get("machine") == key and now - HORIZON <= t <= now + 60 and level > 0 \
                and math.isfinite(level):
            out.append(math.log(level))
    return out[-LATEST:]


def note(key: str, level: float) -> None:
    """Append this run's level (ns per canary addition); best effort."""
    p = path()
    if p is None or not (level > 0 and math.isfinite(level)):
        return
    line = json.dumps({"t": round(time.time(), 3), "machine": key, "canary": level}) + "\n"
    try:
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > TRIM_AT * len(line):
            _trim(p)
    except OSError:
        pass


def _trim(p: str) -> None:
    """Keep the latest KEEP lines (a new file renamed over the old one)."""
    lines = _lines(p)
    if len(lines) <= TRIM_AT:
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(p) or ".", prefix=".levels-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines[-KEEP:]) + "\n")
        os.replace(tmp, p)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def spread(logs: list[float]) -> float | None:
    """Robust SD (1.4826 x median absolute deviation) of log levels; None with fewer than
    :data:`MIN_RUNS`."""
    if len(logs) < MIN_RUNS:
        return None
    a = np.asarray(logs, dtype=np.float64)
    return float(1.4826 * np.median(np.abs(a - np.median(a))))


def shift(logs: list[float], this: float) -> float | None:
    """How far (log) this run's level sits from the median level of ``logs`` (this run's
    included): positive when this run's clock was faster than usual, so that its times
    are lower than a usual run's. None with fewer than :data:`MIN_RUNS`."""
    if len(logs) < MIN_RUNS:
        return None
    return float(np.median(np.asarray(logs, dtype=np.float64))) - this


def check() -> Check:
    """What ``pycipherbench machine --check`` says of this machine's clock between runs
    (for information: how much drift is too much is the user's call, not a constant's)."""
    p = path()
    if p is None:
        return Check("clock between runs", "no history kept (PYCIPHERBENCH_LEVELS is empty)",
                     None, "medians' intervals over processes cannot take the clock's drift "
                     "between runs into account", "unset PYCIPHERBENCH_LEVELS")
    logs = earlier(machine_key())
    sd = spread(logs)
    if sd is None:
        return Check("clock between runs", f"not yet known: {len(logs)} of {MIN_RUNS} runs "
                     f"recorded in {p}", None, "medians' intervals over processes say the "
                     "level is not yet known until then")
    lo, hi = math.exp(min(logs)), math.exp(max(logs))
    return Check("clock between runs", f"canary levels of the latest {len(logs)} runs spread "
                 f"by {sd:.1%} (robust SD; {lo:.4g}-{hi:.4g} ns per addition) in {p}", None,
                 "medians' intervals over processes widen by this spread (paired ratios and "
                 "compare, which read each run's canary, need none of it)",
                 "a fixed clock narrows it: on bare metal sudo cpupower frequency-set -g "
                 "performance and turbo off; on a VM, a host with dedicated cores")

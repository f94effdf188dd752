"""Storage designs on an app's start-up path (issue 19), timed at the Python call.

The Android article's team had a 900 ms cold-start budget and weighed
EncryptedSharedPreferences (ESP) against alternatives. This module times each design
doing what an app does at start-up: open its store (cold: first launch, keys created;
warm: an existing store of ``n_entries`` entries) and read ``n_reads`` items (some never
set, as feature flags are), then write ``writes`` items with ``apply()``. ``samples`` is
the caller's blocked time per start-up, ``durable_samples`` the time until the writes are
on disk. Every design runs in the same rounds (:mod:`._rounds`: one sample per design per
round, shuffled), so ratios to plain SharedPreferences pair round by round.

**Level.** Everything here is timed around the *Python call* (``time.perf_counter_ns``
around open/get/put; call overhead included), because SQLCipher is reachable only through
its Python binding (``sqlcipher3``): ESP is driven through ``store.open`` beside it, the
same level in the same rounds. These figures are therefore not comparable with
``store.bench``'s C-level ones; compare designs with each other.

Designs (:data:`DESIGNS`): ``plain`` (SharedPreferences, the baseline), ``esp``,
``esp_cache`` (``cache=True``), ``tiered`` (plain store + ESP store holding
``sensitive_fraction`` of the names), ``tiered_lazy`` (the ESP store opened on first use
of a sensitive name), ``sqlcipher`` (SQLCipher 4, its default settings), ``sqlite`` (the
same library without a key), ``mmkv_model`` (our C model of MMKV's design: mmap'ed
appended records, AES-128-CFB, unauthenticated; labelled a model). Each says what it gives up (:data:`GIVES_UP`).
"""

from __future__ import annotations

import math
import os
import random
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from . import engines
from .engine_bench import ScratchPoint, nivcsw, random_text
from ._format import format_ns, format_table
from ._options import SETTINGS
from ._record import Record
from ._rounds import (DEFAULT_ROUNDS, PointData, RunInfo, Workers, run_plans, Plan, record_fields,
                      resolve_processes)
from .stats import median_ci, paired_ratio, summarize_warnings

__all__ = ["DESIGNS", "GIVES_UP", "LEVEL_NOTE", "DesignMeasurement", "plan_design", "run",
           "format_designs", "budget_sentences", "format_replay", "replay_verdict", "replay_choice", "fit_words", "AUTHENTICATED",
           "PHONE_NOTE", "build_record", "check_design_names"]

#: design -> (engine, engine options): what :func:`plan_design` opens.
DESIGNS: dict[str, tuple[str, dict[str, Any]]] = {
    "plain": ("esp", {"encrypted": False}),
    "esp": ("esp", {}),
    "esp_cache": ("esp", {"cache": True}),
    "tiered": ("tiered", {}),
    "tiered_lazy": ("tiered", {"lazy": True}),
    "sqlcipher": ("sqlcipher", {}),
    "sqlite": ("sqlcipher", {"encrypted": False}),
    "mmkv_model": ("mmkv", {}),
}

#: What each design gives up (authentication, atomicity, Android format compatibility).
GIVES_UP: dict[str, str] = {
    "plain": "no encryption at all; whole-file atomic commit; Android SharedPreferences format",
    "esp": "nothing (authenticated AES-SIV names + AES-GCM values); whole-file atomic "
           "commit; Android ESP format",
    "esp_cache": "as esp; decrypted values stay in memory",
    "tiered": "non-sensitive names and values in plain text; each store atomic on its own, "
              "not together; two Android files (SharedPreferences + ESP)",
    "tiered_lazy": "as tiered; the first sensitive read pays the encrypted store's open",
    "sqlcipher": "authenticated (HMAC-SHA512 per 4 KiB page); per-transaction atomicity "
                 "(journal); not the Android preferences format (a SQLCipher database)",
    "sqlite": "no encryption at all; per-transaction atomicity; a SQLite database "
              "(Room without encryption)",
    "mmkv_model": "a MODEL of MMKV (our C, from its public description): AES-128-CFB "
                  "WITHOUT authentication (a flipped ciphertext bit flips the plaintext, the "
                  "CRC is recomputable); durable only at msync; per-record appends checked "
                  "by one CRC; MMKV's own format, not Android's preferences",
}

LEVEL_NOTE = ("timed at the Python call (perf_counter_ns around open/get/put, call overhead "
              "included): SQLCipher is reachable only through its Python binding, so ESP is "
              "driven through store.open beside it, same level, same rounds; not comparable "
              "with store.bench's C-level figures")



@dataclass(frozen=True, repr=False, eq=False, kw_only=True)
class DesignMeasurement(Record):
    """One design's start-up rounds (ns per start-up), or an engine's per-op workload.

    ``design``, ``workload`` (``"startup_cold"``, ``"startup_warm"``, a phase of
    :data:`pycipherbench.replay.PHASES` or a per-op one), ``params``; ``durable_samples``
    (ns until durable, per round); ``disk_bytes`` of the store after the run's first
    sample; ``heap_bytes``, the store's own heap after a replay's cold start (ESP's
    stores; None where the engine does not say); ``engine_version`` (SQLCipher's
    cipher_version, or None); ``level`` is always ``"python"`` (see :data:`LEVEL_NOTE`)."""

    design: str
    workload: str
    params: dict[str, Any]
    durable_samples: np.ndarray | None = None
    disk_bytes: int = 0
    heap_bytes: int | None = None
    engine_version: str | None = None
    level: str = "python"
    gives_up: str = ""

    _ARRAYS: ClassVar[tuple[str, ...]] = (*Record._ARRAYS, "durable_samples")

    @property
    def durable_median(self) -> float | None:
        return None if self.durable_samples is None else float(np.median(self.durable_samples))

    def to_dict(self) -> dict[str, Any]:
        return {"design": self.design, "workload": self.workload, "params": dict(self.params),
                "level": self.level, "engine_version": self.engine_version,
                "disk_bytes": self.disk_bytes, "heap_bytes": self.heap_bytes, "gives_up": self.gives_up, **super().to_dict(),
                "durable_median": self.durable_median}

    def _label(self) -> str:
        return f"{self.design} {self.workload} ({self.level} level, {self.params})"


# -- the points


class _StartupPoint(ScratchPoint):
    """One design's start-up: a copy of the prepared store (warm) or an empty directory
    (cold) per start-up; open, reads, writes + apply timed (blocked), then flush (durable)."""

    def __init__(self, design: str, *, cold: bool, n_entries: int, n_reads: int, writes: int,
                 sensitive_fraction: float, sensitive_reads: float, missing_fraction: float,
                 key_len: int,
                 value_len: int, min_time: float, seed: int, directory: str | None) -> None:
        self.design, self.cold = design, cold
        self.engine, self.options = DESIGNS[design]
        self.min_time, self.directory = min_time, directory
        self.n_entries, self.value_len = n_entries, value_len
        rng = random.Random(seed)  # the same names for every design of a run
        self.entries = {random_text(rng, key_len): random_text(rng, value_len) for _ in range(n_entries)}
        names = list(self.entries)
        self.sensitive = frozenset(names[:round(n_entries * sensitive_fraction)])
        plain_names = names[len(self.sensitive):]
        n_missing = round(n_reads * missing_fraction)
        present = n_reads - n_missing
        n_sens = round(present * sensitive_reads)
        if n_sens > len(self.sensitive) or present - n_sens > len(plain_names):
            raise ValueError(f"n_reads={n_reads} reads {present} stored items "
                             f"({n_sens} sensitive) but n_entries={n_entries} holds "
                             f"{len(self.sensitive)} sensitive and {len(plain_names)} others")
        self.reads = (rng.sample(sorted(self.sensitive), n_sens) + rng.sample(plain_names, present - n_sens)
                      + [random_text(rng, key_len) for _ in range(n_missing)])
        rng.shuffle(self.reads)
        self.writes = {random_text(rng, key_len): random_text(rng, value_len) for _ in range(writes)}
        self.iterations = 1
        self.disk_bytes = 0
        self.data = PointData()
        self.data.info = {"design": design}

    def _open(self, where: str) -> engines.Handle:
        opts = dict(self.options)
        encrypted = opts.pop("encrypted", True)
        lazy = opts.pop("lazy", False)
        return engines.open_engine(self.engine, where, encrypted=encrypted,
                                   sensitive=self.sensitive, lazy=lazy, options=opts)

    def build(self) -> None:
        template = self._make_template("pcb-designs-")
        if not self.cold:
            h = self._open(template)
            try:
                engines.fill(h, self.entries.items())
                h.flush()
            finally:
                h.close()

    def calibrate(self) -> int:
        ns = self._one()[0]  # also the warm-up
        return max(1, min(50, math.ceil(self.min_time * 1e9 / max(ns, 1))))

    def warm_up(self) -> None:
        self._one()

    def _one(self) -> tuple[int, int, int, int]:
        assert self.base is not None and self.template is not None
        where = tempfile.mkdtemp(dir=self.base)
        try:
            if not self.cold:
                shutil.copytree(self.template, where, dirs_exist_ok=True)
            niv0, cpu0 = nivcsw(), time.thread_time_ns()
            t0 = time.perf_counter_ns()
            h = self._open(where)
            try:
                for name in self.reads:
                    h.get(name)
                if self.writes:
                    h.put(self.writes, durable=False)
                t1 = time.perf_counter_ns()
                h.flush()
                t2 = time.perf_counter_ns()
                cpu = time.thread_time_ns() - cpu0
                niv = nivcsw() - niv0
            finally:
                h.close()
            if not self.disk_bytes:
                self.disk_bytes = engines.disk_bytes(where)
            return t1 - t0, t2 - t0, cpu, niv
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def sample(self, canary: float) -> None:
        blocked = durable = cpu = niv = 0
        for _ in range(self.iterations):
            b, d, c, n = self._one()
            blocked, durable, cpu, niv = blocked + b, durable + d, cpu + c, niv + n
        self._record(blocked, durable, cpu, niv, durable, canary)  # the call lasts until durable


def build_record(data: PointData, run: RunInfo, *, design: str, workload: str,
                 params: dict[str, Any], point: Any, min_time: float,
                 repeats: int) -> DesignMeasurement:
    """The record of a design's point (a start-up here, a replay phase in
    :mod:`pycipherbench.replay`): ``point`` has ``disk_bytes`` (and maybe ``heap_bytes``)."""
    fields = record_fields(data, run, repeats=repeats)
    fields["tsc_samples"] = None  # no TSC at the Python call
    engine = DESIGNS[design][0]
    return DesignMeasurement(
        design=design, workload=workload, params=params, payload=0, hw_aes=True,
        min_time=min_time, durable_samples=np.asarray(data.extra.get("durable_ns", []), dtype=np.float64),
        disk_bytes=point.disk_bytes, heap_bytes=getattr(point, "heap_bytes", None),
        engine_version=engines.engine_version(engine), gives_up=GIVES_UP[design], **fields)


def check_design_names(designs: Sequence[str]) -> None:
    """ValueError naming the nearest design for a name not in :data:`DESIGNS`; the clear
    error naming the extra when SQLCipher's binding is missing for a design that needs it."""
    import difflib

    for design in designs:
        if design not in DESIGNS:
            close = difflib.get_close_matches(str(design), DESIGNS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"design must be one of {list(DESIGNS)}, not {design!r}{hint}")
        if DESIGNS[design][0] == "sqlcipher":
            engines._sqlcipher()


def _check_fraction(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


def _check_count(name: str, value: int, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def plan_design(design: str, *, cold: bool = False, n_entries: int = 100, n_reads: int = 20,
                writes: int = 1, sensitive_fraction: float = 0.2,
                sensitive_reads: float | None = None, missing_fraction: float = 0.25,
                key_len: int = 32, value_len: int = 32, min_time: float = 0.05,
                repeats: int = DEFAULT_ROUNDS, seed: int = 0,
                directory: str | None = None, workers: Workers | None = None) -> Plan:
    """A start-up point of ``design`` (of :data:`DESIGNS`), for :func:`._rounds.run_plans`.

    The store holds ``n_entries`` random ``[A-Za-z0-9]`` pairs of ``key_len``/``value_len``
    characters, ``sensitive_fraction`` of them sensitive (the tiered designs keep those in
    their ESP store); start-up reads ``n_reads`` names, ``missing_fraction`` of them never
    set, and of the stored ones ``sensitive_reads`` sensitive (default:
    ``sensitive_fraction``; 0 is a start-up path that needs no secret, where
    ``tiered_lazy`` never opens its encrypted store); then puts ``writes`` items and
    ``apply()``s. ``workers``: the run's worker processes, where the point then lives
    (:meth:`._rounds.Workers.point`)."""
    check_design_names([design])
    if not isinstance(cold, bool):
        raise TypeError(f"cold must be a bool, not {type(cold).__name__}")
    _check_count("n_entries", n_entries, 0)
    _check_count("n_reads", n_reads, 0)
    _check_count("writes", writes, 0)
    _check_count("key_len", key_len, 1)
    _check_count("value_len", value_len, 0)
    _check_fraction("sensitive_fraction", sensitive_fraction)
    if sensitive_reads is None:
        sensitive_reads = sensitive_fraction
    _check_fraction("sensitive_reads", sensitive_reads)
    _check_fraction("missing_fraction", missing_fraction)
    if directory is not None and not os.path.isdir(directory):
        raise NotADirectoryError(f"directory={directory!r} is not an existing directory")
    point = _StartupPoint(design, cold=cold, n_entries=n_entries, n_reads=n_reads, writes=writes,
                          sensitive_fraction=sensitive_fraction, sensitive_reads=sensitive_reads,
                          missing_fraction=missing_fraction,
                          key_len=key_len, value_len=value_len, min_time=min_time, seed=seed,
                          directory=directory)
    params = dict(cold=cold, n_entries=n_entries, n_reads=n_reads, writes=writes,
                  sensitive_fraction=sensitive_fraction, sensitive_reads=sensitive_reads,
                  missing_fraction=missing_fraction, key_len=key_len, value_len=value_len)
    workload = "startup_cold" if cold else "startup_warm"
    import functools

    build = functools.partial(build_record, design=design, workload=workload, params=params,
                              point=point, min_time=min_time, repeats=repeats)
    return Plan(point if workers is None else workers.point(point), build)


def run(designs: Sequence[str] | None = None, *, cases: Sequence[dict[str, Any]] = (
            {"cold": True, "n_reads": 20}, {"cold": False, "n_reads": 20},
            {"cold": True, "n_reads": 100}, {"cold": False, "n_reads": 100}),
        repeats: int = DEFAULT_ROUNDS, processes: int | None = None, progress: bool = False,
        **common: Any) -> tuple[list[DesignMeasurement], RunInfo]:
    """Every design (default: all of :data:`DESIGNS` whose library is installed) in every
    case (keyword sets of :func:`plan_design`), all in the same rounds, spread over
    ``processes`` fresh worker processes one after another (default: up to 5, at least 2
    rounds each; 1: this process, whose intervals cover this process only). Each point is
    built and calibrated once, in the first process, and rebuilt with that operation count
    in each fresh one.

    Returns the measurements and how the run went (Ctrl-C keeps the complete rounds)."""
    if designs is None:
        designs = [d for d in DESIGNS
                   if DESIGNS[d][0] != "sqlcipher" or engines.cipher_version() is not None]
    check_design_names(designs)
    seed = random.SystemRandom().randrange(2**32)
    with Workers(resolve_processes(processes, repeats)) as workers:
        plans = [plan_design(d, **{**common, **case}, repeats=repeats, seed=seed, workers=workers)
                 for case in cases for d in designs]
        records, info = run_plans(plans, repeats, progress=progress, desc="designs",
                                  workers=workers)
    return records, info


# -- reports


def _ratio(m: DesignMeasurement, base: DesignMeasurement) -> Any:
    return paired_ratio(m.samples, base.samples)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.2f} ms" if ns >= 1e6 else format_ns(ns)


def _durable_cells(m: DesignMeasurement, base: DesignMeasurement | None) -> list[str]:
    """The time until durable: its median, interval, and paired ratio to ``base``'s."""
    d = m.durable_samples
    if d is None or not len(d):
        return ["-", "-", "-"]
    low, high = median_ci(d)
    cells = [_ms(float(np.median(d))), f"[{_ms(low)}, {_ms(high)}]"]
    if base is None or m is base or base.durable_samples is None:
        return cells + ["1 (baseline)" if m is base else "-"]
    r = paired_ratio(d, base.durable_samples)
    return cells + [f"{r.estimate:.2f}x [{r.low:.2f}, {r.high:.2f}]"]


def _design_table(group: Sequence[DesignMeasurement], base: DesignMeasurement | None,
                  budget_ms: float | None, durable: bool = True, durable_ci: bool = False) -> str:
    """One table: each design's blocked time, its interval (with the coverage it really
    has), the paired ratio to ``base``, the durable time (with ``durable_ci`` its interval
    and paired ratio too), whether it fits the budget."""
    rows = []
    for m in group:
        low, high = m.ci
        r = "-" if base is None or m is base else _ratio(m, base)
        ratio = "1 (baseline)" if m is base else (r if isinstance(r, str) else
                                                  f"{r.estimate:.2f}x [{r.low:.2f}, {r.high:.2f}]")
        row = [m.design, _ms(m.median),
               f"[{_ms(low)}, {_ms(high)}]" if m.n_rounds > 1 else "none (1 round)", ratio]
        if durable_ci:
            row += _durable_cells(m, base)
        elif durable:
            row.append("-" if m.durable_median is None else _ms(m.durable_median))
        if budget_ms is not None:
            row.append("yes" if high <= budget_ms * 1e6 else
                       "median only" if m.median <= budget_ms * 1e6 else "no")
        rows.append(row)
    worst = min(group, key=lambda m: m.ci_level)  # the coverage the column really has
    cover = ("no interval" if worst.n_rounds <= 1 else "95% interval" if worst.ci_level >= 0.95
             else f"{worst.ci_level:.0%} interval*")
    head = ["design", "blocked", cover, "vs plain (paired)"]
    if durable_ci:
        head += ["durable", "interval", "durable vs plain"]
    elif durable:
        head.append("durable")
    if budget_ms is not None:
        head.append(f"fits {budget_ms:g} ms")
    table = format_table(head, rows)
    return table if worst.ci_level >= 0.95 else f"{table}\n* {worst.ci_words}"


def fit_words(group: Sequence[DesignMeasurement], budget_ms: float) -> str:
    """Which designs of ``group`` (one case or phase) fit ``budget_ms`` with their whole
    interval, which by the median only,
    which miss it, and the slowest: words from the data."""
    fit = [m.design for m in group if m.ci[1] <= budget_ms * 1e6]
    near = [m.design for m in group if m.median <= budget_ms * 1e6 < m.ci[1]]
    miss = [m.design for m in group if m.median > budget_ms * 1e6]
    slowest = max(group, key=lambda m: m.median)
    s = (f"{', '.join(fit)} fit{'s' if len(fit) == 1 else ''} {budget_ms:g} ms with the whole "
         "interval" if fit else f"no design fits {budget_ms:g} ms with its whole interval")
    if near:
        s += f"; {', '.join(near)} only by the median"
    if miss:
        s += f"; {', '.join(miss)} miss{'es' if len(miss) == 1 else ''} it"
    return s + f" (slowest: {slowest.design}, {_ms(slowest.median)})."


def format_designs(records: Sequence[DesignMeasurement], budget_ms: float | None = None) -> str:
    """The start-up table: per case, each design's blocked and durable time with its
    interval, the paired ratio to plain SharedPreferences, and what it gives up;
    with ``budget_ms`` a column saying whether the median and the interval's top fit."""
    if budget_ms is not None:
        SETTINGS["budget_ms"].check(budget_ms)  # declared with store --budget
    lines: list[str] = []
    cases: dict[tuple[Any, ...], list[DesignMeasurement]] = {}
    for m in records:
        cases.setdefault(tuple(sorted(m.params.items())), []).append(m)
    for group in cases.values():
        p = group[0].params
        base = next((m for m in group if m.design == "plain"), None)
        what = "cold (first launch: keys created)" if p["cold"] else \
            f"warm ({p['n_entries']:,} entries stored)"
        lines.append(f"# start-up, {what}: open + {p['n_reads']} reads "
                     f"({p['missing_fraction']:.0%} never set) + {p['writes']} write(s) + apply; "
                     f"tiered: {p['sensitive_fraction']:.0%} of entries sensitive, "
                     f"{p['sensitive_reads']:.0%} of the stored reads")
        lines.append(_design_table(group, base, budget_ms))
        lines.append("")
    vers = {m.engine_version for m in records
            if m.engine_version and DESIGNS[m.design][0] == "sqlcipher"}
    if vers:
        lines.append("# SQLCipher " + ", ".join(sorted(vers)) + " (PBKDF2-HMAC-SHA512 256,000 "
                     "iterations from a passphrase at every open, 4 KiB pages, HMAC per page)")
    if any(DESIGNS[m.design][0] == "mmkv" for m in records):
        lines.append(f"# mmkv_model: {engines.MMKV_MODEL}; its durable time is an msync")
    lines.append("# What each design gives up:")
    for d in dict.fromkeys(m.design for m in records):
        lines.append(f"#   {d}: {GIVES_UP[d]}")
    lines.append("# Level: " + LEVEL_NOTE)
    warns = summarize_warnings([m.warnings for m in records], noun="rows")
    lines += [f"# WARNING {w}" for w in warns]
    return "\n".join(lines)


def budget_sentences(records: Sequence[DesignMeasurement], budget_ms: float) -> list[str]:
    """One sentence per case, computed from the data: which designs' 95% interval lies
    within ``budget_ms`` of blocked start-up time, and which only their median."""
    out = []
    cases: dict[tuple[Any, ...], list[DesignMeasurement]] = {}
    for m in records:
        cases.setdefault(tuple(sorted(m.params.items())), []).append(m)
    for group in cases.values():
        p = group[0].params
        kind = "cold" if p["cold"] else f"warm ({p['n_entries']:,} entries)"
        secret = ", no secret read" if p.get("sensitive_reads", 1) == 0 else ""
        out.append(f"{kind.capitalize()}, {p['n_reads']} reads{secret}: " + fit_words(group, budget_ms))
    return out


# -- a replayed preferences file (pycipherbench.replay)

#: Designs that encrypt every entry with authentication, the verdict's first choice.
AUTHENTICATED = ("esp", "esp_cache", "sqlcipher")
#: How to run the same replay on a phone (Termux), for the report's last line.
PHONE_NOTE = ("a phone is slower than this machine (its cores and its flash's fsync alike), and "
              "these figures are this machine's: run the same on the phone in Termux (pkg install "
              "python clang openssl pkg-config; pip install pycipherbench; pycipherbench store --from FILE)")

_PHASE_TITLES = {
    "first_launch": "first launch after the update: migration (open the plain file, read all, "
                    "create the store, write all, remove the plain file; tiered: the sensitive "
                    "entries moved; plain: nothing) + the reads",
    "cold_start": "a later cold start: open + the reads",
    "warm_start": "warm start: the reads on an open store",
    "apply": "one apply() of a typical write",
}


def _article(word: str) -> str:
    return "an" if word[:1] in ("a", "e", "i", "o", "u") else "a"


def _by_phase(records: Sequence[DesignMeasurement]) -> dict[str, list[DesignMeasurement]]:
    out: dict[str, list[DesignMeasurement]] = {}
    for m in records:
        out.setdefault(m.workload, []).append(m)
    return out


def replay_choice(records: Sequence[DesignMeasurement], budget_ms: float) -> str | None:
    """The design :func:`replay_verdict` names: among the designs that fit ``budget_ms`` at
    first launch and at cold start with their whole interval, the fastest at cold start
    that encrypts every entry with authentication (:data:`AUTHENTICATED`; of those the
    paired ratios cannot tell from the fastest, the one that gives up least, in that
    tuple's order), else the fastest that encrypts at all; None if none fits."""
    phases = _by_phase(records)
    first = {m.design: m for m in phases.get("first_launch", [])}
    cold = {m.design: m for m in phases.get("cold_start", [])}
    limit = budget_ms * 1e6
    fits = [d for d in cold if cold[d].ci[1] <= limit and (d not in first or first[d].ci[1] <= limit)]
    strong = [d for d in fits if d in AUTHENTICATED]
    encrypted = [d for d in fits if d not in ("plain", "sqlite")]
    pool = strong or encrypted
    if not pool:
        return None
    fastest = min(pool, key=lambda d: cold[d].median)
    if fastest not in AUTHENTICATED:
        return fastest
    # a design that gives up less (earlier in AUTHENTICATED) wins when the paired ratios
    # cannot tell it from the fastest
    for d in AUTHENTICATED:
        if d in pool:
            r = _ratio(cold[d], cold[fastest])
            if d == fastest or (not isinstance(r, str) and r.low <= 1.0):
                return d
    return fastest


def replay_verdict(records: Sequence[DesignMeasurement], budget_ms: float) -> str:
    """Which design, for this file on this machine (:func:`replay_choice`), and why, in
    words computed from the records: its first launch and cold start with their
    intervals, its paired ratio to plain SharedPreferences, the designs not told apart
    from it, or what it gives up."""
    phases = _by_phase(records)
    first = {m.design: m for m in phases.get("first_launch", [])}
    cold = {m.design: m for m in phases.get("cold_start", [])}
    if not cold:
        return "No cold start was measured: no verdict."
    pick = replay_choice(records, budget_ms)
    if pick is None:
        enc = [d for d in cold if d not in ("plain", "sqlite")]
        fastest = min(enc, key=lambda d: cold[d].median) if enc else None
        tail = (f"; the fastest encrypted one at cold start is {fastest} "
                f"({_ms(cold[fastest].median)})" if fastest else "")
        return (f"No encrypted design fits {budget_ms:g} ms at both first launch and cold start "
                f"with its whole interval on this machine{tail}.")
    c = cold[pick]
    s = (f"{pick} fits {budget_ms:g} ms at "
         + (f"first launch ({_ms(first[pick].median)} [{_ms(first[pick].ci[0])}, "
            f"{_ms(first[pick].ci[1])}]) and " if pick in first else "")
         + f"cold start ({_ms(c.median)} [{_ms(c.ci[0])}, {_ms(c.ci[1])}])")
    if "plain" in cold and pick != "plain":
        r = _ratio(c, cold["plain"])
        if not isinstance(r, str):
            s += f", {r.estimate:.2f}x plain SharedPreferences at cold start (paired)"
    if pick in AUTHENTICATED:
        others = [d for d in cold if d in AUTHENTICATED and d != pick
                  and cold[d].ci[1] <= budget_ms * 1e6
                  and (d not in first or first[d].ci[1] <= budget_ms * 1e6)]
        faster = [d for d in others if cold[d].median < c.median]
        tied = []
        for d in others:
            r = _ratio(cold[d], c)
            if not isinstance(r, str) and r.low <= 1.0:
                tied.append(f"{d} {r.estimate:.2f}x [{r.low:.2f}, {r.high:.2f}]")
        s += ("; of the designs that fit and encrypt every entry with authentication"
              + (f" ({', '.join([pick, *others])})" if others else "")
              + (" the fastest at cold start" if not faster else
                 f" the one that gives up least among those the paired ratios cannot tell from "
                 f"the fastest ({', '.join(faster)} by the median)"))
        s += (f"; not told apart from it: {', '.join(tied)}." if tied else ".")
    else:
        s += (f"; no design that encrypts every entry with authentication fits, and {pick} "
              f"gives up: {GIVES_UP[pick]}.")
    return s


def format_replay(result: Any, budget_ms: float | None = None) -> str:
    """The report of :func:`pycipherbench.replay.replay` (a ``ReplayResult``): the file
    and the workload made from it, one table per phase (blocked time with its interval,
    the paired ratio to plain SharedPreferences, durable time where a phase writes, the
    budget), the footprint, the budget sentences and the verdict, the machine."""
    if budget_ms is not None:
        SETTINGS["budget_ms"].check(budget_ms)  # declared with store --budget
    from ._machine import machine

    w, p = result.workload, result.records[0].params if result.records else {}
    lines = [f"# Replay of {result.prefs.summary()}",
             f"# names {'anonymized (random, same lengths)' if w.anonymized else 'kept'}; values "
             f"{'kept' if w.kept_values else 'random of the same type and size'}; start-up reads: "
             f"{len(w.reads)}" + (f" ({w.missing_reads} never set)" if w.missing_reads else "")
             + (f"; tiered: {len(w.sensitive)} sensitive names" if w.source != "esp-sizes" else
                "; tiered: no name is known (sealed), so none is sensitive")
             + f"; typical write: {_article(p.get('write_type', '?'))} {p.get('write_type', '?')} of "
             f"{p.get('write_bytes', 0):,} bytes; "
             f"{result.run.rounds} rounds, every design and phase interleaved"]
    phases = _by_phase(result.records)
    for phase, group in phases.items():
        base = next((m for m in group if m.design == "plain"), None)
        lines.append(f"## {_PHASE_TITLES.get(phase, phase)}")
        durable = phase in ("first_launch", "apply")
        startup = phase in ("first_launch", "cold_start")
        lines.append(_design_table(group, base, budget_ms if startup else None, durable=False,
                                   durable_ci=durable))
        lines.append("")
    cold = phases.get("cold_start", [])
    if cold:
        rows = [[m.design, f"{m.disk_bytes:,}", "-" if m.heap_bytes is None else f"{m.heap_bytes:,}"]
                for m in cold]
        lines.append("## footprint after a cold start (bytes; heap: the store's own, where the "
                     "engine reports it)")
        lines.append(format_table(["design", "disk", "heap"], rows))
        lines.append("")
    if budget_ms is not None:
        lines.append(f"# Budget {budget_ms:g} ms of blocked start-up time:")
        for phase in ("first_launch", "cold_start"):
            if phase in phases:
                lines.append(f"#   {phase.replace('_', ' ').capitalize()}: "
                             + fit_words(phases[phase], budget_ms))
        lines.append(f"# For this app on this machine: {replay_verdict(result.records, budget_ms)}")
    mach = machine()
    lines.append(f"# Machine: {mach['cpu_model']}, {mach['cores']} cores, {mach['platform']}; "
                 f"{mach['openssl_version']}")
    lines.append("# What each design gives up:")
    for d in dict.fromkeys(m.design for m in result.records):
        lines.append(f"#   {d}: {GIVES_UP[d]}")
    lines.append("# Level: " + LEVEL_NOTE)
    lines.append("# " + PHONE_NOTE[0].upper() + PHONE_NOTE[1:] + ".")
    if result.run.interrupted:
        lines.append(f"# Interrupted (Ctrl-C) after {result.run.rounds} rounds.")
    warns = summarize_warnings([m.warnings for m in result.records], noun="rows")
    lines += [f"# WARNING {x}" for x in warns]
    return "\n".join(lines)

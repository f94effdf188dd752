"""Results of a sweep: one Measurement per point, as NumPy/pandas/JSON/CSV, and comparisons.

A :class:`Results` holds, per point, the parameters that define it (``params``)
and its :class:`~pycipherbench.Measurement` with the raw samples. Rows are in
the sweep's grid order, whatever order the points ran in.

Missing parameters. A parameter that does not apply to a point (``rounds`` for
AES, ``iv_len`` outside GCM, ``cache`` for a plain store, ...) is absent from
that point's ``params`` dict. In :meth:`Results.to_numpy` it is filled with a
sentinel that depends on the column's type: ``""`` for strings, ``-1`` for
integers (every integer parameter is non-negative), NaN for floats; a boolean
column that has missing values becomes ``int8`` with 1/0 and -1 where it does
not apply (a boolean column without missing values stays ``bool``). pandas gets
``None`` instead (``to_pandas``), CSV an empty cell.
"""

from __future__ import annotations

import csv
import importlib
import json
import math
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np

from ._measure import Measurement, _ns

__all__ = [
    "Comparison",
    "DifferentMachinesError",
    "MannWhitney",
    "PointComparison",
    "Results",
    "load_results",
    "mann_whitney_u",
]

PathLike = str | os.PathLike[str]
FORMAT = "pycipherbench-results"
FORMAT_VERSION = 1
MISSING_INT = -1
#: Machine fingerprint fields that must agree before timings are comparable.
MACHINE_KEYS = ("cpu_model", "cpu_flags", "openssl_version")
METRICS = ("median", "iqr", "cv", "n_samples", "mb_per_s", "kb_per_ms", "ns_per_op",
           "cycles_per_byte")
STORE_METRICS = ("durable_median", "heap_bytes_per_entry", "disk_bytes_per_entry")


def point_key(params: dict[str, Any]) -> tuple[tuple[str, str, Any], ...]:
    """A hashable identity of a point: its parameters, order-free and type-aware (1 != True)."""
    return tuple(sorted((k, type(v).__name__, v) for k, v in params.items()))


class Results:
    """The points of a sweep: parameters, Measurements (raw samples) and the machine.

    ``len(r)`` is the number of points, iterating yields Measurements,
    ``r.params[i]`` is the parameter dict of ``r.measurements[i]``. ``complete``
    is False when a sweep was interrupted (Ctrl-C) before every point ran.
    """

    def __init__(
        self,
        target: str,
        params: Sequence[dict[str, Any]],
        measurements: Sequence[Measurement],
        *,
        machine: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        grid: dict[str, Any] | None = None,
        seed: int | None = None,
        complete: bool = True,
    ) -> None:
        if len(params) != len(measurements):
            raise ValueError(f"{len(params)} parameter dicts for {len(measurements)} measurements")
        self.target = target
        self.params: list[dict[str, Any]] = [dict(p) for p in params]
        self.measurements: list[Measurement] = list(measurements)
        if machine is None:
            if self.measurements:
                machine = self.measurements[0].machine
            else:
                from ._machine import machine as current

                machine = current()
        self.machine: dict[str, Any] = machine
        self.options: dict[str, Any] = dict(options or {})
        self.grid: dict[str, Any] = dict(grid or {})
        self.seed = seed
        self.complete = complete

    # -- container
    def __len__(self) -> int:
        return len(self.measurements)

    def __iter__(self) -> Iterator[Measurement]:
        return iter(self.measurements)

    def __getitem__(self, i: int) -> Measurement:
        return self.measurements[i]

    def items(self) -> Iterator[tuple[dict[str, Any], Measurement]]:
        """(params, Measurement) pairs."""
        return zip(self.params, self.measurements)

    @property
    def param_names(self) -> list[str]:
        """Every parameter name any point has, in order of first appearance."""
        names: dict[str, None] = {}
        for p in self.params:
            names.update(dict.fromkeys(p))
        return list(names)

    @property
    def swept(self) -> list[str]:
        """Parameters that take more than one value (or apply to only some points)."""
        out = []
        for name in self.param_names:
            values = {(type(p[name]).__name__, p[name]) if name in p else None for p in self.params}
            if len(values) > 1:
                out.append(name)
        return out

    def select(self, **params: Any) -> Results:
        """The points whose parameters include every given ``name=value``."""
        keep = [i for i, p in enumerate(self.params)
                if all(k in p and _same(p[k], v) for k, v in params.items())]
        return self._subset(keep)

    def one(self, **params: Any) -> Measurement:
        """The single Measurement whose parameters include every given ``name=value``."""
        found = self.select(**params)
        if len(found) != 1:
            raise LookupError(f"{len(found)} points match {params}, expected exactly one")
        return found.measurements[0]

    def _subset(self, idx: Iterable[int]) -> Results:
        idx = list(idx)
        return Results(self.target, [self.params[i] for i in idx], [self.measurements[i] for i in idx],
                       machine=self.machine, options=self.options, grid=self.grid, seed=self.seed,
                       complete=self.complete)

    def __repr__(self) -> str:
        state = "" if self.complete else ", incomplete"
        return (f"<Results {self.target}: {len(self)} points, swept {', '.join(self.swept) or 'nothing'}"
                f"{state}; {self.machine.get('cpu_model')}>")

    # -- tables
    def _metric_row(self, m: Measurement) -> dict[str, float | int]:
        cpb = m.cycles_per_byte
        has_bytes = m.payload > 0
        row: dict[str, float | int] = {
            "median": m.median, "iqr": m.iqr, "cv": m.cv, "n_samples": len(m.samples),
            "mb_per_s": m.mb_per_s if has_bytes else math.nan,
            "kb_per_ms": m.kb_per_ms if has_bytes else math.nan,
            "ns_per_op": m.ns_per_op,
            "cycles_per_byte": math.nan if cpb is None else cpb,
        }
        if self.target == "store":
            row["durable_median"] = float(m.extra.get("durable_median", math.nan))
            row["heap_bytes_per_entry"] = float(m.extra.get("heap_bytes_per_entry", math.nan))
            row["disk_bytes_per_entry"] = float(m.extra.get("disk_bytes_per_entry", math.nan))
        return row

    def metric_names(self) -> tuple[str, ...]:
        return METRICS + (STORE_METRICS if self.target == "store" else ())

    def to_numpy(self) -> np.ndarray:
        """A structured array, one row per point: parameters, then statistics.

        Statistics: ``median``, ``iqr`` (ns per operation), ``cv``, ``n_samples``,
        ``mb_per_s``, ``kb_per_ms`` (NaN when an operation carries no bytes),
        ``ns_per_op``, ``cycles_per_byte`` (TSC ticks; NaN without a TSC); store
        results add ``durable_median`` (ns, apply only), ``heap_bytes_per_entry``
        and ``disk_bytes_per_entry``. Missing parameters: see the module docstring.
        """
        names = self.param_names
        dtypes: list[tuple[str, Any]] = []
        columns: list[list[Any]] = []
        for name in names:
            dtype, fill = _param_dtype([p.get(name, _MISSING) for p in self.params])
            dtypes.append((name, dtype))
            columns.append([p.get(name, fill) for p in self.params])
        metrics = [self._metric_row(m) for m in self.measurements]
        for name in self.metric_names():
            dtypes.append((name, np.int64 if name == "n_samples" else np.float64))
            columns.append([row[name] for row in metrics])
        arr = np.zeros(len(self), dtype=dtypes)
        for (name, _), col in zip(dtypes, columns):
            arr[name] = col
        return arr

    def table(self) -> str:
        """The points as an aligned text table: parameters, median time per operation, IQR,
        CV, and throughput (cipher) or time until durable (store apply)."""
        names = self.param_names
        head = [*names, "median/op", "IQR", "CV"]
        cipher = self.target == "cipher"
        durable = any("durable_median" in m.extra for m in self)
        head += ["MB/s", "KB/ms"] if cipher else (["durable"] if durable else [])
        body = []
        for p, m in self.items():
            row = [_fmt(p.get(n)) for n in names] + [_ns(m.median), _ns(m.iqr), f"{m.cv:.1%}"]
            if cipher:
                row += [f"{m.mb_per_s:,.1f}", f"{m.kb_per_ms:,.1f}"]
            elif durable:
                row.append(_ns(m.extra["durable_median"]) if "durable_median" in m.extra else "-")
            body.append(row)
        return format_table(head, body)

    def to_pandas(self) -> Any:
        """A pandas DataFrame with the same columns as :meth:`to_numpy` (missing parameters: None)."""
        try:  # optional dependency; imported by name so that no pandas stubs are needed
            pd = importlib.import_module("pandas")
        except ImportError as e:
            raise ImportError("Results.to_pandas() needs pandas: pip install pandas "
                              "(or use Results.to_numpy())") from e
        names = self.param_names
        rows = [{**{n: p.get(n) for n in names}, **self._metric_row(m)} for p, m in self.items()]
        return pd.DataFrame(rows, columns=[*names, *self.metric_names()])

    def to_csv(self, path: PathLike) -> None:
        """One row per point (the columns of :meth:`to_numpy`); missing values are empty cells."""
        names = self.param_names
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow([*names, *self.metric_names()])
            for p, m in self.items():
                row = self._metric_row(m)
                w.writerow([_csv_cell(p.get(n)) for n in names]
                           + [_csv_cell(row[n]) for n in self.metric_names()])

    # -- files
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": FORMAT_VERSION, "target": self.target,
            "complete": self.complete, "seed": self.seed,
            "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": self.machine, "grid": self.grid,
            "options": {k: os.fspath(v) if isinstance(v, os.PathLike) else v
                        for k, v in self.options.items()},
            "points": [{"params": p, "measurement": m.to_dict()} for p, m in self.items()],
        }

    def save(self, path: PathLike) -> None:
        """Write JSON: machine fingerprint, grid, options, and every point with its raw samples.

        The file is replaced atomically, so a sweep saving after each point
        never leaves a truncated file behind.
        """
        path = os.fspath(path)
        fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json",
                                   dir=os.path.dirname(os.path.abspath(path)))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.to_dict(), f, indent=1)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    # -- comparison
    def compare(
        self,
        baseline: Results,
        *,
        alpha: float = 0.05,
        ignore: Sequence[str] = (),
        allow_different_machines: bool = False,
    ) -> Comparison:
        """Each point of these results against the same point of ``baseline``.

        Points are matched on their parameters (minus those named in ``ignore``,
        e.g. ``ignore=["hw_aes"]`` to compare an AES-on sweep with an AES-off
        one). Per point: ``speedup = baseline median / this median`` (> 1: these
        results are faster) and a two-sided Mann–Whitney U test on the raw
        samples: ``"faster"``/``"slower"`` when p < ``alpha`` (default 0.05),
        otherwise ``"no significant difference"``. With 3 samples a side the
        smallest possible p is 0.1, so nothing is ever significant: use
        ``repeats >= 4`` (7 by default) for a verdict.

        Raises :class:`DifferentMachinesError` when the machines differ in CPU
        model, crypto flags or OpenSSL version, unless ``allow_different_machines``.
        """
        diffs = machine_differences(self.machine, baseline.machine)
        if diffs and not allow_different_machines:
            raise DifferentMachinesError(
                "refusing to compare results from different machines ("
                + "; ".join(diffs) + "): their timings say as much about the machines as about "
                "the code. Pass allow_different_machines=True (CLI: --allow-different-machines) "
                "to compare anyway.")
        ignored = set(ignore)

        def index(r: Results) -> dict[tuple[Any, ...], int]:
            out: dict[tuple[Any, ...], int] = {}
            for i, p in enumerate(r.params):
                key = point_key({k: v for k, v in p.items() if k not in ignored})
                if key in out:
                    raise ValueError(f"two points share parameters {dict((k, v) for k, _, v in key)} "
                                     f"once {sorted(ignored)} are ignored; cannot match them")
                out[key] = i
            return out

        mine, theirs = index(self), index(baseline)
        rows = []
        for key, i in mine.items():
            if key not in theirs:
                continue
            a, b = self.measurements[i], baseline.measurements[theirs[key]]
            test = mann_whitney_u(a.samples, b.samples)
            if test.p_value < alpha:
                # U counts pairs where this sample is the larger (slower) one.
                verdict = "slower" if test.u > len(a.samples) * len(b.samples) / 2 else "faster"
            else:
                verdict = "no significant difference"
            rows.append(PointComparison(
                params={k: v for k, v in self.params[i].items() if k not in ignored},
                median=a.median, baseline_median=b.median, speedup=b.median / a.median,
                p_value=test.p_value, verdict=verdict, n=len(a.samples), n_baseline=len(b.samples)))
        only_mine = [self.params[i] for k, i in mine.items() if k not in theirs]
        only_theirs = [baseline.params[i] for k, i in theirs.items() if k not in mine]
        return Comparison(rows, alpha=alpha, unmatched=only_mine, unmatched_baseline=only_theirs,
                          machine_differences=diffs)


_MISSING = object()


def _same(a: Any, b: Any) -> bool:
    """Equal values, with bools kept apart from ints (True is not the payload 1)."""
    return bool(a == b) and isinstance(a, bool) == isinstance(b, bool)


def _param_dtype(values: list[Any]) -> tuple[Any, Any]:
    """(dtype, fill value for missing) of one parameter column; see the module docstring."""
    present = [v for v in values if v is not _MISSING]
    missing = len(present) < len(values)
    if present and all(isinstance(v, (bool, np.bool_)) for v in present):
        return (np.int8, MISSING_INT) if missing else (np.bool_, False)
    if present and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in present):
        return np.int64, MISSING_INT
    if present and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in present):
        return np.float64, math.nan
    width = max([len(str(v)) for v in present] + [1])
    return f"U{width}", ""


def _csv_cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return v


def machine_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Human-readable differences between two machine fingerprints in MACHINE_KEYS."""
    out = []
    for key in MACHINE_KEYS:
        va, vb = a.get(key), b.get(key)
        if key == "cpu_flags":
            sa, sb = set(va or ()), set(vb or ())
            if sa != sb:
                out.append(f"cpu_flags: only here {sorted(sa - sb)}, only in the baseline {sorted(sb - sa)}")
        elif va != vb:
            out.append(f"{key}: {va!r} vs {vb!r}")
    return out


class DifferentMachinesError(ValueError):
    """Raised by :meth:`Results.compare` for results taken on different machines."""


# -- loading
def _measurement_from_dict(d: dict[str, Any]) -> Measurement:
    names = {f.name for f in fields(Measurement)}
    kwargs = {k: v for k, v in d.items() if k in names}
    kwargs["samples"] = np.asarray(d["samples"], dtype=np.float64)
    tsc = d.get("tsc_samples")
    kwargs["tsc_samples"] = None if tsc is None else np.asarray(tsc, dtype=np.float64)
    kwargs.setdefault("extra", {})
    return Measurement(**kwargs)


def load_results(path: PathLike) -> Results:
    """Read a file written by :meth:`Results.save` (or by ``pycipherbench speed --json``)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") == FORMAT:
        if doc.get("version", 0) > FORMAT_VERSION:
            raise ValueError(f"{os.fspath(path)}: results format version {doc['version']} is newer "
                             f"than this pycipherbench reads ({FORMAT_VERSION}); upgrade pycipherbench")
        points = doc["points"]
        return Results(
            doc["target"], [p["params"] for p in points],
            [_measurement_from_dict(p["measurement"]) for p in points],
            machine=doc["machine"], options=doc.get("options"), grid=doc.get("grid"),
            seed=doc.get("seed"), complete=bool(doc.get("complete", True)))
    if "results" in doc and "machine" in doc:  # the speed command's --json file
        ms = [_measurement_from_dict(r) for r in doc["results"]]
        params = [{"transformation": m.transformation, "op": m.op, "payload": m.payload,
                   "hw_aes": m.hw_aes} for m in ms]
        return Results("cipher", params, ms, machine=doc["machine"])
    raise ValueError(f"{os.fspath(path)} is not a pycipherbench results file")


# -- statistics
class MannWhitney(NamedTuple):
    """Result of :func:`mann_whitney_u`: U of the first sample, two-sided p, how p was computed."""

    u: float
    p_value: float
    method: str  # "exact" or "normal"


#: Largest n1*n2 for which the exact null distribution is computed.
EXACT_LIMIT = 2500


def mann_whitney_u(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> MannWhitney:
    """Two-sided Mann–Whitney U test (Wilcoxon rank-sum), in NumPy.

    ``u`` counts the pairs (x_i, y_j) with x_i > y_j (ties count 1/2), so a
    small ``u`` means x tends to be smaller. Without ties and with
    n1*n2 <= 2500 the p-value is exact (the permutation distribution of U);
    otherwise it uses the normal approximation with the tie correction of the
    variance and a continuity correction of 0.5, as R's ``wilcox.test`` and
    SciPy's ``mannwhitneyu`` do.
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney_u needs at least one value in each sample")
    combined = np.concatenate([a, b])
    uniq, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
    # Mid-ranks: a tie group starting after `start` values gets start + (t + 1) / 2.
    start = np.cumsum(counts) - counts
    ranks = (start + (counts + 1) / 2.0)[inverse]
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    mu = n1 * n2 / 2.0
    ties = bool((counts > 1).any())
    if not ties and n1 * n2 <= EXACT_LIMIT:
        dist = _u_distribution(n1, n2)
        # Two-sided: twice the tail beyond the larger of U and n1*n2 - U (symmetry).
        big = int(round(max(u, n1 * n2 - u)))
        p = 2.0 * float(dist[big:].sum() / dist.sum())
        return MannWhitney(u, min(1.0, p), "exact")
    n = n1 + n2
    tie_term = float((counts.astype(np.float64) ** 3 - counts).sum())
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:  # every value equal: no evidence either way
        return MannWhitney(u, 1.0, "normal")
    z = (abs(u - mu) - 0.5) / math.sqrt(var)
    p = math.erfc(z / math.sqrt(2.0))  # = 2 * (1 - Phi(z))
    return MannWhitney(u, min(1.0, max(0.0, p)), "normal")


def _u_distribution(n1: int, n2: int) -> np.ndarray:
    """Counts of U = 0..n1*n2 over all arrangements of n1 x's and n2 y's (no ties).

    The largest value is an x (it beats all n y's: U shifts by n) or a y:
    f(m, n)[u] = f(m-1, n)[u-n] + f(m, n-1)[u]. Floats hold the counts
    (C(100, 50) overflows int64); relative error stays ~1e-16.
    """
    prev = [np.ones(1) for _ in range(n2 + 1)]  # m = 0
    for m in range(1, n1 + 1):
        cur = [np.ones(1)]  # n = 0
        for n in range(1, n2 + 1):
            f = np.zeros(m * n + 1)
            above = prev[n]
            f[n:n + len(above)] += above
            f[:len(cur[n - 1])] += cur[n - 1]
            cur.append(f)
        prev = cur
    return prev[n2]


# -- comparisons
@dataclass(frozen=True)
class PointComparison:
    """One matched point: medians in ns per operation, speedup, Mann–Whitney p and verdict."""

    params: dict[str, Any]
    median: float
    baseline_median: float
    speedup: float
    p_value: float
    verdict: str
    n: int
    n_baseline: int


class Comparison:
    """The result of :meth:`Results.compare`: matched points, and those without a partner."""

    def __init__(self, rows: list[PointComparison], *, alpha: float,
                 unmatched: list[dict[str, Any]], unmatched_baseline: list[dict[str, Any]],
                 machine_differences: list[str]) -> None:
        self.rows = rows
        self.alpha = alpha
        self.unmatched = unmatched
        self.unmatched_baseline = unmatched_baseline
        self.machine_differences = machine_differences

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[PointComparison]:
        return iter(self.rows)

    @property
    def param_names(self) -> list[str]:
        names: dict[str, None] = {}
        for r in self.rows:
            names.update(dict.fromkeys(r.params))
        return list(names)

    def to_numpy(self) -> np.ndarray:
        """Structured array: parameters, ``median``, ``baseline_median`` (ns), ``speedup``,
        ``p_value``, ``verdict``, ``n``, ``n_baseline``."""
        dtypes: list[tuple[str, Any]] = []
        columns: list[list[Any]] = []
        for name in self.param_names:
            dtype, fill = _param_dtype([r.params.get(name, _MISSING) for r in self.rows])
            dtypes.append((name, dtype))
            columns.append([r.params.get(name, fill) for r in self.rows])
        for name, dtype in (("median", np.float64), ("baseline_median", np.float64),
                            ("speedup", np.float64), ("p_value", np.float64), ("verdict", "U25"),
                            ("n", np.int64), ("n_baseline", np.int64)):
            dtypes.append((name, dtype))
            columns.append([getattr(r, name) for r in self.rows])
        arr = np.zeros(len(self.rows), dtype=dtypes)
        for (name, _), col in zip(dtypes, columns):
            arr[name] = col
        return arr

    def table(self) -> str:
        """The comparison as an aligned text table (what ``pycipherbench compare`` prints)."""
        names = self.param_names
        head = [*names, "baseline", "this", "speedup", "p", "verdict"]
        body = [[_fmt(r.params.get(n)) for n in names]
                + [_ns(r.baseline_median), _ns(r.median), f"{r.speedup:.3f}x",
                   f"{r.p_value:.3g}", r.verdict] for r in self.rows]
        lines = [format_table(head, body)]
        lines.append(f"speedup = baseline median / this median (> 1: faster); two-sided "
                     f"Mann-Whitney U on the raw samples, alpha = {self.alpha:g}")
        if self.unmatched or self.unmatched_baseline:
            lines.append(f"unmatched points: {len(self.unmatched)} only here, "
                         f"{len(self.unmatched_baseline)} only in the baseline")
        if self.machine_differences:
            lines.append("WARNING: different machines: " + "; ".join(self.machine_differences))
        return "\n".join(lines)

    __str__ = table


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def format_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned text columns separated by two spaces."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out)

"""Results of a sweep: one record per point, as NumPy/pandas/CSV/JSON, and comparisons.

A :class:`Results` holds, per point, the parameters that define it (``params``)
and its record with the raw samples: a :class:`~pycipherbench.Measurement` for
cipher sweeps, a :class:`~pycipherbench.store_bench.StoreMeasurement` for store
sweeps. Rows are in the sweep's grid order, whatever order the points ran in.

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
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ._format import format_cell, format_ns, format_table
from ._measure import Measurement
from ._output import write_json_atomic
from ._params import param_columns, param_names, same_value, structured_array
from ._record import Record
from .compare import Comparison, DifferentMachinesError, PointComparison
from .compare import compare as _compare
from .compare import ratios as _ratios
from .stats import MannWhitney, Ratio, mann_whitney_u, summarize_warnings
from .store_bench import StoreMeasurement

# Importable from here as before they moved: MISSING_INT, point_key, MACHINE_KEYS, machine_differences.
from ._params import MISSING_INT, point_key  # noqa: F401
from .compare import MACHINE_KEYS, machine_differences  # noqa: F401

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
#: 2: store points are StoreMeasurement dicts. 1 (still read): they were Measurement
#: dicts with made-up cipher fields and the store's results in "extra".
FORMAT_VERSION = 2
#: The kind of record each sweep target yields.
RECORD_TYPES: dict[str, type[Record]] = {"cipher": Measurement, "store": StoreMeasurement}


class Results:
    """The points of a sweep: parameters, records (raw samples) and the machine.

    ``len(r)`` is the number of points, iterating yields the records,
    ``r.params[i]`` is the parameter dict of ``r.measurements[i]``. ``complete``
    is False when a sweep was interrupted (Ctrl-C) before every point ran.
    """

    def __init__(
        self,
        target: str,
        params: Sequence[dict[str, Any]],
        measurements: Sequence[Record],
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
        self.measurements: list[Record] = list(measurements)
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

    def __iter__(self) -> Iterator[Record]:
        return iter(self.measurements)

    def __getitem__(self, i: int) -> Record:
        return self.measurements[i]

    def items(self) -> Iterator[tuple[dict[str, Any], Record]]:
        """(params, record) pairs."""
        return zip(self.params, self.measurements)

    @property
    def record_type(self) -> type[Record]:
        """The kind of record this target yields (Measurement, StoreMeasurement)."""
        return RECORD_TYPES.get(self.target, Record)

    @property
    def param_names(self) -> list[str]:
        """Every parameter name any point has, in order of first appearance."""
        return param_names(self.params)

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
                if all(k in p and same_value(p[k], v) for k, v in params.items())]
        return self._subset(keep)

    def one(self, **params: Any) -> Record:
        """The single record whose parameters include every given ``name=value``."""
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
    def metric_names(self) -> tuple[str, ...]:
        return self.record_type.METRICS

    def to_numpy(self) -> np.ndarray:
        """A structured array, one row per point: parameters, then statistics.

        Statistics: ``median``, ``iqr`` (ns per operation), ``cv``, ``n_samples``,
        ``mb_per_s``, ``kb_per_ms`` (NaN when an operation carries no bytes),
        ``ns_per_op``, ``cycles_per_byte`` (TSC ticks; NaN without a TSC); store
        results add ``durable_median`` (ns, apply only), ``heap_bytes_per_entry``
        and ``disk_bytes_per_entry``. Missing parameters: see the module docstring.
        """
        columns = param_columns(self.params)
        metrics = [m.metrics() for m in self.measurements]
        for name in self.metric_names():
            columns.append((name, np.int64 if name == "n_samples" else np.float64,
                            [row[name] for row in metrics]))
        return structured_array(columns, len(self))

    def table(self) -> str:
        """The points as an aligned text table: parameters, median time per operation and
        its 95% interval across rounds, CV, throughput (cipher) or time until durable (store
        apply), and a ``!`` where a point carries warnings (listed below the table)."""
        names = self.param_names
        extra = self.record_type.table_columns(self.measurements)
        levels = {m.ci_words.split(":")[0] for m in self.measurements if m.n_rounds > 1}
        # The column says what its intervals are (a coverage short of 95% too); a row whose
        # interval is another says so.
        column = levels.pop() if len(levels) == 1 else "interval"
        head = [*names, "median/op", column, "CV", *(title for title, _ in extra), ""]

        def interval(m: Record) -> str:
            if m.n_rounds < 2:
                return "none (1 round)"
            text = f"[{format_ns(m.ci[0])}, {format_ns(m.ci[1])}]"
            words = m.ci_words.split(":")[0]
            return text if words == column else f"{text} {words}"

        body = [[format_cell(p.get(n)) for n in names]
                + [format_ns(m.median), interval(m), f"{m.cv:.1%}"]
                + [cell(m) for _, cell in extra] + ["!" if m.warnings else ""]
                for p, m in self.items()]
        return format_table(head, body)

    @property
    def warnings(self) -> list[str]:
        """Every point's warnings, each distinct sentence once, prefixed with how many
        points carry it (empty when every point was stable)."""
        return summarize_warnings([m.warnings for m in self.measurements])

    def to_pandas(self) -> Any:
        """A pandas DataFrame with the same columns as :meth:`to_numpy` (missing parameters: None)."""
        try:  # optional dependency; imported by name so that no pandas stubs are needed
            pd = importlib.import_module("pandas")
        except ImportError as e:
            raise ImportError("Results.to_pandas() needs pandas: pip install pandas "
                              "(or use Results.to_numpy())") from e
        names = self.param_names
        rows = [{**{n: p.get(n) for n in names}, **m.metrics()} for p, m in self.items()]
        return pd.DataFrame(rows, columns=[*names, *self.metric_names()])

    def to_csv(self, path: PathLike) -> None:
        """One row per point (the columns of :meth:`to_numpy`); missing values are empty cells."""
        names = self.param_names
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow([*names, *self.metric_names()])
            for p, m in self.items():
                row = m.metrics()
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
        write_json_atomic(path, self.to_dict())

    # -- comparison
    def ratio(self, numerator: dict[str, Any], denominator: dict[str, Any]) -> Ratio | list[Ratio]:
        """How much slower the ``numerator`` points are than the ``denominator`` points
        (ratio of ns per operation; > 1: slower), with a 95% interval.

        The two sides are points of this sweep that differ only in the given
        parameters (``numerator={"key_encryption": "siv"}, denominator={"key_encryption":
        "none"}``). They were measured in the same rounds, interleaved, so each round
        gives one ratio in which whatever slowed the machine during that round cancels
        out: the estimate is the median of the per-round ratios. Its interval accounts
        for the worker processes the rounds ran in (each process's median ratio is one
        estimate; :func:`~pycipherbench.stats.paired_ratio`); a run in one process
        (``processes=1``, or a file of an older version) gets order statistics over its
        rounds, which cover that process only. ``significant`` means the interval
        excludes 1.

        Returns one :class:`~pycipherbench.stats.Ratio` when one pair matches, else a
        list (one per pair, ``params`` naming the other parameters).
        """
        found = _ratios(self, numerator, denominator)
        return found[0] if len(found) == 1 else found

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
        results are faster) with a 95% interval, and a verdict
        (:func:`~pycipherbench.stats.compare_rounds`): for runs over worker
        processes, Welch's t over the processes, called only when it holds both on
        the times and in canary units (each run's canary reads the machine's clock,
        which drifts between runs; the note says when the clock explains a
        difference); for runs in one process, a two-sided Mann–Whitney U test over
        the rounds guarded against the drift that shifts whole stretches of one run.
        ``"faster"``/``"slower"``, ``"no significant difference"``, or ``"too few
        rounds"`` when no verdict is possible at ``alpha`` with so few (3 a side,
        say). Runs at different times differ by whatever the machine was doing; to
        compare two variants, sweep them together and use :meth:`ratio`, which
        pairs their rounds.

        Raises :class:`DifferentMachinesError` when the machines differ in CPU
        model, crypto flags or OpenSSL version, unless ``allow_different_machines``.
        """
        return _compare(self, baseline, alpha=alpha, ignore=ignore,
                        allow_different_machines=allow_different_machines)


def _csv_cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return v


# -- loading
def _store_point_v1(d: dict[str, Any]) -> dict[str, Any]:
    """A version-1 store point (a Measurement dict with transformation="store/<workload>"
    and the store's results in "extra") as a StoreMeasurement dict."""
    extra = d.get("extra") or {}
    return {**d, "workload": d["op"], "params": extra["params"], "stages": extra.get("stages"),
            "heap_bytes": extra["heap_bytes"], "disk_bytes": extra["disk_bytes"],
            "entries": extra["entries"], "durable_samples": extra.get("durable_samples")}


def _results_from_doc(doc: dict[str, Any]) -> Results:
    record_type = RECORD_TYPES.get(doc["target"])
    if record_type is None:
        raise ValueError(f"unknown results target {doc['target']!r}")
    points = doc["points"]
    dicts = [p["measurement"] for p in points]
    if doc.get("version", 0) < 2 and record_type is StoreMeasurement:
        dicts = [_store_point_v1(d) for d in dicts]
    return Results(
        doc["target"], [p["params"] for p in points], [record_type.from_dict(d) for d in dicts],
        machine=doc["machine"], options=doc.get("options"), grid=doc.get("grid"),
        seed=doc.get("seed"), complete=bool(doc.get("complete", True)))


def load_results(path: PathLike) -> Results:
    """Read a file written by :meth:`Results.save` (or by ``pycipherbench speed --json``)."""
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{os.fspath(path)} is not a pycipherbench results file (not JSON: "
                             f"{e}); expected what sweep --out, speed --json or store --json "
                             "write") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{os.fspath(path)} is not a pycipherbench results file (JSON, but a "
                         f"{type(doc).__name__}, not an object)")
    if doc.get("format") == FORMAT:
        if doc.get("version", 0) > FORMAT_VERSION:
            raise ValueError(f"{os.fspath(path)}: results format version {doc['version']} is newer "
                             f"than this pycipherbench reads ({FORMAT_VERSION}); upgrade pycipherbench")
        return _results_from_doc(doc)
    if "results" in doc and "machine" in doc:  # the speed command's --json file
        ms = [Measurement.from_dict(r) for r in doc["results"]]
        params = [{"transformation": m.transformation, "op": m.op, "payload": m.payload,
                   "hw_aes": m.hw_aes} for m in ms]
        return Results("cipher", params, ms, machine=doc["machine"])
    raise ValueError(f"{os.fspath(path)} is not a pycipherbench results file")

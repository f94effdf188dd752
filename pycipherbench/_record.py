"""The record every timed result shares: raw samples, how they were taken, and on what machine.

:class:`Record` holds what the C timing engine reports for any workload
(nanoseconds per operation per sample, the operation count behind each sample,
the time-stamp counter, the calibration settings) and the statistics derived
from them. The kinds of result build on it with the parameters they really
have: :class:`~pycipherbench.Measurement` (a cipher kernel) and
:class:`~pycipherbench.store_bench.StoreMeasurement` (a store workload).

Samples are *rounds* (see :mod:`._rounds`): one calibrated sample per point per
round, the points of a run interleaved in a fresh random order each round, so
the spread between rounds covers the machine's slow periods and the interval
(:attr:`Record.ci`) is across rounds. A new kind of per-round data is a new
field here, listed in ``_ARRAYS`` if it is an array, so that JSON files keep it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

import numpy as np

from ._format import format_ns
from ._machine import machine

R = TypeVar("R", bound="Record")

#: A column of :meth:`Results.table`: its heading and how a record fills its cell.
TableColumn = tuple[str, Callable[[Any], str]]


@dataclass(frozen=True, repr=False, eq=False, kw_only=True)
class Record:
    """Raw rounds of one timed workload and their statistics.

    ``samples`` holds nanoseconds per operation, one value per round (each a
    sample of ``iterations`` operations timed back to back, calibrated to
    last ``min_time``); ``tsc_samples`` the same in time-stamp-counter ticks
    (None without a TSC). Per round also: ``cpu_fraction`` (this thread's CPU
    time over the sample's wall time: below 1 when it was preempted),
    ``nivcsw`` (involuntary context switches during the sample) and
    ``canary`` (ns per addition of the round's canary, a fixed dependent-add
    chain: it rises when the whole machine slows down). ``repeats`` is the
    number of rounds asked for. ``warnings`` are sentences about how far the
    machine let these numbers be trusted (empty when stable); ``ci`` is the
    95% interval of the median across rounds. ``payload`` is the bytes an
    operation processes (0 when it processes none). ``hw_aes`` is False when
    OpenSSL ran with AES-NI/PCLMULQDQ masked (``hw_mask`` says how).
    ``process`` holds the worker process (0-based) each round ran in, and
    ``processes`` how many the run was asked to use (1: this process); the interval
    accounts for both levels, rounds within processes and processes within the run.
    """

    payload: int
    hw_aes: bool
    min_time: float
    repeats: int
    iterations: int
    samples: np.ndarray
    tsc_samples: np.ndarray | None
    hw_mask: str | None = None
    cpu_fraction: np.ndarray | None = None
    nivcsw: np.ndarray | None = None
    canary: np.ndarray | None = None
    warnings: tuple[str, ...] = ()
    machine: dict[str, Any] = field(default_factory=machine)
    #: The run that measured every round of this record (a random id per run of
    #: rounds; a resumed sweep's new points get a new one). Two records pair round by
    #: round only when they share it. None: not recorded (files of older versions).
    run_id: str | None = None
    #: The worker process (0-based) of each round; None: one process (older files too).
    process: np.ndarray | None = None
    #: Worker processes the run was asked to use (1: this process, older files too).
    processes: int = 1
    #: This machine's speed between runs when this run ended (:mod:`._levels`): the robust
    #: SD of the log canary levels of its latest ``level_runs`` runs, this one included;
    #: None with too few recorded (or older files). It widens the interval over processes.
    level_sd: float | None = None
    level_runs: int = 0
    #: How far this run's level sat from their median level (log; > 0: its clock faster).
    level_shift: float | None = None

    #: Metric columns of :meth:`Results.to_numpy` for this kind of result.
    METRICS: ClassVar[tuple[str, ...]] = (
        "median", "ci_low", "ci_high", "iqr", "cv", "n_samples", "mb_per_s", "kb_per_ms",
        "ns_per_op", "cycles_per_byte")
    #: Fields holding arrays: NumPy in memory, lists in JSON.
    _ARRAYS: ClassVar[tuple[str, ...]] = ("samples", "tsc_samples", "cpu_fraction", "nivcsw",
                                          "canary", "process")

    # -- rounds
    @property
    def n_rounds(self) -> int:
        """Rounds measured (fewer than ``repeats`` if the run was interrupted). (Not
        ``rounds``: that is a TEA/XTEA measurement's cycle count.)"""
        return len(self.samples)

    def interval(self) -> Any:
        """The median's :class:`~pycipherbench.stats.Interval`: over the rounds of one
        process (order statistics), or over the worker processes and their rounds."""
        from .stats import median_interval

        return median_interval(self.samples, self.process, level_sd=self.level_sd,
                               level_runs=self.level_runs, level_shift=self.level_shift)

    @property
    def ci(self) -> tuple[float, float]:
        """95% interval of the median ns per operation. Over W >= 2 worker processes it
        accounts for both levels (:func:`~pycipherbench.stats.process_interval`) and, once
        this machine has a history of its clock, for where a usual run of it would be
        (:func:`~pycipherbench.stats.median_interval`, :mod:`._levels`); in one
        process it is from order statistics over the rounds and covers this process
        only (:func:`~pycipherbench.stats.median_ci`): with fewer than 6 rounds it
        cannot reach 95% and is the range of the rounds, whose coverage :attr:`ci_level`
        gives (and :attr:`ci_words`, the reprs, tables and JSON say)."""
        return self.interval().interval

    @property
    def ci_level(self) -> float:
        """The coverage :attr:`ci` attains: at least 0.95 with 6 or more rounds in one
        process, less below (3 rounds: 0.75, the range), 0 for a single round (no
        interval); over processes the nominal 0.95."""
        return float(self.interval().level)

    @property
    def ci_words(self) -> str:
        """What :attr:`ci` is, in words: ``"95% interval over 5 processes x 2 rounds and
        this machine's speed over 40 runs"`` (see :mod:`._levels`),
        ``"95% interval, this process only"``, ``"75% interval: the range of 3 rounds;
        95% needs 6"``, ``"no interval: 1 round"``."""
        return str(self.interval().words)

    @property
    def n_processes(self) -> int:
        """Worker processes the kept rounds ran in."""
        return 1 if self.process is None else len(np.unique(self.process))

    # -- statistics of ns per operation
    @property
    def median(self) -> float:
        """Median nanoseconds per operation."""
        return float(np.median(self.samples))

    @property
    def iqr(self) -> float:
        """Interquartile range of nanoseconds per operation."""
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float(q3 - q1)

    @property
    def cv(self) -> float:
        """Coefficient of variation (sample std / mean) of the samples; 0 for one sample."""
        if len(self.samples) < 2:
            return 0.0
        return float(np.std(self.samples, ddof=1) / np.mean(self.samples))

    @property
    def ns_per_op(self) -> float:
        return self.median

    @property
    def mb_per_s(self) -> float:
        """Throughput in 10^6 bytes per second (of plaintext)."""
        return self.payload / self.median * 1e3

    @property
    def kb_per_ms(self) -> float:
        """Throughput in KiB per millisecond, the seed article's unit."""
        return self.payload / 1024.0 / (self.median / 1e6)

    @property
    def cycles_per_byte(self) -> float | None:
        """Median TSC ticks per byte (reference ticks, not core cycles); None without a TSC."""
        if self.tsc_samples is None or self.payload <= 0:
            return None
        return float(np.median(self.tsc_samples)) / self.payload

    @property
    def samples_mb_per_s(self) -> np.ndarray:
        """Per-sample throughput in MB/s, for plots of spread."""
        return self.payload / self.samples * 1e3

    # -- tables
    def metrics(self) -> dict[str, float | int]:
        """The values of :attr:`METRICS` (NaN where one does not apply)."""
        cpb = self.cycles_per_byte
        has_bytes = self.payload > 0
        low, high = self.ci
        return {
            "median": self.median, "ci_low": low, "ci_high": high, "iqr": self.iqr, "cv": self.cv,
            "n_samples": len(self.samples),
            "mb_per_s": self.mb_per_s if has_bytes else math.nan,
            "kb_per_ms": self.kb_per_ms if has_bytes else math.nan,
            "ns_per_op": self.ns_per_op,
            "cycles_per_byte": math.nan if cpb is None else cpb,
        }

    @classmethod
    def table_columns(cls, records: Sequence[Record]) -> list[TableColumn]:
        """Columns this kind of result adds to a text table after median, IQR and CV."""
        return []

    # -- JSON
    def to_dict(self) -> dict[str, Any]:
        """Parameters, statistics and raw samples as JSON-serializable values."""
        return {
            "payload": self.payload, "hw_aes": self.hw_aes, "hw_mask": self.hw_mask,
            "min_time": self.min_time, "repeats": self.repeats, "iterations": self.iterations,
            "median": self.median, "ci": list(self.ci), "ci_level": self.ci_level,
            "iqr": self.iqr, "cv": self.cv, "ns_per_op": self.ns_per_op, "warnings": list(self.warnings),
            "mb_per_s": self.mb_per_s, "kb_per_ms": self.kb_per_ms,
            "cycles_per_byte": self.cycles_per_byte, "run_id": self.run_id,
            "processes": self.processes, "ci_words": self.ci_words,
            "level_sd": self.level_sd, "level_runs": self.level_runs,
            "level_shift": self.level_shift,
            **{name: _to_list(getattr(self, name)) for name in self._ARRAYS},
            "machine": self.machine,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls: type[R], d: dict[str, Any]) -> R:
        """The record :meth:`to_dict` wrote (derived statistics and unknown keys are ignored)."""
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in names}
        for name in cls._ARRAYS:
            value = d.get(name)
            kwargs[name] = None if value is None else np.asarray(value, dtype=np.float64)
        kwargs["warnings"] = tuple(d.get("warnings") or ())
        return cls(**kwargs)

    # -- display
    def _label(self) -> str:
        """What was measured, in a few words (the kinds of result say more)."""
        return f"{self.payload} B per operation"

    def _rates(self) -> str:
        """Throughput in the repr, where it means something."""
        return ""

    def _interval(self) -> str:
        """The interval and what it is (its coverage when short of 95%)."""
        if len(self.samples) < 2:
            return f"({self.ci_words})"
        low, high = self.ci
        return f"[{format_ns(low)}, {format_ns(high)}] ({self.ci_words})"

    def __repr__(self) -> str:
        cpb = self.cycles_per_byte
        warned = f"; {len(self.warnings)} warning(s): see .warnings" if self.warnings else ""
        return (
            f"<{type(self).__name__} {self._label()}: {self._rates()}"
            f"{format_ns(self.median)}/op {self._interval()}, CV {self.cv:.1%}"
            + (f", {cpb:.2f} TSC ticks/B" if cpb is not None else "")
            + f"; {len(self.samples)} rounds x {self.iterations} ops{warned}>"
        )

    def _html_rows(self) -> list[tuple[str, str]]:
        rows = [
            ("per op", f"{format_ns(self.median)}, {self._interval()} "
                       f"(IQR {format_ns(self.iqr)}, CV {self.cv:.1%})"),
            ("TSC ticks/byte", "n/a" if self.cycles_per_byte is None else f"{self.cycles_per_byte:.3f}"),
            ("rounds", f"{len(self.samples)} x {self.iterations} ops, min_time {self.min_time:g} s"),
            ("machine", f"{self.machine['cpu_model']}; {self.machine['openssl_version']}"),
        ]
        rows += [("warning", w) for w in self.warnings]
        return rows

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>"
                       for k, v in self._html_rows())
        return f"<table><caption>{self._label()}</caption>{body}</table>"


def _to_list(value: np.ndarray | None) -> list[float] | None:
    return None if value is None else value.tolist()


def per_operation(raw_ns: Sequence[float] | None, iterations: int) -> np.ndarray | None:
    """Per-sample totals the C engine reports (ns or ticks) as per-operation values."""
    return None if raw_ns is None else np.asarray(raw_ns, dtype=np.float64) / iterations

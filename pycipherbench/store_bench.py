"""The store benchmark harness: :func:`bench` and :func:`plan_bench` time the store's
workloads, and return a :class:`StoreMeasurement` (what :func:`~pycipherbench.sweep`
runs for ``"store"`` points).

The store's API is :mod:`pycipherbench.store`, which this harness times (in C through
``_core.StoreKernel``, or at the Python call through :mod:`pycipherbench.engine_bench`);
``store.bench``, ``store.plan_bench``, ``store.StoreMeasurement`` and
``store.StoreParams`` remain reachable there as well (the README's ``store.bench(...)``),
as these very objects.

>>> from pycipherbench import store_bench
>>> m = store_bench.bench("get", n_keys=1000)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypedDict, cast

import numpy as np

from . import _core, _options, engines
from ._format import count, format_ns
from ._options import Engine, KeyEncryption, Layout, Level, PathLike, ValueEncryption, ValueType, Workload
from ._record import Record, TableColumn
from ._rounds import (DEFAULT_ROUNDS, Plan, PointData, RunInfo, StorePoint, Workers,
                      record_fields, resolve_processes, run_one)
from .engine_bench import PyStorePoint, py_point
from .replay import replay  # an app's preferences file through every design (issue 29)

__all__ = ["StoreMeasurement", "StoreParams", "bench", "plan_bench", "replay"]


class StoreParams(TypedDict):
    """The parameters a store workload ran with (as passed to :func:`bench`)."""

    n_keys: int
    key_len: int
    value_len: int
    value_type: str
    batch: int
    encrypted: bool
    key_encryption: str
    value_encryption: str
    cache: bool
    layout: str
    faithful: bool
    passphrase: bool
    crypto_backend: str
    stages: bool


@dataclass(frozen=True, repr=False, eq=False, kw_only=True)
class StoreMeasurement(Record):
    """One timed store workload (what :func:`bench` returns).

    Besides the samples (ns per operation; ``payload`` is the value bytes an
    operation handles, 0 for ``get_missing``/``contains``/``open_cold``):
    ``workload`` and its ``params``; ``stages``, ns per operation in each
    stage of put/get (SIV, nonce, AEAD, Base64, lookup, I/O and the total,
    from a separate instrumented run; None for other workloads or with
    ``stages=False``); the footprint (``heap_bytes``, ``disk_bytes`` of a
    store of ``entries`` entries); and for ``apply`` ``durable_samples``, ns
    per operation until the background write landed; ``crypto``, the library
    that sealed the names and the values (``{"names": "floor", "values":
    "floor"}``: ``crypto_backend="auto"`` resolved; ``"none"`` for a part not
    encrypted; None where not timed by this package's C store).
    """

    workload: str
    params: StoreParams
    stages: dict[str, float] | None
    heap_bytes: int
    disk_bytes: int
    entries: int
    durable_samples: np.ndarray | None = None
    engine: str = "esp"
    level: str = "c"
    engine_version: str | None = None
    crypto: dict[str, str] | None = None

    METRICS: ClassVar[tuple[str, ...]] = (
        *Record.METRICS, "durable_median", "heap_bytes_per_entry", "disk_bytes_per_entry")
    _ARRAYS: ClassVar[tuple[str, ...]] = (*Record._ARRAYS, "durable_samples")

    @property
    def heap_bytes_per_entry(self) -> float:
        return self.heap_bytes / max(1, self.entries)

    @property
    def disk_bytes_per_entry(self) -> float:
        return self.disk_bytes / max(1, self.entries)

    @property
    def durable_median(self) -> float | None:
        """Median ns per operation until durable (``apply`` only; None otherwise)."""
        return None if self.durable_samples is None else float(np.median(self.durable_samples))

    @property
    def extra(self) -> dict[str, Any]:
        """The results as one dict, as pycipherbench 0.1 kept them in ``Measurement.extra``
        (a fresh copy each time: kept for code written against it)."""
        out: dict[str, Any] = {
            "params": dict(self.params), "stages": self.stages, "heap_bytes": self.heap_bytes,
            "disk_bytes": self.disk_bytes, "entries": self.entries,
            "heap_bytes_per_entry": self.heap_bytes_per_entry,
            "disk_bytes_per_entry": self.disk_bytes_per_entry,
        }
        if self.durable_samples is not None:
            out["durable_samples"] = self.durable_samples.tolist()
            out["durable_median"] = self.durable_median
        return out

    def metrics(self) -> dict[str, float | int]:
        durable = self.durable_median
        return {**super().metrics(), "durable_median": math.nan if durable is None else durable,
                "heap_bytes_per_entry": self.heap_bytes_per_entry,
                "disk_bytes_per_entry": self.disk_bytes_per_entry}

    @classmethod
    def table_columns(cls, records: Sequence[Record]) -> list[TableColumn]:
        """A ``durable`` column (time until durable) when some point is an ``apply``."""
        if not any(isinstance(m, StoreMeasurement) and m.durable_samples is not None for m in records):
            return []
        return [("durable", lambda m: "-" if m.durable_median is None else format_ns(m.durable_median))]

    def to_dict(self) -> dict[str, Any]:
        """Parameters, statistics, raw samples and the store's results as JSON-serializable values."""
        return {
            "workload": self.workload, "params": dict(self.params), **super().to_dict(),
            "stages": self.stages, "heap_bytes": self.heap_bytes, "disk_bytes": self.disk_bytes,
            "entries": self.entries, "heap_bytes_per_entry": self.heap_bytes_per_entry,
            "disk_bytes_per_entry": self.disk_bytes_per_entry, "durable_median": self.durable_median,
            "engine": self.engine, "level": self.level, "engine_version": self.engine_version,
            "crypto": self.crypto,
        }

    def _label(self) -> str:
        kind = "encrypted" if self.params["encrypted"] else "plain"
        hw = "" if self.hw_aes else ", hw AES off"
        if self.engine != "esp" or self.level != "c":
            ver = f" {self.engine_version}" if self.engine_version else ""
            return (f"{self.workload} ({kind} {self.engine}{ver} store, "
                    f"{count(self.params['n_keys'], 'entry')}, timed at the Python call)")
        ran = ""
        if self.crypto and set(self.crypto.values()) != {"none"}:
            ran = (f", {self.crypto['values']}" if self.crypto["names"] in (self.crypto["values"], "none")
                   else f", names on {self.crypto['names']}, values on {self.crypto['values']}")
        return f"{self.workload} ({kind} store, {count(self.params['n_keys'], 'entry')}{ran}{hw})"

    @classmethod
    def _from_rounds(cls, data: PointData, run: RunInfo, *, params: StoreParams, min_time: float,
                     repeats: int, hw_aes: bool, hw_mask: str | None) -> StoreMeasurement:
        info = data.info
        durable = None
        if info["workload"] == "apply":
            durable = np.asarray(data.extra.get("durable_ns", []), dtype=np.float64)
        return cls(
            workload=info["workload"], params=params, payload=int(info["payload"]), hw_aes=hw_aes,
            hw_mask=hw_mask, min_time=min_time, stages=info.get("stages"),
            heap_bytes=int(info["heap_bytes"]), disk_bytes=int(info["disk_bytes"]),
            entries=int(info["entries"]), durable_samples=durable,
            crypto={"names": info["names_crypto"], "values": info["values_crypto"]}
            if "names_crypto" in info else None,
            **record_fields(data, run, repeats=repeats),
        )


    @classmethod
    def _from_py_rounds(cls, data: PointData, run: RunInfo, *, point: PyStorePoint,
                        params: dict[str, Any], min_time: float,
                        repeats: int) -> StoreMeasurement:
        """The record of a point timed at the Python call (engine_bench's PyStorePoint)."""
        fields = record_fields(data, run, repeats=repeats)
        fields["tsc_samples"] = None  # no TSC at the Python call
        w = point.workload
        durable = None
        if w == "apply":
            durable = np.asarray(data.extra.get("durable_ns", []), dtype=np.float64)
        payload = 0 if w in ("get_missing", "contains", "open_cold", "open_warm") else \
            point.value_len * (point.batch if w in ("commit", "apply") else 1)
        return cls(
            workload=w, params=cast(StoreParams, params), payload=payload, hw_aes=True,
            hw_mask=None, min_time=min_time, stages=None, heap_bytes=0,
            disk_bytes=point.disk_bytes, entries=point.n_keys if w != "open_cold" else 0,
            durable_samples=durable, engine=point.engine, level="python",
            engine_version=engines.engine_version(point.engine), **fields)


def _check_engine(engine: Any, level: Any) -> None:
    import difflib

    for name, value, allowed in (("engine", engine, ("esp", "sqlcipher", "mmkv")),
                                 ("level", level, ("c", "python"))):
        if value not in allowed:
            close = difflib.get_close_matches(str(value), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{name} must be one of {list(allowed)}, not {value!r}{hint}")


@_options.keywords("bench", extra=("workers",))
def plan_bench(
    workload: Workload,
    *,
    n_keys: int = 1000,
    key_len: int = 32,
    value_len: int = 32,
    value_type: ValueType = "string",
    batch: int = 1,
    encrypted: bool = True,
    key_encryption: KeyEncryption = "siv",
    value_encryption: ValueEncryption = "gcm",
    cache: bool = False,
    layout: Layout = "entries",
    faithful: bool = False,
    passphrase: bool = False,
    crypto_backend: str = "auto",
    engine: Engine = "esp",
    level: Level = "c",
    hw_aes: bool = True,
    min_time: float = 0.05,
    repeats: int = DEFAULT_ROUNDS,
    warmup: float | None = None,
    stages: bool = True,
    directory: PathLike | None = None,
    workers: Workers | None = None,
) -> Plan:
    """A store workload point, checked, ready for :func:`~._rounds.run_plans` (what
    :func:`bench` and :func:`~pycipherbench.sweep` run)."""
    _options.check_bools("bench", _options.values("bench", locals()))
    _options.SETTINGS["n_keys"].check(n_keys)  # declared with store --n-keys
    params = _options.values("bench", locals(), point=True, kernel=True)  # what C takes
    try:
        _core.check_store_bench(workload, **params)  # fail fast on bad input
    except ValueError as e:  # a misspelled workload: the nearest one
        from ._names import explain_workload_error

        raise explain_workload_error(e, workload) from None
    warm = _options.timing_values(min_time, repeats, warmup)
    _core.check_timing(min_time, repeats, warm)
    if directory is not None and not os.path.isdir(directory):
        raise NotADirectoryError(f"directory={os.fspath(directory)!r} is not an existing directory")
    _check_engine(engine, level)
    if engine != "esp" or level == "python":  # timed at the Python call (issue 19)
        if not hw_aes:
            raise ValueError("hw_aes=False is timed in C only (engine='esp', level='c')")
        py = py_point(workload, engine, params, min_time=min_time, warmup=warm,
                      directory=None if directory is None else os.fspath(directory))
        placed = py if workers is None else workers.point(py)  # in the worker processes
        return Plan(placed, functools.partial(StoreMeasurement._from_py_rounds, point=py,
                                          params=dict(params, stages=False),
                                          min_time=min_time, repeats=repeats))
    if workers is None and not hw_aes:
        raise ValueError("hw_aes=False needs the run's workers (the masked child process)")
    factory, mask = (workers or Workers()).factory("StoreKernel", hw_aes)
    where = None if directory is None else os.fspath(directory)
    point = StorePoint(factory, workload, params, min_time, warm, stages, where)
    workload_params = cast(StoreParams, dict(params, stages=stages))
    build = functools.partial(StoreMeasurement._from_rounds, params=workload_params,
                              min_time=min_time, repeats=repeats, hw_aes=hw_aes, hw_mask=mask)
    return Plan(point, build)


@_options.keywords("bench", extra=("progress", "processes"))
def bench(
    workload: Workload,
    *,
    n_keys: int = 1000,
    key_len: int = 32,
    value_len: int = 32,
    value_type: ValueType = "string",
    batch: int = 1,
    encrypted: bool = True,
    key_encryption: KeyEncryption = "siv",
    value_encryption: ValueEncryption = "gcm",
    cache: bool = False,
    layout: Layout = "entries",
    faithful: bool = False,
    passphrase: bool = False,
    crypto_backend: str = "auto",
    engine: Engine = "esp",
    level: Level = "c",
    hw_aes: bool = True,
    min_time: float = 0.05,
    repeats: int = DEFAULT_ROUNDS,
    warmup: float | None = None,
    stages: bool = True,
    directory: PathLike | None = None,
    progress: bool = False,
    processes: int | None = None,
) -> StoreMeasurement:
    """Time one store workload in C, on a store of ``n_keys`` entries.

    Workloads: ``put`` (one editor put: the encryption ESP does at put time),
    ``get`` (a hit), ``get_missing``, ``contains``, ``all``, ``commit`` (``batch``
    puts + a durable commit), ``apply`` (``batch`` puts + apply: ``samples``
    is the time the caller is blocked, ``durable_samples`` the time until
    the background write has landed), ``open_cold`` (no master key yet: key
    generation and keyset creation), ``open_warm`` (open and load every
    entry), ``rotate`` (re-encrypt everything), ``rotate_lazy`` (``rotate(lazy=True)``:
    a new primary value key, the keysets rewritten, nothing re-encrypted; every 31st
    is preceded by an untimed full rotation, as a keyset holds at most 32 keys),
    ``migrate`` (first launch after the update, the article's ``migrateIfNeeded``: open
    the plain SharedPreferences file of ``n_keys`` entries, create the encrypted store
    and its keys, read all, write all with one durable commit, remove the plain file)
    and ``migrate_keys`` (the 1.1.0-alpha03 case: open the encrypted store with its
    old keys, create a new one under a new master key and new keysets in another
    directory, read all, write all, close both and rename the new file over the old).
    ``rotate`` re-encrypts in place: one atomic rewrite of the same file under the
    store's lock, keeping its master key; ``migrate_keys`` builds a second store from
    nothing (new master key and keysets, a second open) and replaces the file by a
    rename. Every migration starts from a fresh copy of the same file, written
    before the clock starts. Keys and string values are
    random ``[A-Za-z0-9]`` text of ``key_len``/``value_len`` characters, read in
    a random order. ``ns_per_op`` is per operation; the
    :class:`StoreMeasurement` also holds the parameters, the stage breakdown
    of put/get (ns per operation in SIV, nonce, AEAD, Base64, lookup, I/O,
    measured in a separate instrumented run) and the footprint (heap and disk
    bytes, per entry).

    Rounds: each of the ``repeats`` rounds builds a new instance (new random
    names, a new store), warms it up and calibrates it, and takes one sample,
    so the interval (``ci``) covers instance-to-instance variation as well as
    the machine's. Compare workloads or options with :func:`~pycipherbench.sweep`
    and :meth:`~pycipherbench.Results.ratio`, which pair their rounds. The rounds
    run in ``processes`` fresh worker processes one after another, as in
    :func:`~pycipherbench.measure` (default: up to 5, at least 2 rounds each; 1: this
    process, whose interval covers this process only); so do the points timed at the
    Python call, each built and calibrated once, in the first process, then rebuilt
    with that operation count in each fresh one.

    ``directory`` is where the store's files go (default: a new temporary
    directory, removed afterwards); fsync costs depend on its filesystem.
    ``hw_aes=False`` runs in a child process with AES-NI/PCLMULQDQ hidden.
    ``crypto_backend`` runs the entries' crypto on another library (see
    :func:`open`), to show how much of ESP's cost is the library's per-call
    overhead; it is a sweep dimension like the other options.

    ``engine="sqlcipher"`` times the real SQLCipher 4 library (``pip install
    "pycipherbench[peers]"``; one table of ESP's value encodings, SQLCipher's default
    settings; ``encrypted=False`` is plain SQLite), ``engine="mmkv"`` our C MODEL of
    MMKV's design (unauthenticated AES-128-CFB; see :mod:`pycipherbench.engines`), and
    ``level="python"`` times ESP the
    same way: at the Python call (``time.perf_counter_ns`` around the calls a program
    makes, call overhead included), since SQLCipher is reachable only through its Python
    binding. Compare those with each other in one sweep, not with C-level figures; the
    result says so (``level``, and SQLCipher's ``engine_version``). That level has
    put, get, get_missing, contains, commit, apply (ESP), open_warm and open_cold, string
    values, no stage breakdown and no heap figure (see :mod:`pycipherbench.engine_bench`).
    Ctrl-C stops the C level within about 0.1 s (samples and store builds check signals),
    the Python level within about ``min_time`` plus one store build.
    """
    with Workers(resolve_processes(processes, repeats)) as workers:
        p = plan_bench(workload, **_options.values("bench", locals()), workers=workers)
        m: StoreMeasurement = run_one(p, repeats, progress=progress, desc="store.bench",
                                      workers=workers)
    return m

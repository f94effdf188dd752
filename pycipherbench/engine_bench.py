"""Store workloads timed at the Python call, for every engine (issue 19).

What ``store.bench(workload, engine=..., level="python")`` runs: the same workloads as
the C kernel where the engine has the operation, timed with ``time.perf_counter_ns``
around the Python calls a program makes (call overhead included), because SQLCipher is
reachable only through its Python binding; ESP at this level is ``store.open`` driven
from Python, so the two compare at the same level in the same rounds. Each round builds
a new instance (a copy of the prepared store in a new directory), as the C points do.

Workloads (per operation): ``put`` (one ``Editor.put_string``; SQLCipher: one ``INSERT OR
REPLACE`` inside an open transaction, whose page encryption happens at COMMIT, so its
full write cost is ``commit``), ``get``, ``get_missing``, ``contains``, ``commit``
(``batch`` puts + a durable commit), ``apply`` (ESP: blocked time, ``durable_samples``
until written; SQLite has no apply: a durable COMMIT), ``open_warm`` (open an existing
store of ``n_keys`` entries: ESP loads every entry, SQLCipher derives its key and reads
page 1), ``open_cold`` (first launch: keys created, store created). String values only.
"""

from __future__ import annotations

import math
import os
import random
import resource
import shutil
import string
import tempfile
import time
from typing import Any

from . import _options
from . import engines
from ._rounds import PointData

__all__ = ["PY_WORKLOADS", "PyStorePoint", "py_point"]

#: The workloads this level has (the C kernel's all/rotate/rotate_lazy are ESP's alone).
PY_WORKLOADS = ("put", "get", "get_missing", "contains", "commit", "apply", "open_warm",
                "open_cold")
_MAX_OPS = 200_000


_ALPHABET = string.ascii_letters + string.digits


def random_text(rng: random.Random, n: int) -> str:
    """n random [A-Za-z0-9] characters (the C kernels' names and values)."""
    return "".join(rng.choices(_ALPHABET, k=n))


def nivcsw() -> int:
    """This thread's involuntary context switches so far (the process's where the
    platform has no RUSAGE_THREAD)."""
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    return int(resource.getrusage(who).ru_nivcsw)


class ScratchPoint:
    """What every point timed at the Python call shares (here and in
    :mod:`pycipherbench.designs`): a scratch directory made at prepare and removed at
    close, holding the prepared template store that each round copies, and how a
    sample is recorded. Subclasses set ``directory``, ``iterations`` and ``data``, and
    define :meth:`build` (the template), :meth:`calibrate` and :meth:`warm_up`.

    In a run over worker processes (:class:`~._rounds.Workers`), such a point lives in
    the current worker (:class:`~._rounds.InWorkerPoint`): the first worker builds and
    calibrates it, each later one builds its own template and warms up with the operation
    count of the first (:meth:`prepare_in_worker`), and only each round's figures cross
    the pipe (:meth:`sample_in_worker`), after the clock has stopped."""

    directory: str | None
    iterations: int
    data: PointData
    base: str | None = None
    template: str | None = None
    #: Attributes a worker's point reports back to the parent's copy (the records read them).
    MIRRORED: tuple[str, ...] = ("disk_bytes",)

    def build(self) -> None:
        """Makes the scratch directory and the prepared template store (untimed)."""
        raise NotImplementedError

    def calibrate(self) -> int:
        """The operation count of one sample of about ``min_time`` (its runs warm up too)."""
        raise NotImplementedError

    def warm_up(self) -> None:
        """One untimed operation (a later worker's warm-up, instead of calibrating again)."""
        raise NotImplementedError

    def prepare(self) -> None:
        self.build()
        self.iterations = self.calibrate()

    def sample(self, canary: float) -> None:
        raise NotImplementedError

    def _make_template(self, prefix: str) -> str:
        """A new scratch directory (in ``directory``) with an empty ``template`` in it."""
        self.base = tempfile.mkdtemp(prefix=prefix, dir=self.directory)
        self.template = os.path.join(self.base, "template")
        os.mkdir(self.template)
        return self.template

    def _record(self, blocked: int, durable: int, cpu: int, niv: int, call: int,
                canary: float) -> None:
        """One sample of ``iterations`` operations: ns blocked (the timed figure), until
        durable, of CPU, context switches, and the call's wall time (no TSC ticks at
        this level)."""
        self.data.extra.setdefault("durable_ns", []).append(durable / self.iterations)
        self.data.add((blocked, 0, cpu, niv, call), self.iterations, canary)

    # -- in a worker process (called by the parent's InWorkerPoint, one JSON line each)
    def mirrored(self) -> dict[str, Any]:
        """What the parent's copy takes over (:data:`MIRRORED`, and the data's info)."""
        return {"attrs": {name: getattr(self, name) for name in self.MIRRORED},
                "info": self.data.info}

    def prepare_in_worker(self, iterations: int | None) -> dict[str, Any]:
        """Builds the template; calibrates (``iterations`` None: the run's first worker)
        or warms up and takes the first worker's count. Returns the count, the scratch
        directory (the parent removes it if this worker is killed) and :meth:`mirrored`."""
        self.build()
        if iterations is None:
            self.iterations = self.calibrate()
        else:
            self.warm_up()
            self.iterations = int(iterations)
        return {"iterations": self.iterations, "base": self.base, **self.mirrored()}

    def sample_in_worker(self, canary: float) -> dict[str, Any]:
        """Takes one sample; returns the round's figures as the parent's PointData keeps them."""
        self.data.truncate(0)  # the parent keeps the rounds; this copy holds one at a time
        self.sample(canary)
        return {**self.data.last_round(), **self.mirrored()}

    def close(self) -> None:
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None


class PyStorePoint(ScratchPoint):
    """One engine's workload at the Python call: prepared once (a template store),
    a new copy per round, ``iterations`` operations timed per sample."""

    def __init__(self, engine: str, workload: str, *, n_keys: int, key_len: int,
                 value_len: int, batch: int, encrypted: bool, options: dict[str, Any],
                 min_time: float, warmup: float, directory: str | None) -> None:
        self.engine, self.workload, self.options = engine, workload, options
        self.n_keys, self.key_len, self.value_len, self.batch = n_keys, key_len, value_len, batch
        self.encrypted = encrypted
        self.min_time, self.warmup, self.directory = min_time, warmup, directory
        self.iterations = 1
        self.disk_bytes = 0
        self.data = PointData()
        self.data.info = {"workload": workload, "engine": engine}

    def _open(self, where: str) -> engines.Handle:
        return engines.open_engine(self.engine, where, encrypted=self.encrypted,
                                   options=self.options)

    def _names(self, rng: random.Random, n: int) -> list[str]:
        return [random_text(rng, self.key_len) for _ in range(n)]

    def build(self) -> None:
        template = self._make_template("pcb-engine-")
        rng = random.Random()
        self.names = self._names(rng, self.n_keys)
        self.value = random_text(rng, self.value_len)
        if self.workload != "open_cold":
            h = self._open(template)
            try:
                engines.fill(h, ((k, random_text(rng, self.value_len)) for k in self.names))
                h.flush()
            finally:
                h.close()
            self.disk_bytes = engines.disk_bytes(template)
        self.missing = self._names(rng, 1000)

    def calibrate(self) -> int:
        """Doubles until one sample lasts min_time (capped)."""
        n = 1
        while True:
            ns = self._sample(n)[0]
            if ns >= self.min_time * 1e9 or n >= _MAX_OPS:
                break
            n = min(_MAX_OPS, max(n * 2, math.ceil(n * self.min_time * 1e9 / max(ns, 1) * 1.2)))
        return n

    def warm_up(self) -> None:
        self._sample(1)

    def _sample(self, n: int) -> tuple[int, int, int, int]:
        """(blocked ns, durable ns, CPU ns, nivcsw) of n operations on a new copy."""
        assert self.base is not None and self.template is not None
        where = tempfile.mkdtemp(dir=self.base)
        try:
            if self.workload == "open_cold":
                return self._opens(where, n, cold=True)
            shutil.copytree(self.template, where, dirs_exist_ok=True)
            if self.workload == "open_warm":
                return self._opens(where, n, cold=False)
            h = self._open(where)
            try:
                return self._ops(h, n)
            finally:
                h.close()
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def _opens(self, where: str, n: int, *, cold: bool) -> tuple[int, int, int, int]:
        total = cpu = niv = 0
        for i in range(n):
            d = os.path.join(where, str(i)) if cold else where
            if cold:
                os.mkdir(d)
            n0, c0 = nivcsw(), time.thread_time_ns()
            t0 = time.perf_counter_ns()
            h = self._open(d)
            total += time.perf_counter_ns() - t0
            cpu += time.thread_time_ns() - c0
            niv += nivcsw() - n0
            h.close()
            if cold:
                shutil.rmtree(d, ignore_errors=True)
        return total, total, cpu, niv

    def _ops(self, h: engines.Handle, n: int) -> tuple[int, int, int, int]:
        w, names, value = self.workload, self.names, self.value
        picks = [names[i % len(names)] for i in random.sample(range(max(n, len(names))), n)] \
            if w in ("get", "contains") and names else []
        if w == "get_missing":
            picks = [self.missing[i % len(self.missing)] for i in range(n)]
        fresh = self._names(random.Random(), n if w == "put" else self.batch) \
            if w in ("put", "commit", "apply") else []
        ed = h.editor() if w == "put" else None
        n0, c0 = nivcsw(), time.thread_time_ns()
        t0 = time.perf_counter_ns()
        durable = 0
        if w == "get":
            for k in picks:
                h.get(k)
        elif w in ("get_missing",):
            for k in picks:
                h.get(k)
        elif w == "contains":
            for k in picks:
                h.contains(k)
        elif w == "put":
            assert ed is not None
            for k in fresh:
                ed.put_string(k, value)
        else:  # commit / apply: a batch per operation
            for _ in range(n):
                e = h.editor()
                for k in fresh:
                    e.put_string(k, value)
                if w == "commit":
                    e.commit()
                else:
                    e.apply()
        t1 = time.perf_counter_ns()
        if w == "apply":
            h.flush()
            durable = time.perf_counter_ns() - t0
        cpu, niv = time.thread_time_ns() - c0, nivcsw() - n0
        if ed is not None:
            ed.commit()  # untimed: the puts' transaction ends
        return t1 - t0, durable or (t1 - t0), cpu, niv

    def sample(self, canary: float) -> None:
        blocked, durable, cpu, niv = self._sample(self.iterations)
        self._record(blocked, durable, cpu, niv, blocked, canary)


def py_point(workload: str, engine: str, params: dict[str, Any], *, min_time: float,
             warmup: float, directory: str | None) -> PyStorePoint:
    """A Python-call-level point, checked (what :func:`~pycipherbench.store_bench.plan_bench`
    times for ``level="python"`` or an engine with only a Python binding; the record it
    makes of the rounds is store_bench's)."""
    if workload not in PY_WORKLOADS:
        raise ValueError(f"workload={workload!r} is not timed at the Python call "
                         f"(engine={engine!r}); the Python level has {list(PY_WORKLOADS)}")
    if params["value_type"] != "string":
        raise ValueError(f"the Python level times string values only, not "
                         f"value_type={params['value_type']!r}")
    if engine == "sqlcipher":
        engines._sqlcipher()  # the clear error naming the extra
        if workload == "apply":
            raise ValueError("engine='sqlcipher' has no apply() (SQLite commits durably): "
                             "time workload='commit'")
    declared = _options.for_call("bench")  # the defaults are the option table's, not restated
    defaults = {name: declared[name].default
                for name in ("key_encryption", "value_encryption", "cache", "layout", "faithful",
                             "passphrase", "crypto_backend")}
    options: dict[str, Any] = {}
    for name, default in defaults.items():
        if params[name] != default:
            if engine != "esp":
                raise ValueError(f"engine={engine!r} has no {name} option (got {params[name]!r})")
            if name == "passphrase":
                raise ValueError("passphrase=True is timed in C only (level='c')")
            options[name] = params[name]
    if engine == "esp" and not params["encrypted"]:
        options = {}
    point = PyStorePoint(engine, workload, n_keys=params["n_keys"], key_len=params["key_len"],
                         value_len=params["value_len"], batch=params["batch"],
                         encrypted=params["encrypted"], options=options, min_time=min_time,
                         warmup=warmup, directory=directory)
    return point

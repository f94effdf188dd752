"""Rounds: the unit of statistics.

A measurement is R rounds. In each round every point of a run (one point for
:func:`~pycipherbench.measure`, every point of a sweep) takes one calibrated
sample, in a freshly shuffled order, after a canary (a fixed chain of
dependent additions, timed in C) that tells how fast the machine was during
that round. Slow periods on shared machines last seconds: samples taken back
to back would all sit inside one, and their spread would say nothing about
the next run. Spreading every point over the whole run, and comparing points
round by round (:meth:`Results.ratio`), is what makes the numbers hold up.

A *point* knows how to prepare itself once and take one sample per round:
:class:`KernelPoint` calibrates a cipher kernel once and prepares a new instance
(buffers, keys) every round; :class:`StorePoint` builds a new store instance with
new random names every round: the spread covers instance-to-instance variation too.

Worker processes: the next process differs from this one (memory layout, hash seeds,
the frequency state it starts in), which rounds of one process cannot see. So a run's
rounds are spread over W fresh worker processes, one after another (:class:`Workers`,
:func:`process_schedule`): each holds the kernels of its rounds (:mod:`._hwaes`), runs
complete rounds of every point (the rounds still pair), and the points are calibrated
once, in the first. Points timed at the Python call live there too
(:class:`InWorkerPoint`): each fresh worker builds its own template store and warms up
with the first one's operation count. ``hw_aes=False`` points run in workers with the CPU's AES
instructions masked: the same mechanism. With W = 1 the kernels live in this process
(masked ones in one worker), and intervals cover this process only.

Ctrl-C: a sample runs in slices of about 0.1 s with Python's signal handlers
between them, outside its clocks (``csrc/common/timing.h``), so KeyboardInterrupt
arrives within about that whatever ``min_time`` is; an interrupted run keeps its
complete rounds only, so that the rounds of different points stay paired (and,
when no round completed, the first round's samples: :attr:`RunInfo.partial`). A
:class:`~._interrupt.SaveGuard` around a run keeps further Ctrl-C presses from
cutting the saving of those rounds.
"""

from __future__ import annotations

import math
import os
import random
import secrets
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from . import _core, _levels
from ._interrupt import interrupt_words, rounds_over
from ._options import SETTINGS
from ._progress import progress as progress_bar

#: Default rounds: ten give a 95% interval of the median between the 2nd and
#: 9th of the sorted rounds (97.9% coverage), and paired ratios that order
#: points differing by a few percent on a busy laptop.
DEFAULT_ROUNDS: int = SETTINGS["repeats"].default  # declared once, with --repeats
#: What the canary aims to last per round (seconds): long enough that its own
#: noise (timer ticks, interrupts) stays well below the slowdowns it is there to
#: see, short beside a round.
CANARY_TIME = 0.01

#: A new kernel instance warms up for 1/WARM_FRACTION of a sample before its sample.
WARM_FRACTION = 5

_canary_best: float | None = None  # ns per add: the best this process has seen


def canary_best() -> float | None:
    """The fastest canary (ns per dependent add) this process has measured."""
    return _canary_best


class Timed(Protocol):
    """What a point samples: a prepared kernel (``_core.Kernel``,
    ``_core.StoreKernel`` or a proxy of one in the masked child)."""

    def calibrate(self, min_time: float, warmup: float = ...) -> int: ...
    def sample(self, iterations: int, /) -> tuple[int, int, int, int, int]: ...
    def close(self) -> None: ...
    @property
    def info(self) -> dict[str, Any]: ...


class StoreTimed(Timed, Protocol):
    """A store workload instance also measures its stage breakdown."""

    def stages(self, iterations: int, /) -> dict[str, int]: ...


Factory = Callable[..., Any]  # returns a Timed (a StoreTimed for store points)


@dataclass
class PointData:
    """What one point collected: per round, ns and TSC ticks per operation,
    the thread's CPU share of the sample, its involuntary context switches
    and the canary of that round (ns per add)."""

    ns: list[float] = field(default_factory=list)
    tsc: list[float] = field(default_factory=list)
    cpu_fraction: list[float] = field(default_factory=list)
    nivcsw: list[float] = field(default_factory=list)
    canary: list[float] = field(default_factory=list)
    iterations: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, list[float]] = field(default_factory=dict)
    #: The point's kernels live in the run's worker processes (False: in this process,
    #: whose rounds then all count as one process's).
    in_workers: bool = False

    def add(self, sample: tuple[int, int, int, int, int], iterations: int, canary: float) -> None:
        elapsed, ticks, cpu, nivcsw, call = sample
        self.ns.append(elapsed / iterations)
        self.tsc.append(ticks / iterations)
        self.cpu_fraction.append(min(cpu / call, 1.0) if call > 0 else 1.0)
        self.nivcsw.append(float(nivcsw))
        self.canary.append(canary)
        self.iterations = iterations

    #: The per-round lists (a round's row, as a worker sends it: :meth:`last_round`).
    ROUND_FIELDS: ClassVar[tuple[str, ...]] = ("ns", "tsc", "cpu_fraction", "nivcsw", "canary")

    def truncate(self, rounds: int) -> None:
        """Keeps the first ``rounds`` rounds (an interrupted run drops its partial round)."""
        for name in self.ROUND_FIELDS:
            del getattr(self, name)[rounds:]
        for values in self.extra.values():
            del values[rounds:]

    def last_round(self) -> dict[str, Any]:
        """The latest round's figures, as plain lists (what a worker sends its parent)."""
        return {"row": [getattr(self, name)[-1] for name in self.ROUND_FIELDS],
                "extra": {name: values[-1] for name, values in self.extra.items() if values}}

    def add_round(self, figures: dict[str, Any], iterations: int) -> None:
        """Appends a round of :meth:`last_round` (taken in a worker process)."""
        for name, value in zip(self.ROUND_FIELDS, figures["row"], strict=True):
            getattr(self, name).append(value)
        for name, value in figures["extra"].items():
            self.extra.setdefault(name, []).append(value)
        self.iterations = iterations

    def arrays(self) -> dict[str, np.ndarray]:
        return {"samples": np.asarray(self.ns), "tsc_samples": np.asarray(self.tsc),
                "cpu_fraction": np.asarray(self.cpu_fraction), "nivcsw": np.asarray(self.nivcsw),
                "canary": np.asarray(self.canary)}


class KernelPoint:
    """A cipher kernel, calibrated once and sampled every round. Each round gets a new
    instance (new buffers at new addresses, new keys: a kernel's speed can depend on
    where its buffers landed, e.g. 4 KiB aliasing between input and output), warmed up
    briefly and sampled with the calibrated operation count, so that the interval covers
    instance-to-instance variation as well as the machine's."""

    def __init__(self, factory: Factory, args: dict[str, Any], min_time: float,
                 warmup: float) -> None:
        self.factory, self.args = factory, args
        self.min_time, self.warmup = min_time, warmup
        self.iterations = 0
        self.data = PointData(in_workers=isinstance(factory, InWorker))
        #: The calibration's final call (operations, sample): a sample of at least
        #: min_time, kept for a run interrupted before this point's first round sample.
        self.calibration: tuple[int, tuple[int, int, int, int, int]] | None = None

    def prepare(self) -> None:
        kernel = self.factory(**self.args)
        try:
            self.iterations = kernel.calibrate(self.min_time, self.warmup)
            self.data.info = dict(kernel.info)
            last = getattr(kernel, "last_sample", None)
            if last is not None:
                n, sample = last
                self.calibration = int(n), tuple(sample)  # type: ignore[assignment]
        finally:
            kernel.close()

    def single_sample(self, canary: float) -> None:
        """Ctrl-C before the first round sampled this point: its calibration's final call
        becomes its one sample (see :attr:`RunInfo.partial`)."""
        if not self.data.ns and self.calibration is not None:
            n, sample = self.calibration
            self.data.add(sample, n * int(self.args.get("threads", 1)), canary)

    def sample(self, canary: float) -> None:
        kernel = self.factory(**self.args)
        threads = int(self.args.get("threads", 1))
        try:
            kernel.sample(max(1, self.iterations // WARM_FRACTION))  # warm-up, not kept
            # threads=N: each of N threads ran `iterations` operations in the sample's time.
            self.data.add(kernel.sample(self.iterations), self.iterations * threads, canary)
            per_thread = getattr(kernel, "thread_ns", ()) if threads > 1 else ()
            if per_thread:
                self.data.extra.setdefault("thread_spread", []).append(
                    max(per_thread) / max(min(per_thread), 1))
                # How much of the sample's span (first thread's start to last one's end,
                # summed over slices) the shortest-running thread covered: near 1 when the
                # threads ran together, low when they started staggered or ran one after
                # another (a sample too short beside thread start-up).
                span = max(self.data_span(kernel), 1)
                self.data.extra.setdefault("thread_overlap", []).append(min(per_thread) / span)
                self.data.extra.setdefault("thread_stagger", []).append(
                    getattr(kernel, "thread_stagger_ns", 0) / span)
        finally:
            kernel.close()

    @staticmethod
    def data_span(kernel: Any) -> int:
        """The last sample's span in ns (its elapsed time: for threads, from the first
        thread's start to the last one's end, per slice, summed)."""
        last = getattr(kernel, "last_sample", None)
        return int(last[1][0]) if last else 0

    def close(self) -> None:
        pass


class StorePoint:
    """A store workload: a new instance (new random names, a new store) each round,
    warmed up and calibrated, sampled once, closed and removed."""

    def __init__(self, factory: Factory, workload: str, args: dict[str, Any], min_time: float,
                 warmup: float, stages: bool, directory: str | None) -> None:
        self.factory, self.workload, self.args = factory, workload, args
        self.min_time, self.warmup, self.stages = min_time, warmup, stages
        self.directory = directory
        self.base: str | None = None
        self.data = PointData(in_workers=isinstance(factory, InWorker))

    def prepare(self) -> None:
        self.base = tempfile.mkdtemp(prefix="pcb-store-", dir=self.directory)

    def sample(self, canary: float) -> None:
        assert self.base is not None
        where = tempfile.mkdtemp(dir=self.base)
        kernel: StoreTimed = self.factory(self.workload, directory=where, **self.args)
        try:
            n = kernel.calibrate(self.min_time, self.warmup)
            s = kernel.sample(n)
            info = dict(kernel.info)
            self.data.extra.setdefault("durable_ns", []).append(info["last_durable_ns"] / n)
            if not self.data.info:
                self.data.info = info
                if self.stages and self.workload in ("put", "get"):
                    self.data.info["stages"] = kernel.stages(min(n, 20000))
            self.data.add(s, n, canary)
        finally:
            kernel.close()
            shutil.rmtree(where, ignore_errors=True)

    def close(self) -> None:
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None


class Point(Protocol):
    data: PointData
    min_time: float

    def prepare(self) -> None: ...
    def sample(self, canary: float) -> None: ...
    def close(self) -> None: ...


@dataclass
class RunInfo:
    """How a run went: rounds completed, whether Ctrl-C stopped it, the
    machine's load when it ended, the seed of its shuffles."""

    rounds: int
    interrupted: bool
    loadavg: tuple[float, float, float] | None
    seed: int
    #: rounds == 0 but Ctrl-C came during the first round: the points sampled in it
    #: keep that one sample (``pycipherbench speed`` shows them, without an interval).
    partial: bool = False
    #: A random id of this run: the records it builds carry it (``Record.run_id``),
    #: and only records of one run pair round by round.
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))
    #: Worker processes the run was asked to use (1: this process).
    processes: int = 1
    #: The worker process (0-based, in run order) of each kept round.
    schedule: list[int] = field(default_factory=list)
    #: This machine's speed between runs (:mod:`._levels`): the robust SD of the log
    #: canary levels of its latest ``level_runs`` runs, this one included (None: fewer
    #: than :data:`._levels.MIN_RUNS` recorded, or no history kept).
    level_sd: float | None = None
    level_runs: int = 0
    #: How far this run's level sat from their median (log; > 0: this run's clock faster).
    level_shift: float | None = None


_canary_rate: float | None = None  # additions per ns, measured once per process


def _canary_iterations(points: Sequence[Point]) -> int:
    """Additions that make one canary sample last about CANARY_TIME, or as long as the
    shortest sample of the run when that is shorter (a tiny run stays tiny)."""
    global _canary_rate
    if _canary_rate is None:
        n = 100_000
        _canary_rate = n / max(_core.canary(n)[0], 1)
    seconds = min([CANARY_TIME, *(p.min_time for p in points)])
    return max(1000, int(_canary_rate * seconds * 1e9))


def _canary(n: int) -> float:
    global _canary_best
    ns = _core.canary(n)[0] / n
    if _canary_best is None or ns < _canary_best:
        _canary_best = ns
    return ns


#: A run projected to take longer than this (seconds) says so when it shows no progress bar.
LONG_RUN = 60.0


def _say_how_long(first_round: float, rounds: int, desc: str) -> None:
    """After the first round: a warning with the time the rest will take, when that is long
    (a large payload, a big store, many points) and no progress bar shows an ETA."""
    rest = first_round * (rounds - 1)
    if rest > LONG_RUN:
        warnings.warn(f"{desc}: the first of {rounds} rounds took {first_round:.0f} s; the rest "
                      f"will take about {rest / 60:.0f} min (Ctrl-C stops it, keeping the "
                      "complete rounds; progress=True shows an ETA)", stacklevel=4)


def run_rounds(points: Sequence[Point], rounds: int = DEFAULT_ROUNDS, *, seed: int | None = None,
               progress: bool = False, desc: str = "rounds",
               workers: Workers | None = None,
               on_round: Callable[[RunInfo], None] | None = None) -> RunInfo:
    """Prepares every point, then takes ``rounds`` rounds of one sample per point in a
    fresh random order each; closes the points. With ``workers`` of W processes the
    rounds run in W fresh worker processes one after another (:func:`process_schedule`),
    each running complete rounds of every point, so rounds still pair; the points are
    prepared (calibrated) once, in the first. KeyboardInterrupt ends the run with the
    complete rounds kept (``RunInfo.interrupted``); before the first round completed
    (while preparing, too), ``RunInfo.partial`` says the points keep one sample each
    where they have one (the first round's, else the calibration's final call).
    ``on_round``: called after each complete round but the last, with the run so far
    (the points' data then hold exactly that many rounds; a sweep saves them)."""
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 1 <= rounds <= 100_000:
        raise ValueError(f"rounds must be an int in [1, 100000], got {rounds!r}")
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    processes = workers.processes if workers is not None else 1
    if processes > rounds:
        raise ValueError(f"processes={processes} needs at least as many rounds, got {rounds}")
    schedule = process_schedule(rounds, processes)
    run_id = secrets.token_hex(4)  # one id for the run's records, also those built per round
    done, interrupted, prepared = 0, False, False
    canary: float | None = None  # the latest round's (None: no round began its canary yet)
    canaries: list[float] = []  # every round's, for this run's level (._levels)
    key = _levels.machine_key()
    past = _levels.earlier(key)

    def levels() -> dict[str, Any]:
        if _levels.path() is None:  # no history kept
            return dict(level_sd=None, level_runs=0)
        if not canaries:
            return dict(level_sd=None, level_runs=len(past))
        this = math.log(float(np.median(canaries)))
        logs = [*past, this]
        return dict(level_sd=_levels.spread(logs), level_runs=len(logs),
                    level_shift=_levels.shift(logs, this))

    try:
        n_canary = _canary_iterations(points)
        try:
            for p in points:
                p.prepare()
            prepared = True
        except KeyboardInterrupt:
            interrupted = True
            canary = _canary(n_canary)  # the machine's speed just after (single samples')
            for p in points:
                single = getattr(p, "single_sample", None)
                if single is not None:
                    single(canary)
        with progress_bar(rounds * len(points), enabled=progress and prepared) as bar:
            try:
                for r in range(rounds if prepared else 0):
                    if r and schedule[r] != schedule[r - 1] and workers is not None:
                        workers.next_process()  # a fresh process for the next rounds
                    t0 = time.monotonic()
                    canary = _canary(n_canary)
                    canaries.append(canary)
                    order = list(range(len(points)))
                    rng.shuffle(order)
                    for i in order:
                        bar.start(f"{desc}: round {r + 1}/{rounds}"
                                  + (f", process {schedule[r] + 1}/{processes}"
                                     if processes > 1 else ""))
                        points[i].sample(canary)
                        bar.done()
                    done = r + 1
                    if on_round is not None and done < rounds:
                        on_round(RunInfo(rounds=done, interrupted=False, loadavg=None, seed=seed,
                                         run_id=run_id, processes=processes,
                                         schedule=schedule[:done], **levels()))
                    if r == 0 and not progress:
                        _say_how_long(time.monotonic() - t0, rounds, desc)
            except KeyboardInterrupt:
                interrupted = True
                if done == 0 and canary is None:  # stopped in round 1's first canary
                    canary = _canary(n_canary)
                for p in points:  # points this round did not reach yet
                    single = getattr(p, "single_sample", None)
                    if single is not None and done == 0:
                        single(canary)
            finally:
                rounds_over()  # a SaveGuard now keeps further Ctrl-C until the results are saved
    finally:
        rounds_over()
        for p in points:
            p.close()
    partial = interrupted and done == 0
    for p in points:
        p.data.truncate(1 if partial else done)
    try:
        load: tuple[float, float, float] | None = os.getloadavg()
    except OSError:
        load = None
    if canaries:
        _levels.note(key, float(np.median(canaries)))
    return RunInfo(rounds=done, interrupted=interrupted, loadavg=load, seed=seed,
                   partial=partial and any(p.data.ns for p in points), run_id=run_id,
                   processes=processes, schedule=schedule[:1 if partial else done],
                   **levels())


@dataclass
class Plan:
    """A point to run and how to turn what it collected into a record."""

    point: Point
    build: Callable[[PointData, RunInfo], Any]


def record_fields(data: PointData, run: RunInfo, *, repeats: int) -> dict[str, Any]:
    """The :class:`~pycipherbench._record.Record` fields of a point's rounds: the
    per-round arrays, the operation count, and the instability warnings."""
    from .stats import instability_warnings, median_interval

    a = data.arrays()
    schedule = run.schedule if data.in_workers else [0] * len(run.schedule)
    process = np.asarray(schedule[:len(a["samples"])], dtype=np.float64)
    tsc = a["tsc_samples"] if _core.TSC_AVAILABLE and len(a["tsc_samples"]) else None
    notes: list[str] = []
    if run.partial:
        notes.append(f"a single sample: {interrupt_words()} came before the first round "
                     "finished, so there is no interval and nothing to pair")
    elif run.interrupted:
        notes.append(f"interrupted ({interrupt_words()}) after {run.rounds} of {repeats} rounds: "
                     "the interval is wider, and pairings fewer, than a full run's")
    if run.rounds and not run.partial:
        notes += instability_warnings(
            rounds_ns=a["samples"], cpu_ns=a["cpu_fraction"], wall_ns=np.ones(run.rounds),
            nivcsw=a["nivcsw"], canary_ns=a["canary"], canary_best_ns=canary_best(),
            loadavg=run.loadavg[0] if run.loadavg else None, cores=os.cpu_count(),
            ci=median_interval(a["samples"], process, level_sd=run.level_sd,
                               level_runs=run.level_runs, level_shift=run.level_shift).interval)
    return dict(samples=a["samples"], tsc_samples=tsc, cpu_fraction=a["cpu_fraction"],
                nivcsw=a["nivcsw"], canary=a["canary"], iterations=data.iterations,
                repeats=repeats, warnings=tuple(notes), run_id=run.run_id, process=process,
                processes=run.processes, level_sd=run.level_sd, level_runs=run.level_runs,
                level_shift=run.level_shift)


def run_plans(plans: Sequence[Plan], repeats: int, *, seed: int | None = None,
              progress: bool = False, desc: str = "rounds",
              workers: Workers | None = None,
              on_round: Callable[[list[Any], RunInfo], None] | None = None,
              ) -> tuple[list[Any], RunInfo]:
    """Runs the plans' points in interleaved rounds (in ``workers``' processes) and builds
    their records (``on_round``: also after each complete round but the last, with the
    records so far)."""
    from .stats import load_scipy_stats

    load_scipy_stats()  # before the rounds: building records after Ctrl-C must not wait for it
    each = None if on_round is None else (
        lambda info: on_round([p.build(p.point.data, info) for p in plans], info))
    run = run_rounds([p.point for p in plans], repeats, seed=seed, progress=progress, desc=desc,
                     workers=workers, on_round=each)
    if run.rounds == 0:
        return [], run
    return [p.build(p.point.data, run) for p in plans], run


def run_one(plan: Plan, repeats: int, *, progress: bool = False, desc: str = "rounds",
            workers: Workers | None = None) -> Any:
    """The record of one plan's rounds (what measure() and store.bench() return); Ctrl-C
    is re-raised, as a single measurement has nothing worth keeping."""
    records, run = run_plans([plan], repeats, progress=progress, desc=desc, workers=workers)
    if run.interrupted:
        raise KeyboardInterrupt
    return records[0]


#: Default worker processes of a run (``processes=None``): a run of ``repeats`` rounds
#: spreads them over up to this many fresh processes, at least
#: :data:`ROUNDS_PER_PROCESS` rounds each (10 rounds: 5 processes x 2 rounds), and over
#: no fewer than :data:`MIN_PROCESSES` (the spread of 2 process estimates says little:
#: fewer than 6 rounds run in this process, and say so).
DEFAULT_PROCESSES = 5
ROUNDS_PER_PROCESS = 2
MIN_PROCESSES = 3


def resolve_processes(processes: int | None, repeats: int, what: str = "processes") -> int:
    """The worker processes of a run of ``repeats`` rounds: ``processes`` checked, or for
    None the default (up to :data:`DEFAULT_PROCESSES`, at least :data:`ROUNDS_PER_PROCESS`
    rounds each, at least :data:`MIN_PROCESSES` or none). 1 runs in this process (its
    intervals cover this process only)."""
    if not isinstance(repeats, int) or isinstance(repeats, bool):
        SETTINGS["repeats"].check(repeats)  # a wrong kind: its own message, not a // error
    if processes is None:
        w = min(DEFAULT_PROCESSES, repeats // ROUNDS_PER_PROCESS)
        return w if w >= MIN_PROCESSES else 1
    SETTINGS["processes"].check(processes)  # the message --processes gives too
    if isinstance(repeats, int) and not isinstance(repeats, bool) and processes > repeats:
        raise ValueError(f"{what}={processes} needs at least as many rounds (repeats={repeats}): "
                         "every worker process runs complete rounds")
    return processes


def process_schedule(rounds: int, processes: int) -> list[int]:
    """The worker process (0-based) of each round, in run order: ``rounds`` split as
    evenly as possible, earlier processes taking the extra rounds."""
    base, extra = divmod(rounds, processes)
    return [w for w in range(processes) for _ in range(base + (w < extra))]


@dataclass(frozen=True)
class InWorker:
    """A factory of kernels built in whichever worker process of ``workers`` is current."""

    workers: Workers
    type_name: str
    hw_aes: bool

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.workers.new(self.type_name, self.hw_aes, *args, **kwargs)


class InWorkerPoint:
    """A point timed at the Python call (an ``engine_bench.ScratchPoint``: an engine's
    workload, a design's start-up, a replay phase) held in the run's current worker
    process: built and calibrated in the first, rebuilt with the same operation count
    (and warmed up) in each fresh one, so its rounds replicate over processes as a C
    kernel's do. ``point`` is the parent's copy: its data gets every round, and the
    attributes the records read (``disk_bytes``...) follow the worker's."""

    def __init__(self, workers: Workers, point: Any) -> None:
        self.workers, self.point = workers, point
        self.data: PointData = point.data
        self.data.in_workers = True
        self.min_time: float = point.min_time
        self._remote: tuple[Any, int] | None = None  # (worker process, handle)
        self._bases: list[str] = []  # the workers' scratch directories (one per worker so far)

    def _take(self, reply: dict[str, Any]) -> None:
        for name, value in reply["attrs"].items():
            setattr(self.point, name, value)
        self.data.info = dict(reply["info"])

    def _start(self) -> tuple[Any, int]:
        """The point in the current worker (built there once per worker)."""
        w = self.workers.worker(False)
        if self._remote is not None and self._remote[0] is w:
            return self._remote
        import base64
        import copy
        import pickle

        bare = copy.copy(self.point)  # without the rounds so far
        bare.data = PointData(info=dict(self.point.data.info))
        handle = w.call(None, "Point", base64.b64encode(pickle.dumps(bare)).decode("ascii"))
        self._remote = w, handle
        calibrated = bool(self._bases)  # by the run's first worker
        reply = w.call(handle, "prepare_in_worker", self.point.iterations if calibrated else None)
        self._bases.append(reply["base"])
        self.point.iterations = int(reply["iterations"])
        self._take(reply)
        return w, handle

    def prepare(self) -> None:
        self._start()

    def sample(self, canary: float) -> None:
        w, handle = self._start()
        reply = w.call(handle, "sample_in_worker", canary)
        self.data.add_round(reply, self.point.iterations)
        self._take(reply)

    def close(self) -> None:
        if self._remote is not None:
            w, handle = self._remote
            self._remote = None
            if not w.abandoned and w.running:
                try:
                    w.call(handle, "close")
                except RuntimeError:  # the worker failed or is gone: its scratch goes below
                    pass
        for base in self._bases:  # a worker killed by Ctrl-C could not remove its own
            shutil.rmtree(base, ignore_errors=True)
        self._bases.clear()


class Workers:
    """Where a run's kernels live: ``processes`` fresh worker processes, one after
    another (:class:`~._hwaes.WorkerProcess`), each holding the kernels of its rounds;
    or, with ``processes=1``, this process. ``hw_aes=False`` points always run in a
    worker with hardware AES masked: the same mechanism, so a run with W processes
    starts a fresh masked worker beside each fresh unmasked one. Calibration happens
    once, in the first worker (a point's operation count is kept across workers).

    :meth:`next_process` ends the current workers; the next kernel then starts
    fresh ones. ``started`` counts the worker processes started."""

    def __init__(self, processes: int = 1) -> None:
        self.processes = resolve_processes(processes, 1 << 30)
        self._current: dict[bool, Any] = {}  # masked? -> WorkerProcess
        self.started = 0
        #: Process ids of every worker started (tests check that none is left behind).
        self.pids: list[int] = []

    def worker(self, masked: bool) -> Any:
        """The current worker process (masked or not), started on first use."""
        w = self._current.get(masked)
        if w is None:
            from ._hwaes import WorkerProcess

            w = self._current[masked] = WorkerProcess(masked=masked)
            self.started += 1
            self.pids.append(w.pid)
        return w

    def new(self, type_name: str, hw_aes: bool, *args: Any, **kwargs: Any) -> Any:
        """A kernel of ``type_name`` built in the current worker process."""
        return self.worker(not hw_aes).new(type_name, *args, **kwargs)

    def point(self, point: Any) -> Any:
        """A point timed at the Python call (``engine_bench.ScratchPoint``), placed: in
        the worker processes (:class:`InWorkerPoint`), or as it is with ``processes=1``."""
        return point if self.processes == 1 else InWorkerPoint(self, point)

    def factory(self, type_name: str, hw_aes: bool) -> tuple[Factory, str | None]:
        """What builds a kernel type (``"Kernel"``, ``"StoreKernel"``, ``"PyKernel"``) for
        a point: here (``processes=1`` with hardware AES), else in whichever worker
        process is current when it is called; and the mask used for ``hw_aes=False``."""
        from ._hwaes import masked_environment

        mask = None if hw_aes else masked_environment()[1]
        if hw_aes and self.processes == 1:
            if type_name == "PyKernel":
                from ._pybackends import PyKernel

                return PyKernel, None
            return getattr(_core, type_name), None
        return InWorker(self, type_name, hw_aes), mask

    def next_process(self) -> None:
        """Ends the current worker processes: the next kernel starts fresh ones."""
        for w in self._current.values():
            w.close()
        self._current.clear()

    def close(self) -> None:
        self.next_process()  # a worker stopped by Ctrl-C was killed already: its pipes close

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

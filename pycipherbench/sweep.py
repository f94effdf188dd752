"""Parameter sweeps over cipher kernels and store workloads.

>>> import pycipherbench as pcb
>>> r = pcb.sweep("cipher", transformation=["AES/GCM/NoPadding", "TEA/ECB/NoPadding"],
...               payload=[16, 256, 4096], rounds=[16, 32], repeats=5)   # doctest: +SKIP
>>> r.to_numpy()["mb_per_s"]                                              # doctest: +SKIP

Grid rules. A list (or tuple, range, NumPy array) is swept: the points are the
cartesian product of all lists. A scalar parameter (``payload=4096``) is the
same for every point; timing options (``min_time``, ``repeats``, ``warmup``;
for the store also ``stages`` and ``directory``) pass through to every
measurement and are not point parameters. ``None`` in a list means the default.
A parameter that does not apply to a point is dropped from it, and points that
become equal are merged into one:

- cipher: ``rounds`` only for TEA/XTEA; ``iv_len`` only for AES/GCM; a
  ``key_bits`` the transformation does not take (256 for TEA) is dropped,
  or, when another listed size fits (``key_bits=[128, 256]``), that
  combination is skipped: TEA is measured once, at 128.
- store (each option's ``when``/``unless`` in ``pycipherbench/_options.py``): with
  ``encrypted=False`` the encryption options (``key_encryption``,
  ``value_encryption``, ``layout``, ``cache``, ``faithful``, ``passphrase``,
  ``hw_aes``, ``crypto_backend``) do not apply; ``key_encryption`` and
  ``crypto_backend`` not with ``layout="file"`` (the whole map is sealed, names
  included, by OpenSSL), ``crypto_backend`` not with ``faithful=True`` (ESP's
  per-call work is OpenSSL's); ``batch`` only for ``commit`` and
  ``apply``; ``value_len`` only for string and string-set values; ``open_cold``
  starts from an empty store, so ``n_keys``, ``key_len``, ``value_len`` and
  ``value_type`` do not apply to it.

A value that applies to no point at all is an error (a typo, or ``rounds``
with only AES in the grid). A point that stays invalid (a 100-byte payload for
AES/CBC/NoPadding) is an error before anything runs, unless
``skip_invalid=True`` drops it with a warning.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import os
import random
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from . import _core, _names, _options
from ._cost import PayloadCostWarning, payload_cost
from ._interrupt import SaveGuard, interrupt_words
from ._machine import machine
from ._measure import check_kernel, measure
from ._measure import plan as plan_kernel
from ._output import STDOUT, check_output, claim_output, release_output
from ._params import RUN_OPTIONS, point_key
from ._record import Record
from ._rounds import DEFAULT_ROUNDS, Plan, Workers, resolve_processes, run_plans
from .compare import machine_differences
from .results import PathLike, Results, load_results
from .store_bench import bench as store_bench
from .store_bench import plan_bench

__all__ = ["applies", "expand_grid", "run_points", "sweep"]

Target = Literal["cipher", "store"]

# The required first argument of measure() / store.bench().
SUBJECT = {"cipher": "transformation", "store": "workload"}


@functools.lru_cache(maxsize=None)
def _signature(target: str) -> dict[str, Any]:
    """Parameter names of the target's function, with their defaults."""
    fn = measure if target == "cipher" else store_bench
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()
            if name != "progress"}  # the sweep's own option, not a point parameter


@functools.lru_cache(maxsize=None)
def param_types(target: str) -> dict[str, Any]:
    """Each parameter's annotation (the declarations both the API's checks and the CLI's
    ``--param`` parser read: :func:`._options.check_value`, :func:`._options.parse_text`)."""
    import typing

    fn = measure if target == "cipher" else store_bench
    hints = typing.get_type_hints(fn)
    return {name: hints[name] for name in _signature(target)}


def check_run_options(options: dict[str, Any]) -> None:
    """The run settings' ranges (repeats, min_time, warmup), before anything is expanded:
    a bad one is the setting's error, not every point's."""
    min_time, repeats = options.get("min_time", 0.05), options.get("repeats", DEFAULT_ROUNDS)
    _core.check_timing(min_time, repeats,
                       _options.timing_values(min_time, repeats, options.get("warmup")))


def _check_target(target: str) -> None:
    if target not in SUBJECT:
        raise ValueError(f"target must be 'cipher' or 'store', not {target!r}")


def _family(transformation: str) -> str:
    """'TEA-ref/ECB/NoPadding' -> 'TEA'; 'AES/GCM/NoPadding' -> 'AES/GCM'."""
    alg, _, rest = transformation.upper().partition("/")
    alg = alg.removesuffix("-REF")
    return f"{alg}/{rest.split('/')[0]}" if alg == "AES" else alg


def applies(target: str, name: str, point: dict[str, Any]) -> bool:
    """Whether parameter ``name`` means anything for ``point`` (see the module docstring)."""
    defaults = _signature(target)

    def get(key: str) -> Any:
        return point.get(key, defaults.get(key))

    if target == "cipher":
        t = str(get("transformation"))
        if name == "rounds":
            return _family(t) in ("TEA", "XTEA")
        if name == "iv_len":
            return _family(t) == "AES/GCM"
        if name == "key_bits" and t.lower() in _canonical_names():  # else validation reports t
            try:
                _core.check_kernel(t, key_bits=point["key_bits"])
            except (ValueError, TypeError):
                return False
        return True
    # the store: each option's when/unless conditions (pycipherbench._options)
    return _options.applies(name, point)


@functools.lru_cache(maxsize=1)
def _canonical_names() -> dict[str, str]:
    return {name.lower(): name for name in _core.ciphers()}


def _plain(value: Any) -> Any:
    """NumPy scalars as Python ones (np.int64 from np.logspace(...).astype(int)): JSON-able."""
    return value.item() if isinstance(value, np.generic) else value


def _split(target: str, grid: dict[str, Any]) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Grid kwargs -> (point parameters as value lists, run options)."""
    _check_target(target)
    known = _signature(target)
    unknown = sorted(set(grid) - set(known))
    if unknown:
        hints = "".join(_names.nearest(u, known).replace("; did you mean", f"; {u}: did you mean")
                        for u in unknown)
        raise TypeError(f"unknown {target} parameter(s) {', '.join(unknown)}{hints}; "
                        f"known: {', '.join(known)}")
    subject = SUBJECT[target]
    if subject not in grid:
        raise TypeError(f"a {target} sweep needs {subject}= (a name or a list of names)")
    lists: dict[str, list[Any]] = {}
    options: dict[str, Any] = {}
    for name, value in grid.items():
        is_list = isinstance(value, (list, tuple, range, np.ndarray))
        if name == "repeats" and is_list:
            raise ValueError("repeats is the number of rounds of the whole sweep (every point "
                             "takes one sample per round): give one number, not a list")
        if name in RUN_OPTIONS[target] and not is_list:
            options[name] = _plain(value)
            continue
        values = [_plain(v) for v in value] if is_list else [_plain(value)]
        if not values:
            raise ValueError(f"{name}= is an empty list: nothing to sweep")
        if target == "cipher" and name == "transformation":  # aliases folded: one point
            values = list(dict.fromkeys(_names.canonical(v) or v for v in values))
        for v in values:  # None in a list: the default
            if v is not None:
                _options.check_value(name, v, param_types(target)[name])
        lists[name] = values
    for name, v in options.items():
        if name not in _options.SETTINGS:  # those: by their declaration, as the flags are
            _options.check_value(name, v, param_types(target)[name])
    check_run_options(options)
    return lists, options


def _expand(target: str, lists: dict[str, list[Any]]) -> list[dict[str, Any]]:
    names = list(lists)
    points: dict[tuple[Any, ...], dict[str, Any]] = {}
    used: set[tuple[str, str, Any]] = set()
    for combo in itertools.product(*(lists[n] for n in names)):
        full = {n: v for n, v in zip(names, combo) if v is not None}  # None = the default
        point = {n: v for n, v in full.items() if applies(target, n, full)}
        # A dropped value whose parameter takes another listed value here (key_bits=256 for
        # TEA, with 128 also listed) is covered by that combo: skip rather than duplicate it.
        if any(applies(target, n, {**full, n: w}) for n in full.keys() - point.keys()
               for w in lists[n] if w is not None):
            continue
        used.update((n, type(v).__name__, v) for n, v in point.items())
        points.setdefault(point_key(point), point)
    for name in names:
        for v in lists[name]:
            if v is not None and (name, type(v).__name__, v) not in used:
                raise ValueError(f"{name}={v!r} applies to none of the points in this sweep "
                                 f"(see pycipherbench.sweep's grid rules)")
    return list(points.values())


def expand_grid(target: Target, **grid: Any) -> list[dict[str, Any]]:
    """The points a sweep would measure, in grid order (non-applicable parameters dropped,
    duplicates merged); run options such as ``repeats`` are accepted and left out."""
    lists, _ = _split(target, grid)
    return _expand(target, lists)


def _validate(target: str, point: dict[str, Any], options: dict[str, Any]) -> None:
    """Raise what measure()/store.bench() would raise for this point, without measuring."""
    kwargs = {k: v for k, v in {**options, **point}.items()
              if k not in ("hw_aes", "directory", "min_time", "repeats", "warmup", "stages")}
    hw = point.get("hw_aes", True)
    if not isinstance(hw, bool):
        raise TypeError(f"hw_aes must be a bool, not {type(hw).__name__}")
    timing = {**options, **point}
    min_time, repeats = timing.get("min_time", 0.05), timing.get("repeats", DEFAULT_ROUNDS)
    _core.check_timing(min_time, repeats,
                       _options.timing_values(min_time, repeats, timing.get("warmup")))
    if target == "cipher":
        check_kernel(kwargs.pop("transformation"), "sweep", **kwargs)
    else:  # the point parameters the C kernel takes
        if point.get("engine") == "sqlcipher":  # its extra missing: one ImportError saying so
            from .engines import _sqlcipher

            _sqlcipher()
        c_params = _options.for_call("kernel")
        workload = kwargs.pop("workload")
        try:
            _core.check_store_bench(workload, **{k: v for k, v in kwargs.items()
                                                 if k in c_params and not c_params[k].run})
        except ValueError as e:
            raise _names.explain_workload_error(e, workload) from None


def _plan(target: str, point: dict[str, Any], options: dict[str, Any], workers: Workers) -> Plan:
    kwargs = {k: v for k, v in {**options, **point}.items()
              if (v is not None or k != "warmup") and k != "processes"}
    if target == "cipher":
        return plan_kernel(kwargs.pop("transformation"), **kwargs, workers=workers)
    return plan_bench(kwargs.pop("workload"), **kwargs, workers=workers)


def _label(point: dict[str, Any]) -> str:
    return " ".join(str(v) if isinstance(v, str) else f"{k}={v}" for k, v in point.items())


def _prior_results(target: str, resume_path: PathLike | None) -> Results | None:
    """The results a resumed sweep starts from (None: nothing to resume), checked to fit."""
    if resume_path is None or not os.path.exists(resume_path):
        return None
    prior = load_results(resume_path)
    if not prior.grid:  # speed --json, store --json: not a sweep to continue
        raise ValueError(f"cannot resume {os.fspath(resume_path)}: it holds no sweep (no grid; "
                         "a speed --json or store --json file?): resume continues the file a "
                         "sweep wrote (--out), so write a new file")
    if prior.target != target:
        raise ValueError(f"{os.fspath(resume_path)} holds a {prior.target} sweep, not {target}")
    diffs = machine_differences(machine(), prior.machine)
    if diffs:
        raise ValueError(f"cannot resume {os.fspath(resume_path)}: it was measured on another "
                         f"machine ({'; '.join(diffs)})")
    return prior


def _check_resume_options(path: PathLike | None, prior: Results, options: dict[str, Any]) -> None:
    """A resumed sweep keeps the file's round count (and min_time, when both name one):
    points of 3 and 10 rounds in one file would not compare, and could not pair."""
    before = prior.options.get("repeats", DEFAULT_ROUNDS)
    now = options.get("repeats", DEFAULT_ROUNDS)
    if before != now:
        raise ValueError(f"cannot resume {os.fspath(path or '')} with repeats={now}: its points "
                         f"were measured with repeats={before}, and one file holds one round "
                         f"count (resume with repeats={before}, or write a new file)")
    before, now = prior.options.get("processes", 1), options.get("processes", 1)
    if before != now:  # a file of an older version ran in one process
        raise ValueError(f"cannot resume {os.fspath(path or '')} with processes={now}: its points "
                         f"were measured in {before} worker process(es), and one file holds one "
                         f"kind of interval (resume with processes={before}, or write a new file)")
    for name in ("min_time", "warmup"):
        a, b = prior.options.get(name), options.get(name)
        if a is not None and b is not None and a != b:
            raise ValueError(f"cannot resume {os.fspath(path or '')} with {name}={b}: its points "
                             f"were measured with {name}={a} (resume with {name}={a}, or write "
                             "a new file)")


def _merged_grid(prior: Results | None, grid: dict[str, Any] | None) -> dict[str, Any]:
    """The grid of a resumed sweep: the earlier one, with this one's new values appended."""
    merged = dict(prior.grid) if prior else {}
    for k, v in (grid or {}).items():
        old = merged.get(k, [])
        merged[k] = old + [x for x in v if x not in old] if isinstance(v, list) else v
    return merged


def run_points(
    target: Target,
    points: Sequence[dict[str, Any]],
    options: dict[str, Any] | None = None,
    *,
    seed: int | None = None,
    progress: bool = True,
    out: PathLike | None = None,
    resume: bool | PathLike = False,
    grid: dict[str, Any] | None = None,
    resume_hint: str = "resume=True",
    force: bool = False,
    processes: int | None = None,
) -> Results:
    """Measure explicit points (already expanded) in interleaved rounds; see :func:`sweep`.
    ``resume_hint``: how the interrupted-run message says to resume (the CLI: --resume)."""
    _check_target(target)
    if out is not None and os.fspath(out) == STDOUT:
        raise ValueError("out='-' is the command line's standard output; the API returns the "
                         "Results (print(json.dumps(r.to_dict())) writes them there)")
    options = dict(options or {})
    repeats = options.get("repeats", DEFAULT_ROUNDS)
    options["processes"] = resolve_processes(processes, repeats)  # recorded in the Results
    if resume is True and out is None:
        raise ValueError("resume=True resumes into out=: give out=path (or resume=path)")
    resume_path = out if resume is True else (resume or None)
    prior = _prior_results(target, resume_path)
    if prior is not None:
        _check_resume_options(resume_path, prior, options)
    if out is None and resume_path is not None:
        out = resume_path  # resume into the file we read
    if out is not None:  # before measuring: a run must not end in a write that fails
        check_output(out, what="out=", keep_existing=not (force or prior is not None),
                     override="resume=True to continue it, force=True")
    done: dict[tuple[Any, ...], tuple[dict[str, Any], Record]] = {}
    if prior is not None:  # only points with every round: partial ones are measured again
        done = {point_key(p): (p, m) for p, m in prior.items() if m.n_rounds >= repeats}
    _options.SETTINGS["seed"].check(seed)
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    todo = [p for p in points if point_key(p) not in done]
    merged_grid = _merged_grid(prior, grid)

    def collect(complete: bool) -> Results:
        keys = [point_key(p) for p in points]
        rows = [done[k] for k in keys if k in done]
        planned = set(keys)
        rows += [pm for k, pm in done.items() if k not in planned]  # earlier points kept
        return Results(target, [p for p, _ in rows], [m for _, m in rows], machine=machine(),
                       options=options, grid=merged_grid, seed=seed, complete=complete)

    if out is not None:
        claim_output(out, what="out=")  # a second writer of this file is refused
    try:
        with SaveGuard():  # a second Ctrl-C does not cut the saving of the complete rounds
            return _run_and_save(target, todo, points, options, repeats, seed, progress, out,
                                 done, collect, resume_hint)
    finally:
        if out is not None:
            release_output(out)


def _run_and_save(target: Target, todo: list[dict[str, Any]], points: Sequence[dict[str, Any]],
                  options: dict[str, Any], repeats: int, seed: int, progress: bool,
                  out: PathLike | None, done: dict[tuple[Any, ...], tuple[dict[str, Any], Record]],
                  collect: Callable[[bool], Results], resume_hint: str) -> Results:
    """The rounds of the points still to measure, then the results collected and saved
    (``resume_hint``: how the interrupted-run message says to resume)."""
    interrupted = False
    run = None
    if todo:
        with Workers(options["processes"]) as workers:
            plans = [_plan(target, p, options, workers) for p in todo]

            def save_round(records: list[Record], info: Any) -> None:
                """Every complete round is on disk (a killed run keeps them)."""
                if out is not None:
                    kept = dict(done)
                    done.update({point_key(p): (p, m) for p, m in zip(todo, records)})
                    try:
                        collect(False).save(out)
                    finally:
                        done.clear()
                        done.update(kept)

            try:
                records, run = run_plans(plans, repeats, seed=seed, progress=progress,
                                         desc=f"{target} sweep, {len(todo)} points",
                                         workers=workers, on_round=save_round)
            except KeyboardInterrupt:  # while preparing: nothing measured
                records, run = [], None
                interrupted = True
        interrupted = interrupted or (run is not None and run.interrupted)
        for p, m in zip(todo, records):
            done[point_key(p)] = (p, m)
    results = collect(not interrupted)
    if out is not None:
        results.save(out)
    earlier = [m.run_id for _, m in done.values() if run is None or m.run_id != run.run_id]
    kept_runs = set(earlier)
    if todo and earlier and run is not None and run.rounds:
        # Said exactly: a resumed file holds points of several runs, and only points of
        # one run pair round by round (Results.ratio refuses the others, naming the runs).
        print(f"resumed: {len(earlier)} points kept from earlier runs "
              f"({', '.join(sorted(str(k) for k in kept_runs))}), {len(todo)} measured now in run "
              f"{run.run_id}; ratios pair points of one run only", file=sys.stderr)
    if interrupted:
        kept = f"{run.rounds} of {repeats} rounds of every point" if run and run.rounds else "nothing"
        again = f" ({resume_hint} measures it again)" if resume_hint else ""
        where = f"; saved to {os.fspath(out)}{again}" if out is not None else ""
        who = "pycipherbench.sweep" if resume_hint == "resume=True" else "the run"
        print(f"{who} interrupted ({interrupt_words()}): kept {kept}{where}", file=sys.stderr)
    return results


def cost_of(target: str, points: Sequence[dict[str, Any]], options: dict[str, Any]) -> str:
    """What the cipher points' large payloads cost ('' when none is large; raises
    PayloadCostError when their buffers exceed half the RAM): see :mod:`._cost`."""
    if target != "cipher":
        return ""
    defaults = _signature("cipher")
    return payload_cost([(p.get("payload", defaults["payload"]), p.get("threads", 1))
                         for p in points], options.get("repeats", DEFAULT_ROUNDS),
                        what="payload", transformations=[str(p["transformation"]) for p in points])


def sweep(
    target: Target,
    *,
    seed: int | None = None,
    progress: bool = True,
    out: PathLike | None = None,
    resume: bool | PathLike = False,
    skip_invalid: bool = False,
    resume_hint: str = "resume=True",
    force: bool = False,
    processes: int | None = None,
    **grid: Any,
) -> Results:
    """Measure every point of a parameter grid; returns :class:`~pycipherbench.Results`.

    Rounds: every point is prepared once (cipher kernels: buffers, keys and the
    operation count calibrated; store points build a new store instance every
    round), then each of the ``repeats`` rounds (default 10) takes one sample of
    every point, in a fresh random order. A slow period of the machine thus
    hits every point alike, and :meth:`Results.ratio` of two points pairs their
    rounds. Intervals (``ci``) are across rounds; ``warnings`` say when the
    machine was too unstable for the precision shown.

    Args:
        target: ``"cipher"`` (parameters of :func:`~pycipherbench.measure`) or
            ``"store"`` (parameters of :func:`pycipherbench.store_bench.bench`, also ``store.bench``).
        **grid: a list sweeps a parameter (cartesian product of all lists), a
            scalar fixes it; ``min_time``, ``repeats``, ``warmup`` (store: also
            ``stages``, ``directory``) pass through to every measurement.
            Non-applicable parameters are dropped per point (module docstring).
        seed: seeds the shuffled run order (default: random, recorded in the Results).
        progress: a progress bar with ETA on stderr.
        out: save the results here after every complete round, at the end, and when
            interrupted (atomic JSON, see Results.save). An existing file is kept (a
            ValueError) unless ``force`` or ``resume``; a file another run is writing
            is refused, naming its pid; a device or FIFO is refused.
        force: replace an existing ``out`` file.
        resume: ``True`` continues ``out``, a path continues that file (and saves
            into it unless ``out`` is given): points it already holds are skipped
            and kept. A missing file starts a new sweep.
        skip_invalid: drop points the target rejects (with a warning) instead of
            raising before anything runs.
        processes: fresh worker processes the rounds run in, one after another, each
            running complete rounds of every point (so rounds still pair), the points
            calibrated once (default: up to 5, at least 2 rounds each; 1: this process,
            whose intervals cover this process only). Recorded in the Results
            (``options["processes"]``); a resumed sweep must use the file's.

    Ctrl-C (KeyboardInterrupt) stops the sweep within about 0.1 s and
    returns every point with the rounds completed so far (``complete=False``;
    saved to ``out``; a resumed sweep measures incomplete points again).
    """
    lists, options = _split(target, grid)
    points = _expand(target, lists)
    valid, invalid = [], []
    for p in points:
        try:
            _validate(target, p, options)
            valid.append(p)
        except (ValueError, TypeError) as e:
            invalid.append((p, e))
    if invalid and not skip_invalid:
        shown = "\n".join(f"  {_label(p)}: {e}" for p, e in invalid[:5])
        more = f"\n  ... and {len(invalid) - 5} more" if len(invalid) > 5 else ""
        raise ValueError(f"{len(invalid)} of {len(points)} points are invalid (skip_invalid=True, "
                         f"CLI --skip-invalid, drops them):\n{shown}{more}")
    if invalid:
        warnings.warn(f"skipping {len(invalid)} invalid point(s), e.g. {_label(invalid[0][0])}: "
                      f"{invalid[0][1]}", stacklevel=2)
    note = cost_of(target, valid, options)
    if note:
        warnings.warn(note, PayloadCostWarning, stacklevel=2)
    return run_points(target, valid, options, seed=seed, progress=progress, out=out,
                      resume=resume, grid=lists, resume_hint=resume_hint, force=force,
                      processes=processes)

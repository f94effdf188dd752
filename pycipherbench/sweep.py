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
- store: with ``encrypted=False`` the encryption options (``key_encryption``,
  ``value_encryption``, ``layout``, ``cache``, ``faithful``, ``passphrase``,
  ``hw_aes``) do not apply; ``key_encryption`` not with ``layout="file"``
  (the whole map is sealed, names included); ``batch`` only for ``commit`` and
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
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from . import _core
from ._machine import machine
from ._measure import measure
from ._params import point_key
from ._progress import progress as progress_bar
from ._record import Record
from .compare import machine_differences
from .results import PathLike, Results, load_results
from .store import bench as store_bench

__all__ = ["applies", "expand_grid", "run_points", "sweep"]

Target = Literal["cipher", "store"]

# Options that shape how a point is timed, not what it measures.
RUN_OPTIONS: dict[str, tuple[str, ...]] = {
    "cipher": ("min_time", "repeats", "warmup"),
    "store": ("min_time", "repeats", "warmup", "stages", "directory"),
}
# The required first argument of measure() / store.bench().
SUBJECT = {"cipher": "transformation", "store": "workload"}
_STORE_CRYPTO = ("key_encryption", "value_encryption", "layout", "cache", "faithful",
                 "passphrase", "hw_aes")


@functools.lru_cache(maxsize=None)
def _signature(target: str) -> dict[str, Any]:
    """Parameter names of the target's function, with their defaults."""
    fn = measure if target == "cipher" else store_bench
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()}


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
                _core.measure(t, key_bits=point["key_bits"], check_only=True)
            except (ValueError, TypeError):
                return False
        return True
    workload = get("workload")
    if name in _STORE_CRYPTO and get("encrypted") is False:
        return False
    if name == "key_encryption" and get("layout") == "file":
        return False
    if name == "batch":
        return workload in ("commit", "apply")
    if name == "value_len" and get("value_type") not in ("string", "string_set"):
        return False
    if workload == "open_cold" and name in ("n_keys", "key_len", "value_len", "value_type"):
        return False
    return True


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
        raise TypeError(f"unknown {target} parameter(s) {', '.join(unknown)}; "
                        f"known: {', '.join(known)}")
    subject = SUBJECT[target]
    if subject not in grid:
        raise TypeError(f"a {target} sweep needs {subject}= (a name or a list of names)")
    lists: dict[str, list[Any]] = {}
    options: dict[str, Any] = {}
    for name, value in grid.items():
        is_list = isinstance(value, (list, tuple, range, np.ndarray))
        if name in RUN_OPTIONS[target] and not is_list:
            options[name] = _plain(value)
            continue
        values = [_plain(v) for v in value] if is_list else [_plain(value)]
        if not values:
            raise ValueError(f"{name}= is an empty list: nothing to sweep")
        if target == "cipher" and name == "transformation":
            canon = _canonical_names()
            values = [canon.get(str(v).lower(), v) for v in values]
        lists[name] = values
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
    kwargs = {k: v for k, v in {**options, **point}.items() if k not in ("hw_aes", "directory")}
    hw = point.get("hw_aes", True)
    if not isinstance(hw, bool):
        raise TypeError(f"hw_aes must be a bool, not {type(hw).__name__}")
    if "warmup" in kwargs and kwargs["warmup"] is None:
        del kwargs["warmup"]
    if target == "cipher":
        _core.measure(kwargs.pop("transformation"), **kwargs, check_only=True)
    else:
        _core.store_bench(kwargs.pop("workload"), **kwargs, check_only=True)


def _run_one(target: str, point: dict[str, Any], options: dict[str, Any]) -> Record:
    kwargs = {**options, **point}  # a run option swept as a list is a point parameter
    if target == "cipher":
        return measure(kwargs.pop("transformation"), **kwargs)
    return store_bench(kwargs.pop("workload"), **kwargs)


def _label(point: dict[str, Any]) -> str:
    return " ".join(str(v) if isinstance(v, str) else f"{k}={v}" for k, v in point.items())


def _prior_results(target: str, resume_path: PathLike | None) -> Results | None:
    """The results a resumed sweep starts from (None: nothing to resume), checked to fit."""
    if resume_path is None or not os.path.exists(resume_path):
        return None
    prior = load_results(resume_path)
    if prior.target != target:
        raise ValueError(f"{os.fspath(resume_path)} holds a {prior.target} sweep, not {target}")
    diffs = machine_differences(machine(), prior.machine)
    if diffs:
        raise ValueError(f"cannot resume {os.fspath(resume_path)}: it was measured on another "
                         f"machine ({'; '.join(diffs)})")
    return prior


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
) -> Results:
    """Measure explicit points (already expanded) in a shuffled order; see :func:`sweep`."""
    _check_target(target)
    options = dict(options or {})
    if resume is True and out is None:
        raise ValueError("resume=True resumes into out=: give out=path (or resume=path)")
    resume_path = out if resume is True else (resume or None)
    prior = _prior_results(target, resume_path)
    if out is None and resume_path is not None:
        out = resume_path  # resume into the file we read
    done: dict[tuple[Any, ...], tuple[dict[str, Any], Record]] = {}
    if prior is not None:
        done = {point_key(p): (p, m) for p, m in prior.items()}
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    order = [p for p in points if point_key(p) not in done]
    # Shuffled so that drift (heat, frequency, other load) spreads over every parameter.
    random.Random(seed).shuffle(order)
    merged_grid = _merged_grid(prior, grid)

    def collect(complete: bool) -> Results:
        keys = [point_key(p) for p in points]
        rows = [done[k] for k in keys if k in done]
        planned = set(keys)
        rows += [pm for k, pm in done.items() if k not in planned]  # earlier points kept
        return Results(target, [p for p, _ in rows], [m for _, m in rows], machine=machine(),
                       options=options, grid=merged_grid, seed=seed, complete=complete)

    interrupted = False
    with progress_bar(len(order), enabled=progress) as bar:
        try:
            for point in order:
                bar.start(_label(point))
                done[point_key(point)] = (point, _run_one(target, point, options))
                bar.done()
                if out is not None:
                    collect(False).save(out)
        except KeyboardInterrupt:
            interrupted = True
    results = collect(complete=not interrupted)
    if out is not None:
        results.save(out)
    if interrupted:
        left = sum(point_key(p) not in done for p in points)
        where = f"; saved to {os.fspath(out)} (resume=True continues)" if out is not None else ""
        print(f"pycipherbench.sweep interrupted: kept {len(results)} points, {left} not measured"
              f"{where}", file=sys.stderr)
    return results


def sweep(
    target: Target,
    *,
    seed: int | None = None,
    progress: bool = True,
    out: PathLike | None = None,
    resume: bool | PathLike = False,
    skip_invalid: bool = False,
    **grid: Any,
) -> Results:
    """Measure every point of a parameter grid; returns :class:`~pycipherbench.Results`.

    Args:
        target: ``"cipher"`` (parameters of :func:`~pycipherbench.measure`) or
            ``"store"`` (parameters of :func:`pycipherbench.store.bench`).
        **grid: a list sweeps a parameter (cartesian product of all lists), a
            scalar fixes it; ``min_time``, ``repeats``, ``warmup`` (store: also
            ``stages``, ``directory``) pass through to every measurement.
            Non-applicable parameters are dropped per point (module docstring).
        seed: seeds the shuffled run order (default: random, recorded in the Results).
        progress: a progress bar with ETA on stderr.
        out: save the results here after every point (atomic JSON, see Results.save).
        resume: ``True`` continues ``out``, a path continues that file (and saves
            into it unless ``out`` is given): points it already holds are skipped
            and kept. A missing file starts a new sweep.
        skip_invalid: drop points the target rejects (with a warning) instead of
            raising before anything runs.

    Ctrl-C (KeyboardInterrupt) stops the sweep and returns the points measured
    so far, with ``complete=False`` (and saves them to ``out``).
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
    return run_points(target, valid, options, seed=seed, progress=progress, out=out,
                      resume=resume, grid=lists)

"""Comparing two sets of results point by point: speedups and Mann–Whitney verdicts.

:meth:`Results.compare <pycipherbench.Results.compare>` is the entry point;
this module holds what it returns (:class:`Comparison`, one
:class:`PointComparison` per matched point) and the machine check that comes
first (:class:`DifferentMachinesError`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._format import format_cell, format_ns, format_table
from ._options import SETTINGS
from ._params import Column, param_columns, param_names, point_key, same_value, structured_array
from .stats import Ratio, compare_rounds, paired_ratio

if TYPE_CHECKING:
    from ._record import Record
    from .results import Results

__all__ = ["Comparison", "DifferentMachinesError", "PointComparison", "compare",
           "machine_differences", "ratios"]

#: Machine fingerprint fields that must agree before timings are comparable.
MACHINE_KEYS = ("cpu_model", "cpu_flags", "openssl_version")


class DifferentMachinesError(ValueError):
    """Raised by :meth:`Results.compare` for results taken on different machines."""


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


@dataclass(frozen=True)
class PointComparison:
    """One matched point: medians in ns per operation, the speedup (baseline / this)
    with its 95% interval, the test's p-value and the verdict: ``"faster"``,
    ``"slower"``, ``"no significant difference"`` or ``"too few rounds"``
    (``note`` then says why)."""

    params: dict[str, Any]
    median: float
    baseline_median: float
    speedup: float
    p_value: float
    verdict: str
    n: int
    n_baseline: int
    speedup_low: float = math.nan
    speedup_high: float = math.nan
    note: str = ""


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
        return param_names(r.params for r in self.rows)

    def to_numpy(self) -> np.ndarray:
        """Structured array: parameters, ``median``, ``baseline_median`` (ns), ``speedup``
        with ``speedup_low``/``speedup_high``, ``p_value``, ``verdict``, ``n``, ``n_baseline``."""
        columns: list[Column] = param_columns([r.params for r in self.rows])
        for name, dtype in (("median", np.float64), ("baseline_median", np.float64),
                            ("speedup", np.float64), ("speedup_low", np.float64),
                            ("speedup_high", np.float64), ("p_value", np.float64),
                            ("verdict", "U25"), ("n", np.int64), ("n_baseline", np.int64)):
            columns.append((name, dtype, [getattr(r, name) for r in self.rows]))
        return structured_array(columns, len(self.rows))

    def _note_lines(self) -> list[str]:
        """Each distinct note once, naming the rows it is about."""
        rows: dict[str, list[str]] = {}
        for r in self.rows:
            if r.note:
                rows.setdefault(r.note, []).append(
                    " ".join(f"{k}={format_cell(v)}" for k, v in r.params.items()) or "the point")
        out = []
        for note, labels in sorted(rows.items()):
            which = ("every row" if len(labels) == len(self.rows) > 1 else
                     "; ".join(labels[:4]) + (f"; and {len(labels) - 4} more" if len(labels) > 4
                                              else ""))
            out.append(f"{note} ({which})")
        return out

    def table(self) -> str:
        """The comparison as an aligned text table (what ``pycipherbench compare`` prints)."""
        names = self.param_names
        head = [*names, "baseline", "this", "speedup [95%]", "p", "verdict"]
        body = [[format_cell(r.params.get(n)) for n in names]
                + [format_ns(r.baseline_median), format_ns(r.median),
                   f"{r.speedup:.3f}x [{r.speedup_low:.3f}, {r.speedup_high:.3f}]",
                   f"{r.p_value:.3g}", r.verdict] for r in self.rows]
        lines = [format_table(head, body)]
        lines.append(f"speedup = baseline median / this median (> 1: faster), alpha = "
                     f"{self.alpha:g}; runs over worker processes: Welch's t over the processes, "
                     f"called only if it holds on the times and in canary units too (the "
                     f"machine's clock drifts between runs); runs in one process: Mann-Whitney "
                     f"U over the rounds, guarded against drift within a run "
                     f"(pycipherbench.stats.compare_rounds)")
        if not self.rows:
            lines = [f"no matched points: {self.unmatched_reason()}"]
        lines += self._note_lines()
        if self.unmatched or self.unmatched_baseline:
            lines.append(f"unmatched points: {len(self.unmatched)} only here, "
                         f"{len(self.unmatched_baseline)} only in the baseline")
        if self.machine_differences:
            lines.append("WARNING: different machines: " + "; ".join(self.machine_differences))
        return "\n".join(lines)

    __str__ = table

    def differing_parameters(self) -> dict[str, tuple[list[Any], list[Any]]]:
        """The parameters whose values differ between the unmatched points of these
        results and of the baseline: name -> (values only here, values only in the baseline);
        a parameter one side lacks has [] on that side."""
        mine, theirs = self.unmatched, self.unmatched_baseline
        out: dict[str, tuple[list[Any], list[Any]]] = {}
        for name in param_names([*mine, *theirs]):
            a = list(dict.fromkeys(p[name] for p in mine if name in p))
            b = list(dict.fromkeys(p[name] for p in theirs if name in p))
            only_a = [v for v in a if not any(same_value(v, w) for w in b)]
            only_b = [v for v in b if not any(same_value(v, w) for w in a)]
            if only_a or only_b or (bool(a) != bool(b)):
                out[name] = (only_a, only_b)
        return out

    def unmatched_reason(self, cli: bool = False) -> str:
        """Why points did not match, and the ``ignore=`` that would match them ('' if all
        did); ``cli``: as the command line says it (``--ignore NAME``)."""
        if not self.unmatched and not self.unmatched_baseline:
            return "" if self.rows else "both results files are empty"
        diff = self.differing_parameters()
        if not diff:
            return (f"{len(self.unmatched)} points only here, {len(self.unmatched_baseline)} "
                    "only in the baseline, with the same parameters but other values combined")
        show = lambda vs: ", ".join(map(str, vs)) or "absent"  # noqa: E731
        parts = [f"{n} (here: {show(a)}; baseline: {show(b)})" for n, (a, b) in diff.items()]
        ignore = " ".join(f"--ignore {n}" for n in diff) if cli else f"ignore={list(diff)}"
        return (f"the parameters that differ are {'; '.join(parts)}. To compare across them, "
                f"leave them out of the matching: {ignore}")


def _index(results: Results, ignored: set[str]) -> dict[tuple[Any, ...], int]:
    """Point identity (minus the ignored parameters) -> row of ``results``."""
    out: dict[tuple[Any, ...], int] = {}
    for i, p in enumerate(results.params):
        key = point_key({k: v for k, v in p.items() if k not in ignored})
        if key in out:
            raise ValueError(f"two points share parameters {dict((k, v) for k, _, v in key)} "
                             f"once {sorted(ignored)} are ignored; cannot match them")
        out[key] = i
    return out


def _compare_point(params: dict[str, Any], a: Record, b: Record, alpha: float) -> PointComparison:
    """``a`` (these results) against ``b`` (the baseline) at one point."""
    c = compare_rounds(b.samples, a.samples, alpha=alpha, process_a=b.process,
                       process_b=a.process, canary_a=b.canary,
                       canary_b=a.canary)  # ratio: this / baseline, in ns
    if c.significant is None:
        verdict = "too few rounds"
    elif c.significant:
        verdict = "slower" if c.ratio > 1 else "faster"
    else:
        verdict = "no significant difference"
    return PointComparison(params=params, median=a.median, baseline_median=b.median,
                           speedup=1.0 / c.ratio, p_value=c.p_value, verdict=verdict,
                           n=len(a.samples), n_baseline=len(b.samples),
                           speedup_low=1.0 / c.high, speedup_high=1.0 / c.low, note=c.note)


def compare(
    results: Results,
    baseline: Results,
    *,
    alpha: float = 0.05,
    ignore: Sequence[str] = (),
    allow_different_machines: bool = False,
) -> Comparison:
    """Each point of ``results`` against the same point of ``baseline``: see :meth:`Results.compare`."""
    SETTINGS["alpha"].check(alpha)  # declared with compare --alpha
    diffs = machine_differences(results.machine, baseline.machine)
    if diffs and not allow_different_machines:
        raise DifferentMachinesError(
            "refusing to compare results from different machines ("
            + "; ".join(diffs) + "): their timings say as much about the machines as about "
            "the code. Pass allow_different_machines=True (CLI: --allow-different-machines) "
            "to compare anyway.")
    if isinstance(ignore, str):
        raise TypeError(f"ignore must be a list of parameter names, not the string {ignore!r}")
    from ._names import nearest

    known = set(param_names(results.params)) | set(param_names(baseline.params))
    for name in ignore:
        if name not in known:
            raise ValueError(f"ignore: no point of either file has a parameter {name!r}"
                             f"{nearest(name, sorted(known))}; they have "
                             f"{', '.join(sorted(known)) or 'no parameters'}")
    ignored = set(ignore)
    mine, theirs = _index(results, ignored), _index(baseline, ignored)
    rows = [_compare_point({k: v for k, v in results.params[i].items() if k not in ignored},
                           results.measurements[i], baseline.measurements[theirs[key]], alpha)
            for key, i in mine.items() if key in theirs]
    only_mine = [results.params[i] for k, i in mine.items() if k not in theirs]
    only_theirs = [baseline.params[i] for k, i in theirs.items() if k not in mine]
    return Comparison(rows, alpha=alpha, unmatched=only_mine, unmatched_baseline=only_theirs,
                      machine_differences=diffs)


def _same_as_typed(have: Any, want: Any) -> bool:
    """A point's value against one a user typed: text case-insensitively (op=ENC as
    the tables print it; a transformation in any spelling or alias)."""
    if isinstance(have, str) and isinstance(want, str):
        from ._names import canonical

        return (have.casefold() == want.casefold()
                or canonical(have) is not None and canonical(have) == canonical(want))
    return same_value(have, want)


def _matches(params: dict[str, Any], want: dict[str, Any]) -> bool:
    return all(k in params and _same_as_typed(params[k], v) for k, v in want.items())


def _check_names(results: Results, side: str, want: dict[str, Any]) -> None:
    """A ValueError naming a parameter no point of ``results`` has (and the nearest one)."""
    from ._names import nearest

    known = param_names(results.params)
    for name in want:
        if name not in known:
            raise ValueError(f"{side}: no point has a parameter {name!r}{nearest(name, known)}; "
                             f"the points have {', '.join(known) or 'no parameters'}")


def _applies(target: str, name: str, point: dict[str, Any]) -> bool:
    from .sweep import applies  # the grid rules: what a point of this target drops

    return applies(target, name, point)  # type: ignore[arg-type]


def _pairs(target: str, p: dict[str, Any], q: dict[str, Any], varied: set[str]) -> bool:
    """Whether points ``p`` and ``q`` are equal in every parameter outside ``varied``; one
    that only one of them has pairs where it does not apply to the other (a plain store
    point has no hw_aes: it pairs with the encrypted point of hw_aes=False)."""
    for k in (p.keys() | q.keys()) - varied:
        if k in p and k in q:
            if not same_value(p[k], q[k]):
                return False
        else:  # the value one has, tried on the other
            has, lacks = (p, q) if k in p else (q, p)
            if _applies(target, k, {**lacks, k: has[k]}):
                return False
    return True


def _check_sides(results: Results, numerator: dict[str, Any], denominator: dict[str, Any]) -> None:
    """A ValueError unless the two sides name the same parameters (a name on one side only
    is allowed where the other side's points lack it: it does not apply to them), and
    differ in at least one value."""
    sides = (("numerator", numerator, "denominator", denominator),
             ("denominator", denominator, "numerator", numerator))
    for side, mine, other_side, other in sides:
        for k in mine.keys() - other.keys():
            if any(k in p for p in results.params if _matches(p, other)):
                raise ValueError(
                    f"{k} is given for the {side} only, but the {other_side} points have it too: "
                    f"numerator and denominator must differ in the same parameters (give the "
                    f"{other_side} {k}= as well; {k}={mine[k]!r} on both sides holds it equal)")
    if numerator.keys() == denominator.keys() and all(
            same_value(v, denominator[k]) for k, v in numerator.items()):
        raise ValueError(f"numerator and denominator name the same points ({numerator}): "
                         "a ratio compares points that differ in a parameter")


class Ratios(list):  # type: ignore[type-arg]
    """The ratios of several pairs (a list of :class:`~pycipherbench.stats.Ratio`), shown one
    line each with the parameters that tell the pairs apart, not as dataclass reprs."""

    def __repr__(self) -> str:
        return "\n".join(f"{r}" + (f"  ({', '.join(f'{k}={v}' for k, v in r.params.items())})"
                                   if r.params else "") for r in self)

    __str__ = __repr__


def ratios(results: Results, numerator: dict[str, Any], denominator: dict[str, Any]) -> list[Ratio]:
    """Paired ratios (numerator / denominator, of ns per operation) of the points of one
    sweep that differ only in the given parameters: see :meth:`Results.ratio`."""
    if not numerator or not denominator:
        raise ValueError("ratio needs parameters for both sides, e.g. "
                         "numerator={'key_encryption': 'siv'}, denominator={'key_encryption': 'none'}")
    if not isinstance(numerator, dict) or not isinstance(denominator, dict):
        raise TypeError("numerator and denominator must be dicts of parameter values")
    _check_names(results, "numerator", numerator)
    _check_names(results, "denominator", denominator)
    _check_sides(results, numerator, denominator)
    varied = set(numerator) | set(denominator)
    nums = [(p, m) for p, m in results.items() if _matches(p, numerator)]
    dens = [(p, m) for p, m in results.items() if _matches(p, denominator)]
    out: list[Ratio] = Ratios()
    for p, m in nums:
        rest = {k: v for k, v in p.items() if k not in varied}
        fits = [(q, d) for q, d in dens if q is not p and _pairs(results.target, p, q, varied)]
        if not fits:
            continue
        exact = [(q, d) for q, d in fits if q.keys() - varied == rest.keys()]
        pair = (exact or fits)[0]
        d = pair[1]
        if len(m.samples) != len(d.samples):
            raise ValueError(f"the points {p} and {pair[0]} have {len(m.samples)} and "
                             f"{len(d.samples)} rounds: they were not measured in the same "
                             "rounds (one sweep), so they cannot be paired")
        if m.run_id != d.run_id:
            raise ValueError(f"the points {p} and {pair[0]} were measured in different runs "
                             f"({m.run_id or 'unrecorded'} and {d.run_id or 'unrecorded'}; e.g. "
                             "one of them added by a resumed sweep): their rounds are not the "
                             "same rounds, so they cannot be paired; measure both in one sweep")
        out.append(paired_ratio(m.samples, d.samples, params=rest, process=m.process))
    if not out:
        raise ValueError(f"no pair of points matches numerator={numerator} and "
                         f"denominator={denominator} with all other parameters equal; "
                         f"swept: {', '.join(results.swept) or 'nothing'}")
    return out

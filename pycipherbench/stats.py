"""Statistics on raw samples and on per-round values, built on :mod:`scipy.stats`.

* :func:`mann_whitney_u`: the two-sided Mann–Whitney U test that
  :meth:`Results.compare` uses to say whether one set of samples is faster
  than another.
* Per-round statistics. A measurement is R *rounds*; in each round every point
  of a sweep takes one calibrated sample, in a freshly shuffled order, so the
  i-th values of two points were measured a moment apart.

  - :func:`median_ci` / :func:`median_ci_level`: a distribution-free interval
    for the median and the coverage it actually attains (rounds of one process).
  - :func:`median_interval` -> :class:`Interval`: the interval of a record's
    median from the hierarchy of its rounds: rounds within a worker process,
    processes within the run (see :func:`process_interval`).
  - :func:`paired_ratio` -> :class:`Ratio`: the ratio of two points measured
    in the same rounds (paired, so a slow period that hits both points of a
    round cancels out).
  - :func:`compare_rounds` -> :class:`RoundComparison`: the same point
    measured in two different runs (unpaired), with a guard against the
    dependence between consecutive rounds.
  - :func:`instability_warnings`: sentences, in the spirit of
    ``pyperf check``, saying why a number may not be trustworthy.

No plotting, no I/O.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np


def _scipy_stats() -> Any:
    """:mod:`scipy.stats`, imported on first use: ``import pycipherbench`` stays light
    (scipy.stats alone takes about a second to import)."""
    from scipy import stats  # type: ignore[import-untyped]  # no stubs

    return stats


def load_scipy_stats() -> None:
    """Import :mod:`scipy.stats` now: a run calls it before its rounds, so that the
    statistics of its records (built at the end, or right after Ctrl-C) never wait for
    the import."""
    _scipy_stats()


__all__ = [
    "CANARY_SLOWDOWN", "CPU_WALL_MIN", "DEFAULT_CONFIDENCE", "EXACT_LIMIT", "MAX_MIN_RATIO",
    "MIN_CI_HALF_WIDTH", "MIN_VERDICT_PROCESSES", "MIN_VERDICT_ROUNDS", "MannWhitney", "PREEMPTED_FRACTION", "Ratio",
    "Interval", "RoundComparison", "SPREAD_LIMIT", "compare_rounds", "instability_warnings",
    "level_half", "mann_whitney_u", "median_ci", "median_ci_level", "median_interval", "paired_ratio",
    "process_interval", "relative_iqr", "summarize_warnings"]

#: Largest n1*n2 for which the p-value is exact (the permutation distribution of U).
EXACT_LIMIT = 2500

#: Default coverage of the intervals.
DEFAULT_CONFIDENCE = 0.95

# Thresholds of instability_warnings.
#: Relative IQR (IQR/median) of the rounds above which they "vary".
SPREAD_LIMIT = 0.10
#: Slowest/fastest round above which the rounds are "far apart".
MAX_MIN_RATIO = 1.5
#: Fraction of rounds that may be preempted (or off-CPU) before a warning.
PREEMPTED_FRACTION = 0.10
#: CPU time / wall time below which a round counts as off-CPU.
CPU_WALL_MIN = 0.9
#: A canary this much slower than its best marks a slow round.
CANARY_SLOWDOWN = 0.10
#: Relative half-width below which an interval is "too narrow to be true".
MIN_CI_HALF_WIDTH = 0.005


#: Fewest rounds a side for a verdict of compare_rounds: in shorter runs one slow period
#: can cover a third of the rounds, beyond what its guard allows for.
MIN_VERDICT_ROUNDS = 8

#: Fewest worker processes a side for a verdict of compare_rounds over processes.
MIN_VERDICT_PROCESSES = 3

_Values = Sequence[float] | np.ndarray


class MannWhitney(NamedTuple):
    """Result of :func:`mann_whitney_u`: U of the first sample, two-sided p, how p was computed."""

    u: float
    p_value: float
    method: str  # "exact" or "normal"


def mann_whitney_u(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> MannWhitney:
    """Two-sided Mann–Whitney U test (Wilcoxon rank-sum) with :func:`scipy.stats.mannwhitneyu`.

    ``u`` counts the pairs (x_i, y_j) with x_i > y_j (ties count 1/2), so a
    small ``u`` means x tends to be smaller. Without ties and with
    n1*n2 <= :data:`EXACT_LIMIT` the p-value is exact; otherwise it uses the
    normal approximation with the tie correction of the variance and a
    continuity correction of 0.5, as R's ``wilcox.test`` does. (SciPy's own
    ``method="auto"`` draws the line elsewhere: exact only up to 8 values a
    side, so 10 vs 5 samples would get an approximate p.)
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("mann_whitney_u needs at least one value in each sample")
    combined = np.concatenate([a, b])
    if np.all(combined == combined[0]):
        # Every value equal: no evidence either way. (SciPy would divide by the zero
        # variance of U and report NaN.)
        return MannWhitney(n1 * n2 / 2.0, 1.0, "normal")
    ties = len(np.unique(combined)) < len(combined)
    exact = not ties and n1 * n2 <= EXACT_LIMIT
    res = _scipy_stats().mannwhitneyu(a, b, alternative="two-sided", use_continuity=True,
                                    method="exact" if exact else "asymptotic")
    return MannWhitney(float(res.statistic), float(res.pvalue), "exact" if exact else "normal")


# --- input checks and formatting -------------------------------------------------------------

def _values(values: _Values, func: str, name: str = "values", *, positive: bool = False) -> np.ndarray:
    """``values`` as a 1-D float array; ValueError naming ``func`` and ``name`` unless usable."""
    a = np.asarray(values, dtype=np.float64).ravel()
    if a.size == 0:
        raise ValueError(f"{func} needs at least one value in {name}, got none")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{func} needs finite numbers in {name}, got NaN or infinity")
    if positive and not np.all(a > 0):
        raise ValueError(f"{func} needs positive numbers in {name}, got {float(a.min())!r}")
    return a


def _check_confidence(confidence: float, func: str) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"{func} needs a confidence between 0 and 1 (exclusive), got {confidence!r}")


def _slower(slowdown: float) -> str:
    """A slowdown (time / best time - 1) as people say it: 0.3 -> '30% slower', 3.66 ->
    '4.7x slower' (a percentage over 100% reads as a typo)."""
    if slowdown < 1.0:
        return f"{_pct(slowdown)} slower"
    return f"{1.0 + slowdown:.1f}x slower"


def _pct(fraction: float) -> str:
    """A fraction as a percentage with about two significant digits: 0.123 -> '12%', 0.0123 -> '1.2%',
    0.005 -> '0.5%'."""
    p = abs(fraction) * 100.0
    if p >= 9.95 or p == 0.0:
        return f"{fraction * 100.0:.0f}%"
    if p >= 0.995:
        return f"{fraction * 100.0:.1f}%"
    return f"{fraction * 100.0:.2g}%"


def _num(x: float) -> str:
    """About three significant digits, no exponent for everyday sizes: 2.34, 23.4, 1234."""
    if x == 0 or not math.isfinite(x) or abs(x) >= 100:
        return f"{x:.0f}" if math.isfinite(x) else f"{x}"
    return f"{x:.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


def _ratio_strings(estimate: float, low: float, high: float) -> list[str]:
    """A ratio and its interval with 2 decimals, or up to 4 when 2 would print different
    values alike or an end of the interval that is not 1 as 1.00 (which would hide the verdict)."""
    xs = (estimate, low, high)
    for digits in (2, 3, 4):
        out = [f"{x:.{digits}f}" for x in xs]
        one = f"{1.0:.{digits}f}"
        if (len(set(out)) == len(set(xs))
                and all(s != one or x == 1.0 for s, x in zip(out[1:], xs[1:]))):
            break
    return out


# --- the median and its interval -------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _median_ci_rank(n: int, confidence: float) -> int:
    """Largest k with 1 - 2 P(Bin(n, 1/2) <= k-1) >= confidence, or 1 when none reaches it."""
    ks = np.arange(1, (n + 1) // 2 + 1)
    coverage = 1.0 - 2.0 * _scipy_stats().binom.cdf(ks - 1, n, 0.5)
    reached = ks[coverage >= confidence - 1e-12]  # coverage falls as k grows
    return int(reached[-1]) if reached.size else 1


def median_ci_level(n: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Coverage actually attained by :func:`median_ci` on ``n`` values.

    At least ``confidence`` when n is large enough (n >= 6 at 95%); below that
    it is the coverage of (min, max), 1 - 2**(1-n): 0.9375 for n = 5, 0 for n = 1.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"median_ci_level needs a whole number of values n >= 1, got {n!r}")
    _check_confidence(confidence, "median_ci_level")
    k = _median_ci_rank(int(n), confidence)
    return float(1.0 - 2.0 * _scipy_stats().binom.cdf(k - 1, int(n), 0.5))


def interval_words(n: int, confidence: float = DEFAULT_CONFIDENCE) -> str:
    """What :func:`median_ci` of ``n`` rounds is, in words for tables, reprs and
    footers: ``"95% interval"`` when it attains ``confidence``; else the coverage it
    does attain (3 rounds: ``"75% interval: the range of 3 rounds; 95% needs 6"``);
    one round has none (``"no interval: 1 round"``)."""
    if n == 1:
        return "no interval: 1 round"
    level = median_ci_level(n, confidence)
    if level >= confidence - 1e-12:
        return f"{_pct(confidence)} interval"
    need = next(m for m in range(n + 1, 10_000) if median_ci_level(m, confidence) >= confidence - 1e-12)
    return f"{_pct(level)} interval: the range of {n} rounds; {_pct(confidence)} needs {need}"


def median_ci(values: _Values, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Distribution-free interval for the median from order statistics.

    With the values sorted, x(1) <= ... <= x(n), the interval is
    [x(k), x(n+1-k)] for the largest k whose coverage
    1 - 2 P(Bin(n, 1/2) <= k-1) is at least ``confidence``; it needs only
    independent values from a continuous distribution, nothing about its shape.
    For n = 10 at 95% that is [x(2), x(9)], coverage 0.9785. When n is too small
    to reach ``confidence`` (n < 6 at 95%) it is (min, max) and covers less:
    :func:`median_ci_level` says how much.
    """
    _check_confidence(confidence, "median_ci")
    a = np.sort(_values(values, "median_ci"))
    k = _median_ci_rank(a.size, confidence)
    return float(a[k - 1]), float(a[a.size - k])


def relative_iqr(values: _Values) -> float:
    """Round-to-round spread: interquartile range over median (linear-interpolated quartiles).

    0 for a single value. Needs finite values with a positive median.
    """
    a = _values(values, "relative_iqr")
    q1, med, q3 = np.percentile(a, [25.0, 50.0, 75.0])
    if not med > 0:
        raise ValueError(f"relative_iqr needs values with a positive median, got {float(med)!r}")
    return float((q3 - q1) / med)


# --- the hierarchy: rounds within worker processes, processes within a run -----------------

def _groups(process: _Values | None, n: int, func: str) -> list[np.ndarray]:
    """Indices of the rounds of each worker process (``process``: the process of each round;
    None: all rounds in one process)."""
    if process is None:
        return [np.arange(n)]
    p = np.asarray(process, dtype=np.float64).ravel()
    if p.size != n:
        raise ValueError(f"{func} needs one process index per round: {n} rounds, got {p.size}")
    return [np.flatnonzero(p == w) for w in np.unique(p)]


def process_words(n: int, sizes: Sequence[int], confidence: float = DEFAULT_CONFIDENCE) -> str:
    """What an interval over ``n`` rounds in processes of ``sizes`` rounds covers, in words:
    ``"95% interval over 5 processes x 2 rounds"``; with one process, the words of
    :func:`interval_words` and that it covers this process only (``"95% interval, this
    process only"``, ``"75% interval: the range of 3 rounds of this process only; 95%
    needs 6"``)."""
    if len(sizes) < 2:
        words = interval_words(n, confidence)
        if n < 2:
            return words
        short = f"the range of {n} rounds"
        return (words.replace(short, f"{short} of this process only") if short in words
                else f"{words}, this process only")
    lo, hi = min(sizes), max(sizes)
    each = f"{lo} round{'s' if lo != 1 else ''}" if lo == hi else f"{lo}-{hi} rounds"
    return f"{_pct(confidence)} interval over {len(sizes)} processes x {each}"


def process_interval(logs: np.ndarray, groups: Sequence[np.ndarray],
                     confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float, float]:
    """(center, low, high) in log space over W >= 2 worker processes: each process's
    estimate is the median of its rounds' values; the interval is
    center +- t(W-1) * SD(estimates) / sqrt(W), centered on the median of all rounds.

    This is the two-stage (cluster) interval: the spread of the process estimates holds
    both levels, the rounds' noise within a process (through its median) and the
    process-to-process differences (memory layout, frequency state, a slow period
    covering a whole process), so nothing measured on another machine needs adding.
    Its coverage is nominal for roughly normal process estimates (of log time, which
    is close to normal for medians); ``bench/bench_replication.py`` measures it."""
    w = len(groups)
    estimates = np.array([np.median(logs[g]) for g in groups])
    center = float(np.median(logs))
    sd = float(np.std(estimates, ddof=1))
    half = float(_scipy_stats().t.ppf(0.5 + confidence / 2.0, w - 1)) * sd / math.sqrt(w)
    return center, center - half, center + half


@dataclass(frozen=True)
class Interval:
    """A median's interval from :func:`median_interval`: [``low``, ``high``] with
    coverage ``level`` (attained by order statistics in one process, nominal over
    processes), over ``processes`` worker processes and ``n`` rounds, and ``words``."""

    low: float
    high: float
    level: float
    processes: int
    n: int
    words: str

    @property
    def interval(self) -> tuple[float, float]:
        return self.low, self.high


def level_half(level_sd: float, level_runs: int,
               confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Half-width (log) that the machine's speed between runs adds: a prediction interval
    for the next run's level from ``level_runs`` runs' levels of robust SD ``level_sd``,
    t(k-1) x SD x sqrt(1 + 1/k) (see :mod:`pycipherbench._levels`)."""
    k = int(level_runs)
    return (float(_scipy_stats().t.ppf(0.5 + confidence / 2.0, k - 1)) * float(level_sd)
            * math.sqrt(1.0 + 1.0 / k))


def median_interval(values: _Values, process: _Values | None = None,
                    confidence: float = DEFAULT_CONFIDENCE, *,
                    level_sd: float | None = None, level_runs: int = 0,
                    level_shift: float | None = None) -> Interval:
    """The interval of the median of per-round ``values`` whose round i ran in worker
    process ``process[i]``: with one process (or ``process`` None) :func:`median_ci`
    over the rounds, which covers this process only; with W >= 2 processes the
    two-level interval of :func:`process_interval` (positive values). When ``level_sd``
    gives this machine's speed between runs (the robust SD of the log canary levels of
    its latest ``level_runs`` runs, :mod:`pycipherbench._levels`) and ``level_shift`` how
    far this run's level sat from their median, the interval is the hull of that one and
    of the same moved by ``level_shift`` and widened (in quadrature) by
    :func:`level_half`: it covers this run's processes and a usual run of this machine.
    The words say which (``"... and this machine's speed over 12 runs"``, or that it is
    not yet known)."""
    _check_confidence(confidence, "median_interval")
    a = _values(values, "median_interval")
    groups = _groups(process, a.size, "median_interval")
    sizes = [len(g) for g in groups]
    if len(groups) < 2:
        low, high = median_ci(a, confidence)
        return Interval(low, high, median_ci_level(a.size, confidence), 1, int(a.size),
                        process_words(int(a.size), sizes, confidence))
    if not np.all(a > 0):
        raise ValueError("median_interval over processes needs positive values")
    center, lo, hi = process_interval(np.log(a), groups, confidence)
    words = process_words(int(a.size), sizes, confidence)
    if level_sd is not None and level_runs >= 2:
        moved = center + (level_shift or 0.0)
        half = math.hypot(hi - center, level_half(level_sd, level_runs, confidence))
        lo, hi = min(lo, moved - half), max(hi, moved + half)
        words += f" and this machine's speed over {level_runs} runs"
    elif level_runs:
        from ._levels import MIN_RUNS

        words += (f"; this machine's speed between runs not yet known ({level_runs} of "
                  f"{MIN_RUNS} runs recorded)")
    else:
        words += "; this machine's speed between runs not recorded"
    return Interval(math.exp(lo), math.exp(hi), confidence, len(groups), int(a.size), words)


# --- paired ratio: two points measured in the same rounds ------------------------------------

@dataclass(frozen=True)
class Ratio:
    """Ratio of two points measured in the same rounds, from :func:`paired_ratio`.

    ``estimate`` with the interval [``low``, ``high``] whose coverage is
    ``level`` (attained, from :func:`median_ci_level`, in one process; nominal over
    processes); ``significant`` when the interval excludes 1 at the requested
    confidence; ``n`` rounds in ``processes`` worker processes; ``params``: the
    other parameters of the matched pair (may be empty). ``float(ratio)`` is the
    estimate.
    """

    estimate: float
    low: float
    high: float
    significant: bool
    n: int
    level: float
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    processes: int = 1
    words: str = ""

    def __float__(self) -> float:
        return self.estimate

    def __str__(self) -> str:
        est, low, high = _ratio_strings(self.estimate, self.low, self.high)
        if self.processes > 1:
            rounds = self.words.partition(" over ")[2] or f"{self.n} rounds"
        else:  # order statistics over the rounds of one process: they cover it only
            rounds = f"{self.n} round{'s' if self.n != 1 else ''}"
            rounds += ", this process only" if self.n > 1 else ""
        level = f", {_pct(self.level)} interval" if self.level < DEFAULT_CONFIDENCE else ""
        verdict = "significant" if self.significant else "not significant"
        return f"{est}x [{low}, {high}] ({rounds}{level}, {verdict})"


def paired_ratio(numerator: _Values, denominator: _Values, confidence: float = DEFAULT_CONFIDENCE,
                 params: dict[str, Any] | None = None,
                 process: _Values | None = None) -> Ratio:
    """numerator/denominator from per-round values measured in the same rounds.

    Round i of both sequences must come from the same round (equal lengths,
    positive finite values), which ran in worker process ``process[i]`` (None:
    all in one process). The statistics run on the per-round log ratios
    log(numerator_i / denominator_i): a slow period that slows both points of
    a round by the same factor cancels out of them, which is why this is
    paired. ``estimate`` = exp(median of the log ratios).

    In one process the interval is exp of :func:`median_ci` of the log ratios,
    and it covers this process only: a state that lasts as long as the process
    (its memory layout, the frequency it started at) is the same in every round
    and invisible to them. Over W >= 2 processes it is the two-level interval of
    :func:`process_interval` of the log ratios, whose spread between processes
    holds that state too. ``significant`` means the interval excludes 1 strictly
    *and* attains ``confidence``: with fewer than 6 rounds at 95% in one process
    the interval is only (min, max), whose coverage (``level``, e.g. 0.9375 for
    5 rounds) falls short, so nothing is significant.
    """
    _check_confidence(confidence, "paired_ratio")
    num = _values(numerator, "paired_ratio", "numerator", positive=True)
    den = _values(denominator, "paired_ratio", "denominator", positive=True)
    if num.size != den.size:
        raise ValueError(f"paired_ratio needs numerator and denominator from the same rounds "
                         f"(equal lengths), got {num.size} and {den.size} values")
    logs = np.log(num) - np.log(den)
    groups = _groups(process, logs.size, "paired_ratio")
    if len(groups) < 2:
        mid = float(np.median(logs))
        lo, hi = median_ci(logs, confidence)
        level = median_ci_level(logs.size, confidence)
    else:
        mid, lo, hi = process_interval(logs, groups, confidence)
        level = confidence
    low, high = math.exp(lo), math.exp(hi)
    significant = (low > 1.0 or high < 1.0) and level >= confidence - 1e-12
    return Ratio(math.exp(mid), low, high, bool(significant), int(logs.size), level,
                 dict(params or {}), len(groups),
                 process_words(int(logs.size), [len(g) for g in groups], confidence))


# --- the same point in two runs ---------------------------------------------------------------

@dataclass(frozen=True)
class RoundComparison:
    """The same point measured in two runs, from :func:`compare_rounds`.

    ``ratio`` = median(b) / median(a), in [``low``, ``high``] (coverage at
    least ``level`` for independent rounds); ``p_value``: two-sided
    Mann–Whitney U over the per-round values; ``spread``: the larger of the
    two runs' relative IQRs, the margin the interval must clear;
    ``significant``: the verdict, or None when ``n_a`` vs ``n_b`` rounds are
    too few for any (``note`` says why; it also explains a "no" that p alone
    would have called a "yes").
    """

    ratio: float
    low: float
    high: float
    p_value: float
    significant: bool | None
    note: str
    n_a: int
    n_b: int
    spread: float
    level: float
    #: Runs over worker processes with canaries on both sides: how much slower the
    #: machine itself ran in b than in a (the ratio of their canaries), and ``ratio`` in
    #: canary units (each round's time over its canary: about core cycles). None otherwise.
    machine: float | None = None
    adjusted: float | None = None

    def __float__(self) -> float:
        return self.ratio

    def __str__(self) -> str:
        est, low, high = _ratio_strings(self.ratio, self.low, self.high)
        verdict = ("no verdict" if self.significant is None
                   else "significant" if self.significant else "not significant")
        return f"{est}x [{low}, {high}] ({self.n_a} vs {self.n_b} rounds, p = {self.p_value:.2g}, {verdict})"


def _smallest_p(n1: int, n2: int) -> float:
    """Smallest two-sided p :func:`mann_whitney_u` can give for n1 vs n2 values (no ties)."""
    if n1 * n2 <= EXACT_LIMIT:
        return min(1.0, 2.0 / math.comb(n1 + n2, n1))
    return mann_whitney_u(np.arange(n1), np.arange(n1, n1 + n2)).p_value


def _rounds_needed(alpha: float) -> int:
    """Fewest rounds a side (equal) for which :func:`mann_whitney_u` can reach p < alpha."""
    n = 1
    while _smallest_p(n, n) >= alpha:
        n += 1
    return n


def compare_rounds(a: _Values, b: _Values, alpha: float = 0.05, *,
                   process_a: _Values | None = None,
                   process_b: _Values | None = None,
                   canary_a: _Values | None = None,
                   canary_b: _Values | None = None) -> RoundComparison:
    """Compare the per-round values of the same point from two different runs (unpaired).

    **Runs over worker processes** (``process_a`` and ``process_b`` give each round's
    process; both runs with 2 or more): the same hierarchy as :func:`median_interval`.
    Each process's estimate is the median of its rounds' log values; the difference
    of the runs' centers (log medians of all rounds) gets Welch's t interval from the
    two runs' process estimates (``level`` nominal), ``p_value`` Welch's two-sided
    t test. The processes, not the rounds, are the units: a slow period or memory layout
    shared by the rounds of a process counts once (None, with a ``note``, with fewer
    than :data:`MIN_VERDICT_PROCESSES` processes a side).

    What no run sees from inside is the machine's own speed moving between runs: a VM's
    core clock drifts by a few percent over minutes, for every kernel at once (on the
    development VM the run-to-run deviations of four kernels correlated at r = 0.7-0.9
    and A/A comparisons of separate runs were called different 32% of the time by Welch
    over processes). Each round's canary (``canary_a``, ``canary_b``: ns per dependent
    addition, one per round) reads that clock, and both runs have one, so the drift
    between the runs is measured rather than guessed: with canaries on both sides the
    test is run twice, on the times and on the times in canary units (each process's
    median time over its median canary: about core cycles), and ``significant`` needs
    *both* (an intersection-union test, level alpha whichever of the two is the right
    model: a kernel that scales with the clock is judged in cycles, one that does not,
    such as a store's fsync, in time). ``machine`` is then the ratio of the runs' canaries
    (b over a) and ``adjusted`` the ratio in canary units; the interval and p are the
    times' own. Without canaries (older files), ``significant`` also needs the interval
    to clear 1 by more than ``spread``, the larger relative SD of the two runs' process
    estimates.

    **Runs in one process each** (the rest of this docstring):

    ``ratio`` is median(b) / median(a). Its interval multiplies two
    :func:`median_ci` at confidence sqrt(1 - alpha) each:
    [low_b / high_a, high_b / low_a]. Independent runs make the joint
    coverage at least (sqrt(1 - alpha))**2 = 1 - alpha, distribution-free
    (``level`` is the product of the attained levels, lower with fewer than 7
    rounds a side at alpha = 0.05). ``p_value`` is the two-sided
    :func:`mann_whitney_u` over the rounds.

    **The guard.** Rounds within one run are not independent: a slow period
    lasting seconds shifts several consecutive rounds, so both the p-value
    and the interval are too optimistic, and a plain Mann–Whitney test over
    rounds calls A/A differences significant several times more often than
    alpha. A difference is therefore called significant only when
    p < alpha *and* the interval clears 1 by more than ``spread``, the larger
    of the two runs' relative IQR (IQR/median): low > 1 + spread or
    high < 1 / (1 + spread). Rationale: if a slow period disturbs at most a
    third of a run's rounds, it can move that run's median at most to a
    quartile of the undisturbed rounds, i.e. about half an IQR; two runs
    disturbed in opposite directions move the ratio by up to one IQR. So a
    difference smaller than the runs' own round-to-round spread is never
    called, however many rounds there are. In simulated A/A comparisons
    (10 rounds, autocorrelated slow periods lasting a few rounds) this keeps
    false positives at about 2% for alpha = 0.05, where the plain test is at
    20–45% (see tests/test_stats.py); a harsher machine, 30% slower during
    4-round slow periods a quarter of the time, reaches alpha itself. The price: a difference smaller than
    the rounds' spread plus the interval is not called, and more rounds
    narrow the interval but not the spread.

    What no per-round statistic can see: drift slower than a run (a whole run
    slower, or a slow period covering most of its rounds) leaves the rounds
    tight and moves the median. Short runs are most exposed; the canary of
    :func:`instability_warnings` is the check for it, and two variants that
    must be compared are better measured in the same rounds
    (:func:`paired_ratio`).

    ``significant`` is None, with a ``note`` saying why, when even perfectly
    separated rounds could not reach p < alpha (3 vs 3 rounds: the smallest p
    is 0.1), and when either run has fewer than :data:`MIN_VERDICT_ROUNDS`
    rounds: there one slow period easily covers a third of a run, and
    simulated A/A false positives exceed alpha (up to about 0.1 at 5 or 6
    rounds).
    Values must be positive and finite.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"compare_rounds needs alpha between 0 and 1 (exclusive), got {alpha!r}")
    xa = _values(a, "compare_rounds", "a", positive=True)
    xb = _values(b, "compare_rounds", "b", positive=True)
    na, nb = int(xa.size), int(xb.size)
    ga = _groups(process_a, na, "compare_rounds")
    gb = _groups(process_b, nb, "compare_rounds")
    if len(ga) >= 2 and len(gb) >= 2:
        ca = None if canary_a is None else _values(canary_a, "compare_rounds", "canary_a",
                                                   positive=True)
        cb = None if canary_b is None else _values(canary_b, "compare_rounds", "canary_b",
                                                   positive=True)
        for c, n, side in ((ca, na, "a"), (cb, nb, "b")):
            if c is not None and c.size != n:
                raise ValueError(f"compare_rounds needs one canary per round of {side}: "
                                 f"{n} rounds, got {c.size}")
        canaries = (ca, cb) if ca is not None and cb is not None else None
        return _compare_processes(xa, ga, xb, gb, alpha, canaries)
    ratio = float(np.median(xb) / np.median(xa))
    confidence = math.sqrt(1.0 - alpha)
    low_a, high_a = median_ci(xa, confidence)
    low_b, high_b = median_ci(xb, confidence)
    low, high = low_b / high_a, high_b / low_a
    level = median_ci_level(na, confidence) * median_ci_level(nb, confidence)
    p = mann_whitney_u(xa, xb).p_value
    spread = max(relative_iqr(xa), relative_iqr(xb))

    significant: bool | None
    smallest = _smallest_p(na, nb)
    if smallest >= alpha:
        significant = None
        note = (f"{na} vs {nb} rounds cannot give p < {alpha:g} (the smallest possible p is "
                f"{smallest:.2g}); take at least {max(_rounds_needed(alpha), MIN_VERDICT_ROUNDS)} "
                f"rounds a side")
    elif min(na, nb) < MIN_VERDICT_ROUNDS:
        significant = None
        note = (f"{min(na, nb)} rounds in a run are too few for a verdict: a single slow period "
                f"can cover a third of them and move the median unseen; take at least "
                f"{MIN_VERDICT_ROUNDS} rounds a side")
    elif p >= alpha:
        significant, note = False, ""
    elif low > 1.0 + spread or high < 1.0 / (1.0 + spread):
        significant, note = True, ""
    elif low <= 1.0 <= high:
        significant = False
        note = (f"p = {p:.2g}, but the interval includes 1; consecutive rounds are not "
                f"independent, so p alone overstates the evidence")
    else:
        significant = False
        note = (f"p = {p:.2g}, but the interval does not clear the runs' own round-to-round "
                f"spread (IQR/median up to {_pct(spread)}), which is how far a slow period in "
                f"one run can move its median")
    return RoundComparison(ratio, low, high, p, significant, note, na, nb, spread, level)


def _welch(ea: np.ndarray, eb: np.ndarray, diff: float,
           alpha: float) -> tuple[float, float]:
    """(half-width, p) of Welch's t for a difference ``diff`` of two runs' centers whose
    process estimates are ``ea`` and ``eb`` (log values)."""
    va, vb = np.var(ea, ddof=1) / ea.size, np.var(eb, ddof=1) / eb.size
    se = math.sqrt(va + vb)
    if se <= 0:  # every process estimate equal on both sides
        return 0.0, (1.0 if diff == 0 else 0.0)
    df = (va + vb) ** 2 / (va**2 / (ea.size - 1) + vb**2 / (eb.size - 1))
    t = _scipy_stats().t
    return float(t.ppf(1.0 - alpha / 2.0, df)) * se, float(2.0 * t.sf(abs(diff) / se, df))


def _process_estimates(logs: np.ndarray, groups: Sequence[np.ndarray]) -> np.ndarray:
    return np.array([np.median(logs[g]) for g in groups])


def _compare_processes(xa: np.ndarray, ga: Sequence[np.ndarray], xb: np.ndarray,
                       gb: Sequence[np.ndarray], alpha: float,
                       canaries: tuple[np.ndarray, np.ndarray] | None) -> RoundComparison:
    """:func:`compare_rounds` of two runs over worker processes (Welch over the processes;
    with both runs' canaries, also in canary units, and both must agree)."""
    if min(len(ga), len(gb)) < MIN_VERDICT_PROCESSES:
        c = compare_rounds(xa, xb, alpha)  # the interval and p over rounds, for what they say
        note = (f"{len(ga)} vs {len(gb)} worker processes are too few for a verdict between "
                f"runs (the spread between processes is then a guess); take at least "
                f"{MIN_VERDICT_PROCESSES} a side")
        return dataclasses.replace(c, significant=None, note=note)
    la, lb = np.log(xa), np.log(xb)
    ea, eb = _process_estimates(la, ga), _process_estimates(lb, gb)
    diff = float(np.median(lb) - np.median(la))
    half, p = _welch(ea, eb, diff, alpha)
    spread = math.expm1(float(max(np.std(ea, ddof=1), np.std(eb, ddof=1))))
    low, high = math.exp(diff - half), math.exp(diff + half)
    machine = adjusted = None
    if canaries is None:
        clears = low > 1.0 + spread or high < 1.0 / (1.0 + spread)
        significant = bool(p < alpha and clears)
        note = ("" if p >= alpha or clears else
                f"p = {p:.2g}, but the interval does not clear the spread between the runs' "
                f"processes ({_pct(spread)}), and without canaries (an older file) nothing "
                f"tells how far the machine's own speed moved between the runs")
    else:
        ka, kb = np.log(canaries[0]), np.log(canaries[1])
        machine = math.exp(float(np.median(kb) - np.median(ka)))
        # Each process's estimate in canary units: its time over its canary (medians of
        # its rounds: one round's short canary is noisier than the kernel's sample).
        ua = ea - _process_estimates(ka, ga)
        ub = eb - _process_estimates(kb, gb)
        diff_u = diff - float(np.median(kb) - np.median(ka))
        adjusted = math.exp(diff_u)
        _, p_u = _welch(ua, ub, diff_u, alpha)
        significant = bool(p < alpha and p_u < alpha)
        note = ""
        if p < alpha and p_u >= alpha:
            note = (f"p = {p:.2g} on the times, but the machine's own speed differed by "
                    f"{_pct(abs(machine - 1.0))} between the runs (their canaries), and in "
                    f"canary units (about core cycles) p = {p_u:.2g}: the clock, not the code")
        elif p >= alpha and p_u < alpha:
            note = (f"in canary units (about core cycles) p = {p_u:.2g}, but not on the times "
                    f"(p = {p:.2g}): not called, since a workload that does not scale with "
                    f"the clock (I/O, memory) is judged by its time")
    return RoundComparison(math.exp(diff), low, high, p, significant, note,
                           int(xa.size), int(xb.size), spread, 1.0 - alpha, machine, adjusted)


# --- instability warnings ---------------------------------------------------------------------

def _per_round(values: _Values | None, name: str, n: int, *, positive: bool = False) -> np.ndarray | None:
    """Optional per-round values checked like rounds_ns, and of the same length."""
    if values is None:
        return None
    a = _values(values, "instability_warnings", name, positive=positive)
    if a.size != n:
        raise ValueError(f"instability_warnings needs one value of {name} per round: "
                         f"{n} rounds, got {a.size}")
    return a


def _rounds_of(k: int, n: int) -> str:
    return f"{k} of {n} round{'s' if n != 1 else ''}"


def instability_warnings(*, rounds_ns: _Values, cpu_ns: _Values | None = None,
                         wall_ns: _Values | None = None, nivcsw: _Values | None = None,
                         canary_ns: _Values | None = None, canary_best_ns: float | None = None,
                         loadavg: float | Sequence[float] | None = None, cores: int | None = None,
                         ci: tuple[float, float] | None = None) -> list[str]:
    """Sentences saying why a measurement may not be trustworthy; empty when it looks stable.

    In the spirit of ``pyperf check``. ``rounds_ns``: the per-round values of
    one point; the optional per-round ``cpu_ns``/``wall_ns`` (thread CPU time
    and wall time of the round, given together), ``nivcsw`` (involuntary
    context switches) and ``canary_ns`` (a fixed dependent-add chain timed
    beside the kernel) must have one value per round. ``canary_best_ns`` is
    the best canary seen in this process (default: the best of these
    rounds); ``loadavg`` the 1-minute load average (or ``os.getloadavg()``,
    whose first value is used), judged only together with ``cores``; ``ci``
    an interval (low, high) reported for this point. Warnings, with the
    thresholds of the module constants:

    * the rounds' relative IQR is above :data:`SPREAD_LIMIT` (10%);
    * the slowest round over the fastest is above :data:`MAX_MIN_RATIO` (1.5);
    * the load average is at least the number of cores;
    * more than :data:`PREEMPTED_FRACTION` (10%) of the rounds had
      involuntary context switches, or CPU/wall time below
      :data:`CPU_WALL_MIN` (0.9: the thread was off the CPU);
    * the canary ran more than :data:`CANARY_SLOWDOWN` (10%) slower than its
      best in some rounds;
    * ``ci``'s relative half-width, (high - low) / (high + low), is below the
      canary's relative IQR or :data:`MIN_CI_HALF_WIDTH` (0.5%): an interval
      that narrow likely understates how much the machine drifts between runs;
    * (with ``ci`` and 6 rounds or more) the medians of the first and the last
      half of the rounds, in run order, differ by more than that half-width: the
      machine drifted during the run.
    """
    rounds = _values(rounds_ns, "instability_warnings", "rounds_ns", positive=True)
    n = int(rounds.size)
    cpu = _per_round(cpu_ns, "cpu_ns", n)
    wall = _per_round(wall_ns, "wall_ns", n, positive=True)
    if (cpu is None) != (wall is None):
        raise ValueError("instability_warnings needs cpu_ns and wall_ns together (or neither)")
    switches = _per_round(nivcsw, "nivcsw", n)
    canary = _per_round(canary_ns, "canary_ns", n, positive=True)
    out: list[str] = []

    spread = relative_iqr(rounds)
    if spread > SPREAD_LIMIT:
        out.append(f"The rounds vary by {_pct(spread)} (IQR/median); more rounds or a quieter "
                   f"machine give a tighter number.")
    max_min = float(rounds.max() / rounds.min())
    if max_min > MAX_MIN_RATIO:
        out.append(f"The slowest round took {_num(max_min)}x as long as the fastest: something "
                   f"else ran on this machine during some rounds.")

    if loadavg is not None and cores is not None:
        load = float(np.ravel(loadavg)[0])
        if not math.isfinite(load) or load < 0 or cores < 1:
            raise ValueError(f"instability_warnings needs a load average >= 0 and cores >= 1, "
                             f"got {loadavg!r} and {cores!r}")
        if load >= cores:
            out.append(f"The 1-minute load average is {_num(load)} on {cores} "
                       f"core{'s' if cores != 1 else ''}: other processes compete with the "
                       f"benchmark for the CPU.")

    if switches is not None:
        if np.any(switches < 0):
            raise ValueError("instability_warnings needs nivcsw counts >= 0")
        k = int(np.count_nonzero(switches > 0))
        if k > PREEMPTED_FRACTION * n:
            out.append(f"The thread was preempted (involuntary context switches) in "
                       f"{_rounds_of(k, n)}: another process or the kernel took its core.")
    if cpu is not None and wall is not None:
        k = int(np.count_nonzero(cpu / wall < CPU_WALL_MIN))
        if k > PREEMPTED_FRACTION * n:
            out.append(f"The thread was off the CPU for more than {_pct(1 - CPU_WALL_MIN)} of the "
                       f"time (CPU time / wall time below {CPU_WALL_MIN:g}) in {_rounds_of(k, n)}.")

    if canary is not None:
        if canary_best_ns is not None and not (math.isfinite(canary_best_ns) and canary_best_ns > 0):
            raise ValueError(f"instability_warnings needs a positive canary_best_ns, got {canary_best_ns!r}")
        best = float(canary.min()) if canary_best_ns is None else float(canary_best_ns)
        slowdown = canary / best - 1.0
        k = int(np.count_nonzero(slowdown > CANARY_SLOWDOWN))
        if k:
            out.append(f"The machine ran up to {_slower(float(slowdown.max()))} than its best "
                       f"during {_rounds_of(k, n)} (a fixed add chain timed beside the kernel).")

    if ci is not None:
        low, high = float(ci[0]), float(ci[1])
        if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high):
            raise ValueError(f"instability_warnings needs ci = (low, high) with 0 < low <= high, got {ci!r}")
        half = (high - low) / (high + low)
        drift = relative_iqr(canary) if canary is not None else 0.0
        if half < max(drift, MIN_CI_HALF_WIDTH):
            why = (f"the machine's own round-to-round drift (canary IQR/median {_pct(drift)})"
                   if drift >= MIN_CI_HALF_WIDTH else f"{_pct(MIN_CI_HALF_WIDTH)}, which few machines hold")
            out.append(f"The interval is only \u00b1{_pct(half)} wide, narrower than {why}: it likely "
                       f"understates how much this machine drifts between runs.")
        shift = _halves_shift(rounds) if len(rounds) >= 6 else 0.0
        if shift > half:
            out.append(f"The first and last halves of the rounds differ by {_pct(shift)}, more than "
                       f"the interval's \u00b1{_pct(half)}: the machine drifted during the run, so "
                       f"another run may land outside the interval.")
    return out


def _halves_shift(rounds: np.ndarray) -> float:
    """Relative difference of the medians of the first and the last half of the rounds (in
    the order they ran): a drift the order-statistic interval, which treats the rounds as
    exchangeable, does not see."""
    half = len(rounds) // 2
    a, b = float(np.median(rounds[:half])), float(np.median(rounds[-half:]))
    return abs(a - b) / min(a, b)


def summarize_warnings(per_item: Sequence[Sequence[str]], noun: str = "points") -> list[str]:
    """The warnings of several items, one line per kind, most frequent first: warnings
    that differ only in their numbers are one kind ("preempted in 2 of 10 rounds" and
    "... 3 of 10 ..."), shown by its most frequent sentence and prefixed with how many of
    the items carry one: ``"(3 of 12 points) The rounds vary ..."``."""
    kinds: dict[str, dict[str, int]] = {}  # kind -> sentence -> count
    items: dict[str, int] = {}             # kind -> items carrying it
    for warnings in per_item:
        seen = set()
        for w in warnings:
            kind = re.sub(r"\d[\d.,]*", "#", w)
            kinds.setdefault(kind, {})[w] = kinds.get(kind, {}).get(w, 0) + 1
            seen.add(kind)
        for kind in seen:
            items[kind] = items.get(kind, 0) + 1
    out = []
    for kind in sorted(kinds, key=lambda k: -items[k]):
        example = max(kinds[kind].items(), key=lambda kv: kv[1])[0]
        similar = " (figures vary by point)" if len(kinds[kind]) > 1 else ""
        out.append(f"({items[kind]} of {len(per_item)} {noun}) {example}{similar}")
    return out

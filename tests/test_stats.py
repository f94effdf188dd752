"""pycipherbench.stats: the Mann-Whitney U test against published reference values."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pycipherbench import results, stats
from pycipherbench.stats import MannWhitney, mann_whitney_u


def test_mann_whitney_exact_reference_values() -> None:
    # SciPy's documentation example (Conover): U = 17, exact two-sided p = 14/126 = 0.1111...
    males, females = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    res = mann_whitney_u(males, females)
    assert isinstance(res, MannWhitney) and (res.u, res.method) == (17.0, "exact")
    assert res.p_value == pytest.approx(1 / 9)
    # R's ?wilcox.test example (Hollander & Wolfe, permeability): W = 35, one-sided p = 0.1272
    x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
    y = [1.15, 0.88, 0.90, 0.74, 1.21]
    res = mann_whitney_u(x, y)
    assert res.u == 35 and res.method == "exact"
    assert res.p_value == pytest.approx(2 * 0.1272, abs=2e-4)
    # The smallest exact p with 4 vs 4 samples: 2 / C(8, 4) = 2/70.
    assert mann_whitney_u([1, 2, 3, 4], [5, 6, 7, 8]).p_value == pytest.approx(2 / 70)


def test_mann_whitney_normal_approximation_with_ties_by_hand() -> None:
    # x = 1 2 2 3, y = 3 4 4 5. Mid-ranks: 1 -> 1; 2,2 -> 2.5; 3,3 -> 4.5; 4,4 -> 6.5; 5 -> 8.
    # R_x = 1 + 2.5 + 2.5 + 4.5 = 10.5, U_x = 10.5 - 4*5/2 = 0.5, mean 8.
    # Three tie pairs: sum(t^3 - t) = 18; var = 16/12 * (9 - 18/56) = 11.5714...
    # z = (|0.5 - 8| - 0.5) / sqrt(var) = 2.0578; p = 2 (1 - Phi(z)) = 0.03961 (R: W = 0.5, p = 0.03961)
    res = mann_whitney_u([1, 2, 2, 3], [3, 4, 4, 5])
    assert res.u == 0.5 and res.method == "normal"
    var = 16 / 12 * (9 - 18 / 56)
    assert res.p_value == pytest.approx(math.erfc(7 / math.sqrt(var) / math.sqrt(2)))
    assert res.p_value == pytest.approx(0.03961, abs=1e-5)


def test_mann_whitney_properties() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 1, 60), rng.normal(0.5, 1, 60)  # n1*n2 > 2500: normal approximation
    ab, ba = mann_whitney_u(a, b), mann_whitney_u(b, a)
    assert ab.method == "normal" and ab.p_value == pytest.approx(ba.p_value)
    assert ab.u + ba.u == 60 * 60
    assert mann_whitney_u([3, 3, 3], [3, 3]).p_value == 1.0
    # SciPy documents 0.11134688653314041 for the Conover example with its asymptotic method.
    old = stats.EXACT_LIMIT
    try:
        stats.EXACT_LIMIT = 0
        assert mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12]).p_value == pytest.approx(
            0.11134688653314041, rel=1e-9)
    finally:
        stats.EXACT_LIMIT = old
    with pytest.raises(ValueError):
        mann_whitney_u([], [1.0])


def test_still_importable_from_results() -> None:
    assert results.mann_whitney_u is mann_whitney_u and results.MannWhitney is MannWhitney


# --- median_ci, median_ci_level --------------------------------------------------------------

def test_median_ci_order_statistic_ranks() -> None:
    from pycipherbench.stats import median_ci, median_ci_level
    values = [7.0, 3.0, 9.0, 1.0, 5.0, 10.0, 2.0, 8.0, 4.0, 6.0]  # 1..10 shuffled
    # n = 10: P(Bin(10, 1/2) <= 1) = 11/1024, so k = 2 covers 1 - 22/1024 = 0.978515625;
    # k = 3 would cover 1 - 2*56/1024 = 0.890625 < 0.95. Ranks 2 and 9.
    assert median_ci(values) == (2.0, 9.0)
    assert median_ci_level(10) == pytest.approx(1 - 22 / 1024, abs=1e-15)
    # n = 20: ranks 6 and 15, coverage 1 - 2*P(B <= 5) = 0.9586 (classic table value).
    assert median_ci(range(1, 21)) == (6.0, 15.0)
    assert median_ci_level(20) == pytest.approx(0.958610534668, abs=1e-12)
    # n = 100: ranks 40 and 61, coverage 0.9648.
    assert median_ci(range(1, 101)) == (40.0, 61.0)
    assert median_ci_level(100) == pytest.approx(0.9648, abs=1e-4)
    # At 90%, n = 10 reaches k = 3: 0.890625 < 0.90, so still k = 2; n = 11: k = 3 covers 0.9346.
    assert median_ci(range(1, 11), 0.90) == (2.0, 9.0)
    assert median_ci(range(1, 12), 0.90) == (3.0, 9.0)
    assert median_ci_level(11, 0.90) == pytest.approx(1 - 2 * 67 / 2048)


def test_median_ci_too_few_values_gives_min_max_and_says_how_much_it_covers() -> None:
    from pycipherbench.stats import median_ci, median_ci_level
    # 95% needs n >= 6: (min, max) of 6 covers 1 - 2/64 = 0.96875, of 5 only 1 - 2/32 = 0.9375.
    assert median_ci_level(6) == pytest.approx(0.96875)
    assert median_ci([5.0, 1.0, 3.0, 2.0, 4.0]) == (1.0, 5.0)
    assert median_ci_level(5) == pytest.approx(0.9375)
    assert [median_ci_level(n) for n in (1, 2, 3, 4)] == [0.0, 0.5, 0.75, 0.875]
    assert median_ci([3.5]) == (3.5, 3.5)
    assert median_ci([2.0, 1.0]) == (1.0, 2.0)
    for n in range(1, 60):
        assert median_ci_level(n) >= 0.95 or n < 6


def test_median_ci_bad_input() -> None:
    from pycipherbench.stats import median_ci, median_ci_level
    with pytest.raises(ValueError, match="at least one value"):
        median_ci([])
    with pytest.raises(ValueError, match="finite"):
        median_ci([1.0, float("nan"), 2.0])
    with pytest.raises(ValueError, match="finite"):
        median_ci([1.0, float("inf")])
    with pytest.raises(ValueError, match="confidence"):
        median_ci([1.0, 2.0], confidence=1.0)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="n >= 1"):
            median_ci_level(bad)  # type: ignore[arg-type]


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=80),
       st.floats(0.5, 0.999))
def test_median_ci_contains_the_median(values: list[float], confidence: float) -> None:
    from pycipherbench.stats import median_ci, median_ci_level
    low, high = median_ci(values, confidence)
    assert low <= float(np.median(values)) <= high
    assert low in values and high in values
    level = median_ci_level(len(values), confidence)
    assert 0.0 <= level < 1.0
    assert level >= confidence or (low, high) == (min(values), max(values))


# --- paired_ratio / Ratio ---------------------------------------------------------------------

def test_paired_ratio_exact() -> None:
    from pycipherbench.stats import Ratio, paired_ratio
    den = [100.0, 200.0, 150.0, 120.0, 300.0, 110.0, 90.0, 250.0, 180.0, 130.0]
    factors = [1.40, 1.45, 1.41, 1.43, 1.47, 1.39, 1.44, 1.42, 1.46, 1.43]
    num = [d * f for d, f in zip(den, factors)]
    r = paired_ratio(num, den, params={"size": 64})
    assert isinstance(r, Ratio)
    # Sorted factors: 1.39 1.40 1.41 1.42 1.43 1.43 1.44 1.45 1.46 1.47 -> median 1.43,
    # interval = 2nd and 9th order statistics.
    assert r.estimate == pytest.approx(1.43)
    assert (r.low, r.high) == (pytest.approx(1.40), pytest.approx(1.46))
    assert r.significant and r.n == 10 and r.level == pytest.approx(0.978515625)
    assert r.params == {"size": 64} and float(r) == r.estimate
    assert str(r) == "1.43x [1.40, 1.46] (10 rounds, this process only, significant)"
    # The reciprocal, the other way round.
    inv = paired_ratio(den, num)
    assert inv.estimate == pytest.approx(1 / 1.43) and inv.low == pytest.approx(1 / 1.46)
    assert inv.significant and inv.params == {}
    # Even n: the estimate is the geometric mean of the two middle ratios.
    r4 = paired_ratio([2.0, 8.0, 3.0, 10.0, 6.0, 7.0], [1.0, 2.0, 1.0, 2.0, 1.0, 1.0])
    assert r4.estimate == pytest.approx(math.sqrt(4 * 5))
    assert (r4.low, r4.high) == (pytest.approx(2.0), pytest.approx(7.0)) and r4.significant  # (min, max) of 6 covers 0.96875


def test_paired_ratio_cancels_slow_periods_that_hit_both_points() -> None:
    from pycipherbench.stats import paired_ratio
    rng = np.random.default_rng(7)
    slow = np.exp(np.where(rng.random(12) < 0.4, rng.uniform(0.2, 0.8, 12), 0.0))  # up to 2.2x slower
    den = 1000.0 * slow * np.exp(rng.normal(0, 0.003, 12))
    num = 1300.0 * slow * np.exp(rng.normal(0, 0.003, 12))
    r = paired_ratio(num, den)
    assert r.significant and 1.28 < r.low <= r.estimate <= r.high < 1.32
    # Unpaired, the slow rounds would swamp it: the medians' ratio is off and the rounds overlap.
    assert max(den) > min(num)


def test_paired_ratio_not_significant() -> None:
    from pycipherbench.stats import paired_ratio
    den = [100.0] * 10
    num = [95.0, 103.0, 99.0, 101.0, 104.0, 98.0, 100.5, 97.0, 102.0, 100.0]
    r = paired_ratio(num, den)
    assert not r.significant and r.low < 1 < r.high
    assert str(r) == "1.00x [0.97, 1.03] (10 rounds, this process only, not significant)"
    # Identical points: the ratio is exactly 1 and not significant.
    same = paired_ratio(den, den)
    assert (same.estimate, same.low, same.high, same.significant) == (1.0, 1.0, 1.0, False)
    # Five rounds all above 1: the (min, max) interval excludes 1 but covers only 93.75%,
    # short of 95% (a sign test would give p = 2/32 = 0.0625), so not significant.
    five = paired_ratio([1.2, 1.3, 1.25, 1.22, 1.28], [1.0] * 5)
    assert five.low > 1 and not five.significant and five.level == pytest.approx(0.9375)
    assert str(five) == "1.25x [1.20, 1.30] (5 rounds, this process only, 94% interval, not significant)"
    assert paired_ratio([1.2, 1.3, 1.25, 1.22, 1.28], [1.0] * 5, confidence=0.9).significant


def test_paired_ratio_over_processes_is_widened_by_their_spread_alone() -> None:
    """No constant: one process's tight rounds give a tight interval (for that process); the
    same rounds spread over processes whose medians differ give the processes' spread."""
    from pycipherbench.stats import paired_ratio
    den = [100.0] * 12
    one = paired_ratio([101.0] * 12, den)
    assert one.significant and one.low == pytest.approx(1.01) and one.high == pytest.approx(1.01)
    assert one.processes == 1 and "this process only" in str(one)
    num = [101.0, 101.0, 99.0, 99.0, 103.0, 103.0, 100.0, 100.0, 102.0, 102.0, 98.0, 98.0]
    proc = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    r = paired_ratio(num, den, process=proc)
    logs = np.log(np.array(num[::2]) / 100.0)
    from scipy.stats import t as student_t
    half = student_t.ppf(0.975, 5) * logs.std(ddof=1) / math.sqrt(6)
    assert r.processes == 6 and not r.significant
    assert math.log(r.high / r.estimate) == pytest.approx(half)
    assert math.log(r.estimate / r.low) == pytest.approx(half)
    assert "6 processes x 2 rounds" in str(r)
    with pytest.raises(ValueError, match="one process index per round"):
        paired_ratio(num, den, process=proc[:-1])


def test_ratio_str_shows_enough_digits() -> None:
    from pycipherbench.stats import Ratio
    assert str(Ratio(1.004, 1.001, 1.007, True, 20, 0.96)) == "1.004x [1.001, 1.007] (20 rounds, this process only, significant)"
    assert str(Ratio(2.5, 2.0, 3.0, True, 1, 0.0)) == "2.50x [2.00, 3.00] (1 round, 0% interval, significant)"


def test_paired_ratio_bad_input() -> None:
    from pycipherbench.stats import paired_ratio
    with pytest.raises(ValueError, match="equal lengths"):
        paired_ratio([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="numerator"):
        paired_ratio([], [1.0])
    with pytest.raises(ValueError, match="positive numbers in denominator"):
        paired_ratio([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="positive numbers in numerator"):
        paired_ratio([-1.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        paired_ratio([1.0, float("nan")], [1.0, 1.0])


# --- compare_rounds ---------------------------------------------------------------------------

def test_compare_rounds_exact() -> None:
    from pycipherbench.stats import RoundComparison, compare_rounds
    a = [100.0, 104.0, 98.0, 101.0, 99.0, 103.0, 97.0, 102.0, 100.5, 99.5]
    b = [x * 1.5 for x in a]
    c = compare_rounds(a, b)
    assert isinstance(c, RoundComparison)
    assert c.ratio == pytest.approx(1.5) and float(c) == c.ratio
    # Each median interval at sqrt(0.95) = 0.9747 with 10 rounds: 2nd and 9th order statistics.
    # a sorted: 97 98 99 99.5 100 100.5 101 102 103 104 -> [98, 103]; b = 1.5 a -> [147, 154.5].
    assert (c.low, c.high) == (pytest.approx(147 / 103), pytest.approx(154.5 / 98))
    assert c.level == pytest.approx(0.978515625 ** 2)
    assert c.p_value == pytest.approx(2 / math.comb(20, 10))  # completely separated
    # Relative IQR of a (linear quartiles 99.125, 101.75 around 100.25), the same for b.
    assert c.spread == pytest.approx((101.75 - 99.125) / 100.25)
    assert (c.significant, c.note, c.n_a, c.n_b) == (True, "", 10, 10)
    assert str(c) == "1.50x [1.43, 1.58] (10 vs 10 rounds, p = 1.1e-05, significant)"


def test_compare_rounds_is_symmetric() -> None:
    from pycipherbench.stats import compare_rounds
    rng = np.random.default_rng(3)
    for _ in range(50):
        a = 1000 * np.exp(rng.normal(0, 0.05, 12))
        b = 1000 * rng.choice([1.0, 1.1, 1.3]) * np.exp(rng.normal(0, 0.05, 10))
        ab, ba = compare_rounds(a, b), compare_rounds(b, a)
        assert ab.ratio == pytest.approx(1 / ba.ratio)
        assert (ab.low, ab.high) == (pytest.approx(1 / ba.high), pytest.approx(1 / ba.low))
        assert ab.p_value == pytest.approx(ba.p_value) and ab.significant == ba.significant
        assert ab.low <= ab.ratio <= ab.high


def test_compare_rounds_too_few_rounds_gives_no_verdict() -> None:
    from pycipherbench.stats import MIN_VERDICT_ROUNDS, compare_rounds
    c = compare_rounds([1.0, 1.1, 1.2], [5.0, 5.1, 5.2])
    assert c.significant is None and c.p_value == pytest.approx(0.1)
    assert "3 vs 3 rounds cannot give p < 0.05" in c.note and "smallest possible p is 0.1" in c.note
    assert str(c).endswith("(3 vs 3 rounds, p = 0.1, no verdict)")
    # 4 vs 4 could reach p = 2/70, but one slow period can cover a third of a 4-round run.
    c = compare_rounds([1.0, 1.1, 1.2, 1.3], [5.0, 5.1, 5.2, 5.3])
    assert c.p_value == pytest.approx(2 / 70) and c.significant is None
    assert f"at least {MIN_VERDICT_ROUNDS} rounds" in c.note
    # At alpha = 1e-5 even 8 vs 8 cannot (smallest p = 2/12870).
    eight = [1.0 + i / 100 for i in range(8)]
    c = compare_rounds(eight, [5 * x for x in eight], alpha=1e-5)
    assert c.significant is None and "cannot give p < 1e-05" in c.note and "at least 11 rounds" in c.note
    assert compare_rounds(eight, [5 * x for x in eight]).significant is True


def test_compare_rounds_guard_explains_a_no_that_p_alone_would_call_a_yes() -> None:
    from pycipherbench.stats import compare_rounds
    # Completely separated runs (p = 2/C(24, 12)), 12% apart, but each run's rounds spread
    # over 11%: a = 100..111, b = 113..124. Interval: b(2)/a(11) = 114/110 = 1.036 clears 1
    # but not 1 + spread = 1 + (108.25 - 102.75)/105.5 = 1.052.
    a = [100.0 + i for i in range(12)]
    b = [113.0 + i for i in range(12)]
    c = compare_rounds(a, b)
    assert c.p_value == pytest.approx(2 / math.comb(24, 12)) and c.significant is False
    assert c.low == pytest.approx(114 / 110) and c.spread == pytest.approx(5.5 / 105.5)
    assert c.note == (f"p = {c.p_value:.2g}, but the interval does not clear the runs' own "
                      "round-to-round spread (IQR/median up to 5.2%), which is how far a slow "
                      "period in one run can move its median")
    # p < alpha but the interval includes 1: a different reason.
    a = [100.0, 96.0, 104.0, 98.0, 102.0, 97.0, 103.0, 99.0, 101.0, 100.0, 95.0, 105.0]
    b = [x * 1.03 + 1.0 for x in a[:6]] + [x * 1.06 for x in a[6:]]
    c = compare_rounds(a, b)
    assert c.p_value < 0.05 and c.low < 1 < c.high and c.significant is False
    assert "the interval includes 1" in c.note
    # Equal runs: plainly not significant, no note.
    same = compare_rounds(a, a)
    assert (same.ratio, same.p_value, same.significant, same.note) == (1.0, 1.0, False, "")


def test_compare_rounds_bad_input() -> None:
    from pycipherbench.stats import compare_rounds
    with pytest.raises(ValueError, match="at least one value in a"):
        compare_rounds([], [1.0])
    with pytest.raises(ValueError, match="at least one value in b"):
        compare_rounds([1.0], [])
    with pytest.raises(ValueError, match="finite"):
        compare_rounds([1.0, float("nan")], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive numbers in b"):
        compare_rounds([1.0, 2.0], [1.0, -2.0])
    with pytest.raises(ValueError, match="alpha"):
        compare_rounds([1.0, 2.0], [1.0, 2.0], alpha=0.0)


# Simulated runs on a noisy machine. Every round of a run carries a slow-period factor shared
# by consecutive rounds and independent between runs, times per-round jitter.

def _markov_run(rng: np.random.Generator, n: int) -> np.ndarray:
    """Slow periods entered with probability 0.1 per round, lasting 3 rounds on average
    (geometric), each 15% +- 5% slower (about a quarter of the rounds are slow); 3% jitter."""
    log_slow = np.zeros(n)
    slow = rng.random() < 0.3 / 1.3  # start in the stationary state
    level = rng.normal(math.log(1.15), 0.05)
    for t in range(n):
        if not slow and rng.random() < 0.1:
            slow, level = True, rng.normal(math.log(1.15), 0.05)
        if slow:
            log_slow[t] = level
            slow = rng.random() >= 1 / 3
    return np.exp(log_slow + rng.normal(0.0, 0.03, n))


def _ar_run(rng: np.random.Generator, n: int) -> np.ndarray:
    """log-AR(1) drift, lag-1 correlation 0.8, 5% marginal sd; 2% jitter."""
    x = np.empty(n)
    x[0] = rng.normal(0.0, 0.05)
    for t in range(1, n):
        x[t] = 0.8 * x[t - 1] + rng.normal(0.0, 0.05 * math.sqrt(1 - 0.8 ** 2))
    return np.exp(x + rng.normal(0.0, 0.02, n))


@pytest.mark.parametrize("run, trials", [(_markov_run, 2000), (_ar_run, 1000)])
def test_compare_rounds_ab_false_positive_rate_at_most_alpha(run: Any, trials: int) -> None:
    from pycipherbench.stats import compare_rounds
    rng = np.random.default_rng(20240601)
    called = plain = 0
    for _ in range(trials):
        c = compare_rounds(1000.0 * run(rng, 10), 1000.0 * run(rng, 10))
        called += c.significant is True
        plain += c.p_value < 0.05
    # The setting is one where a plain Mann-Whitney test over rounds over-rejects badly
    # (observed: 20% and 44%) ...
    assert plain / trials > 0.15
    # ... and the guard stays within alpha (observed: 2.4% and 1.8%); slack: 2 binomial sd.
    assert called / trials <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / trials)


@pytest.mark.parametrize("run, power", [(_markov_run, 0.5), (_ar_run, 0.9)])
def test_compare_rounds_detects_a_real_1_3x_with_10_rounds(run: Any, power: float) -> None:
    from pycipherbench.stats import compare_rounds
    rng = np.random.default_rng(99)
    trials = 500
    hits = sum(compare_rounds(1000.0 * run(rng, 10), 1300.0 * run(rng, 10)).significant is True
               for _ in range(trials))
    assert hits / trials >= power  # observed: 0.70 and 0.96


# --- instability_warnings ---------------------------------------------------------------------

_STEADY = [100.0, 101.0, 99.0, 100.5, 100.0, 99.5, 101.5, 100.0, 98.5, 100.0]


def test_instability_warnings_stable_is_empty() -> None:
    from pycipherbench.stats import instability_warnings
    assert instability_warnings(rounds_ns=_STEADY) == []
    assert instability_warnings(
        rounds_ns=_STEADY, cpu_ns=[99.0] * 10, wall_ns=[100.0] * 10, nivcsw=[0] * 9 + [1],
        canary_ns=[10.0, 10.1, 10.0, 10.05, 10.0, 10.2, 10.0, 10.0, 10.1, 10.0], canary_best_ns=9.9,
        loadavg=(0.4, 0.3, 0.2), cores=2, ci=(0.97, 1.03)) == []


def test_instability_warnings_each_rule() -> None:
    from pycipherbench.stats import instability_warnings

    def only(**kw: Any) -> str:
        out = instability_warnings(**kw)
        assert len(out) == 1, out
        return out[0]

    # Spread: quartiles 90 and 110 around 100 -> 20%.
    wide = [80.0, 90.0, 90.0, 95.0, 100.0, 100.0, 105.0, 110.0, 110.0, 120.0]
    assert only(rounds_ns=[90.0, 90.0, 100.0, 110.0, 110.0]) == (
        "The rounds vary by 20% (IQR/median); more rounds or a quieter machine give a tighter number.")
    assert len(instability_warnings(rounds_ns=wide)) == 1
    # Max/min: one round at 1.6x, the quartiles untouched.
    assert only(rounds_ns=_STEADY[:-1] + [160.0]) == (
        "The slowest round took 1.62x as long as the fastest: something else ran on this "
        "machine during some rounds.")
    # Load: at or above the cores; a bare float works too.
    assert only(rounds_ns=_STEADY, loadavg=(2.0, 1.0, 0.5), cores=2) == (
        "The 1-minute load average is 2.00 on 2 cores: other processes compete with the "
        "benchmark for the CPU.")
    assert only(rounds_ns=_STEADY, loadavg=1.37, cores=1).startswith(
        "The 1-minute load average is 1.37 on 1 core:")
    assert instability_warnings(rounds_ns=_STEADY, loadavg=1.99, cores=2) == []
    assert instability_warnings(rounds_ns=_STEADY, loadavg=9.0) == []  # no cores: no judgement
    # Preempted: more than 10% of the rounds (1 of 10 is not, 2 of 10 is).
    assert instability_warnings(rounds_ns=_STEADY, nivcsw=[0] * 9 + [3]) == []
    assert only(rounds_ns=_STEADY, nivcsw=[0, 2, 0, 0, 0, 0, 1, 0, 0, 0]) == (
        "The thread was preempted (involuntary context switches) in 2 of 10 rounds: another "
        "process or the kernel took its core.")
    # Off-CPU: cpu/wall < 0.9 in 3 of 10 rounds (0.9 itself is fine).
    assert only(rounds_ns=_STEADY, cpu_ns=[89.0, 50.0, 80.0] + [90.0] * 7, wall_ns=[100.0] * 10) == (
        "The thread was off the CPU for more than 10% of the time (CPU time / wall time below "
        "0.9) in 3 of 10 rounds.")
    # Canary: best 10 ns; 11.5 and 13 ns are more than 10% slower, 10.9 ns is not.
    canary = [10.0, 10.2, 11.5, 10.1, 13.0, 10.0, 10.9, 10.0, 10.1, 10.0]
    assert only(rounds_ns=_STEADY, canary_ns=canary, canary_best_ns=10.0) == (
        "The machine ran up to 30% slower than its best during 2 of 10 rounds (a fixed add "
        "chain timed beside the kernel).")
    # Without canary_best_ns the best of these rounds is the reference: the same here.
    assert instability_warnings(rounds_ns=_STEADY, canary_ns=canary)[0].startswith(
        "The machine ran up to 30% slower")
    # A better canary earlier in the process makes every round here slow.
    assert "during 10 of 10 rounds" in only(rounds_ns=_STEADY, canary_ns=[10.0] * 10, canary_best_ns=8.0)


def test_instability_warnings_interval_too_narrow_to_be_true() -> None:
    from pycipherbench.stats import instability_warnings
    # Relative half-width (1.003 - 0.997) / 2 = 0.3% < 0.5%.
    assert instability_warnings(rounds_ns=_STEADY, ci=(0.997, 1.003)) == [
        "The interval is only \u00b10.3% wide, narrower than 0.5%, which few machines hold: it "
        "likely understates how much this machine drifts between runs."]
    assert instability_warnings(rounds_ns=_STEADY, ci=(0.99, 1.01)) == []
    # The canary's own spread is 2% (quartiles 9.9 and 10.1): a +-1% interval is too narrow.
    canary = [9.8, 9.85, 9.9, 9.9, 10.0, 10.0, 10.1, 10.1, 10.15, 10.2]
    out = instability_warnings(rounds_ns=_STEADY, canary_ns=canary, canary_best_ns=9.8, ci=(990.0, 1010.0))
    assert out == [
        "The interval is only \u00b11.0% wide, narrower than the machine's own round-to-round drift "
        "(canary IQR/median 2.0%): it likely understates how much this machine drifts between runs."]
    assert instability_warnings(rounds_ns=_STEADY, canary_ns=canary, canary_best_ns=9.8,
                                ci=(970.0, 1030.0)) == []


def test_instability_warnings_bad_input() -> None:
    from pycipherbench.stats import instability_warnings
    with pytest.raises(ValueError, match="at least one value in rounds_ns"):
        instability_warnings(rounds_ns=[])
    with pytest.raises(ValueError, match="finite"):
        instability_warnings(rounds_ns=[1.0, float("nan")])
    with pytest.raises(ValueError, match="positive numbers in rounds_ns"):
        instability_warnings(rounds_ns=[1.0, 0.0])
    with pytest.raises(ValueError, match="one value of canary_ns per round: 10 rounds, got 3"):
        instability_warnings(rounds_ns=_STEADY, canary_ns=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="cpu_ns and wall_ns together"):
        instability_warnings(rounds_ns=_STEADY, cpu_ns=_STEADY)
    with pytest.raises(ValueError, match="nivcsw"):
        instability_warnings(rounds_ns=_STEADY, nivcsw=[-1] + [0] * 9)
    with pytest.raises(ValueError, match="canary_best_ns"):
        instability_warnings(rounds_ns=_STEADY, canary_ns=_STEADY, canary_best_ns=0.0)
    with pytest.raises(ValueError, match="ci"):
        instability_warnings(rounds_ns=_STEADY, ci=(2.0, 1.0))
    with pytest.raises(ValueError, match="cores"):
        instability_warnings(rounds_ns=_STEADY, loadavg=1.0, cores=0)
    with pytest.raises(TypeError):
        instability_warnings(_STEADY)  # type: ignore[misc]  # keyword-only


def test_all_lists_the_new_api() -> None:
    for name in ("median_ci", "median_ci_level", "relative_iqr", "Ratio", "paired_ratio",
                 "RoundComparison", "compare_rounds", "instability_warnings", "SPREAD_LIMIT",
                 "MAX_MIN_RATIO", "PREEMPTED_FRACTION", "CPU_WALL_MIN", "CANARY_SLOWDOWN",
                 "MIN_CI_HALF_WIDTH", "MIN_VERDICT_ROUNDS", "mann_whitney_u", "MannWhitney"):
        assert name in stats.__all__ and hasattr(stats, name)


def test_summarize_warnings_groups_sentences_that_differ_only_in_numbers() -> None:
    from pycipherbench.stats import summarize_warnings

    got = summarize_warnings([["preempted in 2 of 3 rounds", "load 2.1 on 2 cores"],
                              ["preempted in 3 of 3 rounds"], ["preempted in 2 of 3 rounds"], []],
                             noun="rows")
    assert got == ["(3 of 4 rows) preempted in 2 of 3 rounds (figures vary by point)",
                   "(1 of 4 rows) load 2.1 on 2 cores"]
    assert summarize_warnings([[], []]) == []


def test_instability_warnings_see_a_drift_between_the_halves_of_a_run() -> None:
    from pycipherbench.stats import instability_warnings, median_ci

    steady = [100.0, 100.2, 99.9, 100.1, 100.0, 99.8, 100.1, 100.0, 99.9, 100.2]
    drifting = [100.0, 100.2, 99.9, 100.1, 100.0, 103.0, 103.2, 102.9, 103.1, 103.0]
    assert not any("halves" in w for w in instability_warnings(rounds_ns=steady, ci=median_ci(steady)))
    got = instability_warnings(rounds_ns=drifting, ci=median_ci(drifting))
    assert any("first and last halves of the rounds differ by 3" in w for w in got), got

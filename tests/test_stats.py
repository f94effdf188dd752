"""pycipherbench.stats: the Mann-Whitney U test against published reference values."""

from __future__ import annotations

import math

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
    assert str(r) == "1.43x [1.40, 1.46] (10 rounds, significant)"
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
    assert str(r) == "1.00x [0.97, 1.03] (10 rounds, not significant)"
    # Identical points: the ratio is exactly 1 and not significant.
    same = paired_ratio(den, den)
    assert (same.estimate, same.low, same.high, same.significant) == (1.0, 1.0, 1.0, False)
    # Five rounds all above 1: the (min, max) interval excludes 1 but covers only 93.75%,
    # short of 95% (a sign test would give p = 2/32 = 0.0625), so not significant.
    five = paired_ratio([1.2, 1.3, 1.25, 1.22, 1.28], [1.0] * 5)
    assert five.low > 1 and not five.significant and five.level == pytest.approx(0.9375)
    assert str(five) == "1.25x [1.20, 1.30] (5 rounds, 94% interval, not significant)"
    assert paired_ratio([1.2, 1.3, 1.25, 1.22, 1.28], [1.0] * 5, confidence=0.9).significant


def test_ratio_str_shows_enough_digits() -> None:
    from pycipherbench.stats import Ratio
    assert str(Ratio(1.004, 1.001, 1.007, True, 20, 0.96)) == "1.004x [1.001, 1.007] (20 rounds, significant)"
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

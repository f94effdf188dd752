"""pycipherbench.stats: the Mann-Whitney U test against published reference values."""

from __future__ import annotations

import math

import numpy as np
import pytest

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

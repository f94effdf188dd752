"""Statistical tests on raw samples, built on :mod:`scipy.stats`.

Today: the two-sided Mann–Whitney U test that :meth:`Results.compare` uses to
say whether one set of samples is faster than another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import stats as _scipy_stats  # type: ignore[import-untyped]  # no stubs

__all__ = ["EXACT_LIMIT", "MannWhitney", "mann_whitney_u"]

#: Largest n1*n2 for which the p-value is exact (the permutation distribution of U).
EXACT_LIMIT = 2500


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
    res = _scipy_stats.mannwhitneyu(a, b, alternative="two-sided", use_continuity=True,
                                    method="exact" if exact else "asymptotic")
    return MannWhitney(float(res.statistic), float(res.pvalue), "exact" if exact else "normal")

"""Exact binomial tests of rounding/perturbation probabilities and the Wilcoxon signed-rank test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from cubeguard.measures import tests_stat
from cubeguard.measures.errors import MeasureConfigError

# Random rounding to base 3. Residual 1: originals 1, 1, 1, 4 -> 3, 0, 0, 3 (one of four up);
# residual 2: originals 2, 2, 5 -> 3, 3, 6 (three of three up); 3 and 0 are multiples of 3.
ORIG = np.array([1, 1, 1, 2, 2, 4, 5, 3, 0])
ROUNDED = np.array([3, 0, 0, 3, 3, 3, 6, 3, 0])


def test_random_rounding_binomial_by_hand() -> None:
    t = tests_stat.random_rounding_binomial_tests(ORIG, ROUNDED, 3)
    assert t[["residual", "trials", "successes", "off_grid"]].values.tolist() == [[1, 4, 1, 0], [2, 3, 3, 0]]
    # residual 1: Binomial(4, 1/3) pmf 16/81, 32/81, 24/81, 8/81, 1/81; k = 1 has the largest
    # probability, so the two-sided p-value (sum of pmf <= pmf(1)) is 1.
    assert t.loc[0, "p_value"] == pytest.approx(1.0)
    # residual 2: Binomial(3, 2/3) pmf 1/27, 6/27, 12/27, 8/27; pmf <= pmf(3) = 8/27 for k = 0, 1, 3:
    # p = (1 + 6 + 8) / 27 = 0.555556
    assert t.loc[1, "p_value"] == pytest.approx(15 / 27)
    assert t.loc[1, "expected_p"] == pytest.approx(2 / 3)


def test_off_grid_cells_are_counted() -> None:
    # 4 published as 5 is neither 3 nor 6
    t = tests_stat.random_rounding_binomial_tests([4], [5], 3)
    assert t.loc[0, "off_grid"] == 1


def test_transition_binomial_by_hand() -> None:
    # stated: value 1 goes +2 (to 3) with p 1/3; values >= 4 (cap) stay (noise 0) with p 1/2.
    # value 1: 3 cells, 1 moved by +2 -> binomtest(1, 3, 1/3): pmf 8/27, 12/27, 6/27, 1/27 -> p = 1
    # cap 4: cells 4 and 5, noises -1 and +1, none 0 -> binomtest(0, 2, 1/2) = 0.5 (two-sided)
    t = tests_stat.transition_binomial_tests(ORIG, ROUNDED, {1: {2: 1 / 3}, 4: {0: 0.5}}, cap=4)
    assert t[["original", "noise", "trials", "successes"]].values.tolist() == [[1, 2, 3, 1], [4, 0, 2, 0]]
    assert t["p_value"].tolist() == pytest.approx([1.0, 0.5])


def test_transition_without_cells_gives_nan() -> None:
    t = tests_stat.transition_binomial_tests(ORIG, ROUNDED, {7: {0: 0.5}})
    assert t.loc[0, "trials"] == 0
    assert math.isnan(t.loc[0, "p_value"])


def test_bad_probability() -> None:
    with pytest.raises(MeasureConfigError, match=r"transition probabilities must lie in \[0, 1\]"):
        tests_stat.transition_binomial_tests(ORIG, ROUNDED, {1: {1: 1.5}})


def test_bad_base() -> None:
    with pytest.raises(MeasureConfigError, match="the rounding base must be at least 2, got 1"):
        tests_stat.random_rounding_binomial_tests(ORIG, ROUNDED, 1)


def test_wilcoxon_by_hand() -> None:
    # deviations 0 1 -1 1 -1 0; zeros dropped -> 1 -1 1 -1, all |d| tie at rank 2.5:
    # W+ = W- = 5 = n(n+1)/4, so z = 0 and the p-value is 1
    r = tests_stat.wilcoxon_signed_rank([3, 0, 1, 2, 5, 0], [3, 1, 0, 3, 4, 0])
    assert (r.statistic, r.n) == (5.0, 4)
    assert r.p_value == pytest.approx(1.0)


def test_wilcoxon_without_deviations() -> None:
    assert tests_stat.wilcoxon_signed_rank([1, 2], [1, 2]) == (0.0, 1.0, 0)


def test_wilcoxon_large_sample_equals_scipy_normal_approximation() -> None:
    rng = np.random.default_rng(7)
    o = rng.poisson(5, 6000)
    p = np.maximum(o + rng.integers(-2, 4, 6000), 0)
    ours = tests_stat.wilcoxon_signed_rank(o, p, scipy_below=10)
    d = (p - o)[p != o]
    ref = stats.wilcoxon(d, method="approx")
    assert ours.n == d.size
    assert ours.statistic == pytest.approx(float(ref.statistic))
    assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-300)

"""Pearson's statistic of a log-linear model before and after protection (Handbook on SDC v2, 5.8)."""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.measures.association import cramers_v
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.measures.loglinear import fitted_frequencies, pearson_fit, pearson_fit_change

# axes (A, B, C); the layers C = 0 and C = 1 as two-way tables of A x B
ORIGINAL = np.stack([[[4, 2], [2, 4]], [[3, 1], [1, 3]]], axis=-1)
PROTECTED = np.stack([[[3, 3], [3, 3]], [[3, 1], [1, 3]]], axis=-1)
A_B_GIVEN_C = ((0, 2), (1, 2))


def test_conditional_independence_by_hand() -> None:
    """A and B independent given C: m_abc = n_a+c n_+bc / n_++c.

    Original: layer C = 0 has margins 6, 6 of 12 -> every m = 3, X2 = 4 * 1^2 / 3 = 4/3; layer
    C = 1 margins 4, 4 of 8 -> m = 2, X2 = 4 * 1^2 / 2 = 2; in all 10/3 = 3.333333.
    Protected: layer C = 0 is uniform (X2 = 0), layer C = 1 unchanged (2); in all 2.
    """
    np.testing.assert_allclose(fitted_frequencies(ORIGINAL, A_B_GIVEN_C)[..., 0], [[3, 3], [3, 3]])
    change = pearson_fit_change(ORIGINAL, PROTECTED, A_B_GIVEN_C)
    assert change.original == pytest.approx(10 / 3)
    assert change.protected == pytest.approx(2.0)
    assert change.relative_change == pytest.approx(-0.4)


def test_independence_of_a_two_way_table_is_cramers_chi_squared() -> None:
    table = np.array([[10, 3, 2], [1, 5, 7]])
    # Cramér's V = sqrt(X2 / (n (min(r, c) - 1))), n = 28
    assert pearson_fit(table) == pytest.approx(cramers_v(table) ** 2 * 28)


def test_no_three_way_interaction_fits_every_two_way_margin() -> None:
    fit = fitted_frequencies(ORIGINAL)
    for other in range(3):
        np.testing.assert_allclose(fit.sum(axis=other), ORIGINAL.sum(axis=other), atol=1e-8)


def test_saturated_model_fits_exactly() -> None:
    assert pearson_fit(ORIGINAL, ((0, 1, 2),)) == pytest.approx(0.0, abs=1e-12)


def test_margins_outside_the_table_are_refused() -> None:
    with pytest.raises(MeasureConfigError, match=r"log-linear margins must be tuples of axes 0 to 2, got \[\(0, 3\)\]"):
        pearson_fit(ORIGINAL, [(0, 3)])

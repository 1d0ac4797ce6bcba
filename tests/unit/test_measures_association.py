"""Cramér's V and Spearman's rank correlation against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from cubeguard.measures import association
from cubeguard.measures._ranks import average_ranks, tie_sizes
from cubeguard.measures.errors import MeasureConfigError, NegativeCountError

ORIG = np.array([[3, 0, 1], [2, 5, 0]])
PROT = np.array([[3, 1, 0], [3, 4, 0]])


def test_cramers_v_by_hand() -> None:
    # rows 4, 7; columns 5, 5, 1; n = 11. Expected E = row * col / n:
    #   [[1.818182, 1.818182, 0.363636], [3.181818, 3.181818, 0.636364]]
    # (ORIG - E)^2 / E: 0.768182 + 1.818182 + 1.113636 + 0.438961 + 1.038961 + 0.636364 = 5.814286
    # V = sqrt(5.814286 / (11 * (2 - 1))) = sqrt(0.528571) = 0.727029
    assert association.cramers_v(ORIG) == pytest.approx(0.727029, abs=1e-6)


def test_cramers_v_drops_empty_rows_and_columns() -> None:
    # the zero row and column change nothing: [[10, 0], [0, 10]] is perfect association
    assert association.cramers_v([[10, 0, 0], [0, 10, 0], [0, 0, 0]]) == pytest.approx(1.0)


def test_cramers_v_of_a_single_non_empty_row_is_nan() -> None:
    assert math.isnan(association.cramers_v([[3, 4], [0, 0]]))


def test_cramers_v_change_reports_both_tables() -> None:
    # PROT: rows 4, 7; columns 6, 5, 0 -> the empty third column is dropped;
    # E = [[2.181818, 1.818182], [3.818182, 3.181818]];
    # (PROT - E)^2 / E: 0.306818 + 0.368182 + 0.175325 + 0.210390 = 1.060714; V = sqrt(1.060714 / 11) = 0.310530
    change = association.cramers_v_change(ORIG, PROT)
    assert change.original == pytest.approx(0.727029, abs=1e-6)
    assert change.protected == pytest.approx(0.310530, abs=1e-6)
    assert change.relative_change == pytest.approx(0.310530 / 0.727029 - 1, abs=1e-5)


def test_cramers_v_needs_two_dimensions() -> None:
    with pytest.raises(MeasureConfigError, match=r"Cramér's V needs a two-way table, got 3 dimension\(s\)"):
        association.cramers_v(np.ones((2, 2, 2)))


def test_cramers_v_rejects_negative_counts() -> None:
    with pytest.raises(NegativeCountError, match="Cramér's V needs non-negative counts"):
        association.cramers_v([[1, -1], [2, 3]])


def test_cramers_v_takes_a_dataarray() -> None:
    assert association.cramers_v(xr.DataArray(ORIG, dims=("A", "B"))) == pytest.approx(0.727029, abs=1e-6)


def test_spearman_by_hand() -> None:
    # ORIG flat 3 0 1 2 5 0 -> ranks 5 1.5 3 4 6 1.5; PROT flat 3 1 0 3 4 0 -> ranks 4.5 3 1.5 4.5 6 1.5
    # centred (mean 3.5): [1.5 -2 -0.5 0.5 2.5 -2] and [1 -0.5 -2 1 2.5 -2]
    # sum of products 14.25; sums of squares 17 and 16.5; r = 14.25 / sqrt(280.5) = 0.850841
    assert association.spearman_rank_correlation(ORIG, PROT) == pytest.approx(0.850841, abs=1e-6)


def test_spearman_of_a_constant_side_is_nan() -> None:
    assert math.isnan(association.spearman_rank_correlation([1, 2, 3], [4, 4, 4]))


def test_average_ranks_match_rankdata_with_large_values() -> None:
    # 70000 and 10**7 exceed the histogram range and are ranked separately
    values = np.array([5, 70_000, 0, 5, 10**7, 70_000, 3])
    # sorted: 0(1) 3(2) 5 5(3.5) 70000 70000(5.5) 10**7(7)
    assert average_ranks(values).tolist() == [3.5, 5.5, 1.0, 3.5, 7.0, 5.5, 2.0]
    assert sorted(tie_sizes(values).tolist()) == [1, 1, 1, 2, 2]

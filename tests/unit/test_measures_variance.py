"""Variance of the average cell size and one-way ANOVA R² against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from cubeguard.measures import variance
from cubeguard.measures.errors import CubeMismatchError, MeasureConfigError

T = xr.DataArray(np.array([[3, 0, 1], [2, 5, 0]]), dims=("A", "B"), coords={"B": ["b1", "b2", "b3"]})


def test_average_cell_size_variance_of_rows() -> None:
    # row means 4/3 and 7/3, their mean 11/6; variance ((-1/2)^2 + (1/2)^2) / 2 = 0.25
    assert variance.average_cell_size_variance(T, ["A"]) == pytest.approx(0.25)


def test_average_cell_size_variance_of_columns() -> None:
    # column means 2.5, 2.5, 0.5, their mean 11/6; variance (4/9 + 4/9 + 16/9) / 3 = 0.888889
    assert variance.average_cell_size_variance(T, ["B"]) == pytest.approx(8 / 9)


def test_average_cell_size_variance_of_the_whole_table() -> None:
    # cells 3 0 1 2 5 0, mean 11/6; squared deviations sum to 18.833333; / 6 = 3.138889
    assert variance.average_cell_size_variance(T) == pytest.approx(113 / 36)


def test_average_cell_size_variance_change() -> None:
    # protected rows [3, 1, 0] and [3, 4, 0]: means 4/3, 7/3 again -> 0.25 both
    p = T.copy(data=[[3, 1, 0], [3, 4, 0]])
    change = variance.average_cell_size_variance_change(T, p, ["A"])
    assert change == pytest.approx((0.25, 0.25))
    assert change.relative_change == pytest.approx(0.0)


def test_anova_r2_by_hand() -> None:
    # target B with scores 0, 1, 2; groups a1 (n 4, sum 0*3 + 1*0 + 2*1 = 2, mean 0.5) and
    # a2 (n 7, sum 5, mean 5/7); overall n 11, mean 7/11 = 0.636364.
    # SSB = 4 (0.5 - 0.636364)^2 + 7 (0.714286 - 0.636364)^2 = 0.074380 + 0.042503 = 0.116883
    # SST = 5 (0 - 0.636364)^2 + 5 (1 - 0.636364)^2 + 1 (2 - 0.636364)^2 = 4.545455; R² = 0.025714
    assert variance.anova_r2(T, "B") == pytest.approx(0.025714, abs=1e-6)


def test_anova_r2_with_scores() -> None:
    # scores b1 = 10, b2 = 20, b3 = 30 are 10 + 10 * position: R² is unchanged
    assert variance.anova_r2(T, "B", {"b1": 10, "b2": 20, "b3": 30}) == pytest.approx(0.025714, abs=1e-6)


def test_anova_r2_without_spread_is_nan() -> None:
    assert math.isnan(variance.anova_r2(T.copy(data=[[3, 0, 0], [2, 0, 0]]), "B"))


def test_anova_r2_needs_a_score_for_each_code() -> None:
    with pytest.raises(MeasureConfigError, match=r"ANOVA scores lack code\(s\) \['b3'\] of 'B'"):
        variance.anova_r2(T, "B", {"b1": 1, "b2": 2})


def test_anova_r2_change_checks_cells() -> None:
    other = T.assign_coords(B=["x", "y", "z"])
    with pytest.raises(CubeMismatchError, match="codes differ"):
        variance.anova_r2_change(T, other, "B")


def test_unknown_dimension() -> None:
    with pytest.raises(MeasureConfigError, match=r"ANOVA target: unknown dimension\(s\) \['C'\]; known: A, B"):
        variance.anova_r2(T, "C")


def test_plain_arrays_are_rejected() -> None:
    with pytest.raises(MeasureConfigError, match="needs a table with named dimensions"):
        variance.average_cell_size_variance(np.array([1, 2]))  # type: ignore[arg-type]

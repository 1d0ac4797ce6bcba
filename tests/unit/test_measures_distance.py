"""Distance metrics against values worked out by hand on a 2 x 3 table.

Original ORIG = [[3, 0, 1], [2, 5, 0]], protected PROT = [[3, 1, 0], [3, 4, 0]], both with total 11.
|PROT - ORIG| = [[0, 1, 1], [1, 1, 0]].
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from cubeguard.measures import distance
from cubeguard.measures.errors import CubeMismatchError, NegativeCountError

ORIG = np.array([[3, 0, 1], [2, 5, 0]])
PROT = np.array([[3, 1, 0], [3, 4, 0]])


def test_absolute_distance() -> None:
    # 0 + 1 + 1 + 1 + 1 + 0 = 4
    assert distance.absolute_distance(ORIG, PROT) == 4.0


def test_average_absolute_distance() -> None:
    # 4 / 6 cells
    assert distance.average_absolute_distance(ORIG, PROT) == pytest.approx(4 / 6)


def test_max_absolute_deviation() -> None:
    assert distance.max_absolute_deviation(ORIG, PROT) == 1.0


def test_rad_is_the_mean_over_non_zero_original_cells() -> None:
    # non-zero originals 3, 1, 2, 5 with deviations 0, 1, 1, 1:
    # 0/3 + 1/1 + 1/2 + 1/5 = 1.7 over 4 cells = 0.425 (the two zero originals are left out)
    assert distance.relative_absolute_distance(ORIG, PROT) == pytest.approx(0.425)


def test_rad_sum() -> None:
    # 0/3 + 1/1 + 1/2 + 1/5 = 1.7
    assert distance.relative_absolute_distance_sum(ORIG, PROT) == pytest.approx(1.7)


def test_rad_of_an_all_zero_original_is_nan() -> None:
    assert math.isnan(distance.relative_absolute_distance([0, 0], [1, 0]))
    assert distance.relative_absolute_distance_sum([0, 0], [1, 0]) == 0.0


def test_hellinger_on_counts() -> None:
    # (sqrt PROT - sqrt ORIG)^2 per cell: 0, 1, 1, (sqrt3 - sqrt2)^2 = 5 - 2 sqrt6 = 0.1010205,
    # (2 - sqrt5)^2 = 9 - 4 sqrt5 = 0.0557281, 0; sum 2.1567486; sqrt(sum / 2) = 1.0384480
    assert distance.hellinger_distance_counts(ORIG, PROT) == pytest.approx(1.0384480, abs=1e-7)


def test_hellinger_on_proportions() -> None:
    # both totals are 11, so each term is the count term / 11: sqrt(2.1567486 / 2 / 11) = 0.3131039
    assert distance.hellinger_distance(ORIG, PROT) == pytest.approx(0.3131039, abs=1e-7)


def test_hellinger_extremes() -> None:
    # disjoint supports: sqrt(1/2 * (1 + 1)) = 1; all-zero both: 0; one all-zero: 1
    assert distance.hellinger_distance([4, 0], [0, 9]) == 1.0
    assert distance.hellinger_distance([0, 0], [0, 0]) == 0.0
    assert distance.hellinger_distance([0, 0], [0, 2]) == 1.0


def test_empty_selection_gives_nan() -> None:
    empty = np.zeros(0, dtype=np.int64)
    assert math.isnan(distance.average_absolute_distance(empty, empty))
    assert math.isnan(distance.max_absolute_deviation(empty, empty))


def test_dataarrays_must_have_the_same_codes() -> None:
    a = xr.DataArray([1, 2], dims=("SEX",), coords={"SEX": ["M", "F"]})
    b = xr.DataArray([1, 2], dims=("SEX",), coords={"SEX": ["F", "M"]})
    with pytest.raises(CubeMismatchError, match="codes differ between original and protected along SEX"):
        distance.absolute_distance(a, b)


def test_shapes_must_match() -> None:
    with pytest.raises(CubeMismatchError, match=r"original has shape \(2,\) but protected has \(3,\)"):
        distance.absolute_distance([1, 2], [1, 2, 3])


def test_dimension_order_must_match() -> None:
    a = xr.DataArray(ORIG, dims=("A", "B"))
    with pytest.raises(CubeMismatchError, match="compare cubes with the same dimensions in the same order"):
        distance.absolute_distance(a, a.T)


def test_hellinger_rejects_negative_counts() -> None:
    with pytest.raises(NegativeCountError, match="the Hellinger distance needs non-negative counts but got -1"):
        distance.hellinger_distance([1, 2], [-1, 2])


def test_cell_pair_reuses_deviations() -> None:
    cells = distance.CellPair(ORIG, PROT)
    assert cells.abs_dev.tolist() == [0, 1, 1, 1, 1, 0]
    assert cells.relative_absolute_distance() == pytest.approx(0.425)

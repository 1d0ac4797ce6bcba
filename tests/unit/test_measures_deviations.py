"""Höhne (2011) Tables 3, 4a, 4b on a hand-made 3 x 4 cube.

Original (A: T, a1, a2 by B: T, b1, b2, b3)      protected (every cell perturbed on its own)
        T  b1 b2 b3                                      T  b1 b2 b3
  T    11   5  5  1                                T    12   5  4  1
  a1    4   3  0  1                                a1    4   3  1  0
  a2    7   2  5  0                                a2    7   3  4  0

Cells with an original 0 ((a1, b2) and (a2, b3)) are left out. Table dimension and |deviation|:
  dim 0: (T, T) 1
  dim 1: (T, b1) 0, (T, b2) 1, (T, b3) 0, (a1, T) 0, (a2, T) 0      -> four 0s, one 1
  dim 2: (a1, b1) 0, (a1, b3) 1, (a2, b1) 1, (a2, b2) 1               -> one 0, three 1s
Size classes: (T, T) = 11 is in 10-99 (deviation 1); the nine others are in 1-9, five with
deviation 0 ((T, b1), (T, b3), (a1, T), (a2, T), (a1, b1)) and four with deviation 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.measures.deviations import deviation_by_dimension, deviation_by_size, size_class
from cubeguard.measures.errors import MeasureConfigError
from tests.strategies import build_cube, flat_tree, override

ORIGINAL = build_cube(
    {"A": flat_tree("T", "a1", "a2"), "B": flat_tree("T", "b1", "b2", "b3")}, np.array([[3, 0, 1], [2, 5, 0]])
)
PROTECTED = override(ORIGINAL, np.array([[12, 5, 4, 1], [4, 3, 1, 0], [7, 3, 4, 0]]))


def test_table_3_counts_and_cumulative_percentages() -> None:
    t3 = deviation_by_dimension(ORIGINAL, PROTECTED)
    assert list(t3.index) == [0, 1, "all"]
    assert t3["cells"].to_dict(orient="list") == {"0": [0, 1, 1], "1": [4, 1, 5], "2": [1, 3, 4]}
    # cumulative: dim 1 has 4 of 5 cells at deviation 0 -> 80 %, dim 2 has 1 of 4 -> 25 %
    assert t3.loc[0, ("cum_pct", "1")] == pytest.approx(80.0)
    assert t3.loc[0, ("cum_pct", "2")] == pytest.approx(25.0)
    assert t3.loc[1, "cum_pct"].tolist() == [100.0, 100.0, 100.0]


def test_table_3_groups_high_dimensions() -> None:
    # with top=2 the 2-dimensional cells form column "2+"
    t3 = deviation_by_dimension(ORIGINAL, PROTECTED, top=2)
    assert list(t3["cells"].columns) == ["0", "1", "2+"]


def test_table_3_with_zeros() -> None:
    # the two zero cells are 2-dimensional with deviations 1 ((a1, b2): 0 -> 1) and 0 ((a2, b3))
    t3 = deviation_by_dimension(ORIGINAL, PROTECTED, include_zeros=True)
    assert t3.loc["all", ("cells", "2")] == 6
    assert t3.loc[0, ("cells", "2")] == 2


def test_table_4a_cells_and_maximal_deviation() -> None:
    t4a = deviation_by_size(ORIGINAL, PROTECTED).cells
    assert t4a.to_dict(orient="index") == {
        "1-9": {"from": 1, "to": 9, "cells": 9, "max_deviation": 1},
        "10-99": {"from": 10, "to": 99, "cells": 1, "max_deviation": 1},
    }


def test_table_4b_cumulative_percentages() -> None:
    t4b = deviation_by_size(ORIGINAL, PROTECTED).cumulative
    # 1-9: 5 of 9 cells with deviation 0 -> 55.56 %; 10-99: the one cell has deviation 1
    assert t4b.loc["1-9", 0] == pytest.approx(500 / 9)
    assert t4b.loc["1-9", 1] == pytest.approx(100.0)
    assert t4b.loc["10-99"].tolist() == [0.0, 100.0]


def test_size_classes_are_decades() -> None:
    assert size_class([0, 1, 9, 10, 99, 100, 10_000_000]).tolist() == [-1, 0, 0, 1, 1, 2, 7]


def test_float_counts_are_rejected() -> None:
    with pytest.raises(MeasureConfigError, match="deviation tables need integer counts"):
        deviation_by_size(np.array([1.0, 2.0]), np.array([1.5, 2.0]))


def test_top_must_be_positive() -> None:
    with pytest.raises(MeasureConfigError, match="top must be at least 1, got 0"):
        deviation_by_dimension(ORIGINAL, PROTECTED, top=0)


def test_table_3_needs_hierarchies() -> None:
    with pytest.raises(MeasureConfigError, match="deviation_by_dimension needs cubes with hierarchy coordinates"):
        deviation_by_dimension(np.array([1, 2]), np.array([1, 2]))  # type: ignore[arg-type]

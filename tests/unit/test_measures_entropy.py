"""Entropy and median entropy over sub-groups (Shlomo 2009, 4.1) against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from cubeguard.measures import entropy
from cubeguard.measures.errors import MeasureConfigError, NegativeCountError

T = xr.DataArray(np.array([[3, 0, 1], [2, 5, 0]]), dims=("A", "B"))


def test_entropy_by_hand() -> None:
    # shares 3/4, 1/4: -(0.75 ln 0.75 + 0.25 ln 0.25) = 0.215762 + 0.346574 = 0.562335
    assert entropy.entropy([3, 0, 1]) == pytest.approx(0.562335, abs=1e-6)


def test_entropy_of_an_empty_table_is_nan() -> None:
    assert math.isnan(entropy.entropy([0, 0]))


def test_median_entropy_by_hand() -> None:
    # sub-groups by A: a1 = [3, 0, 1] -> 0.562335; a2 = [2, 5, 0] -> shares 2/7, 5/7:
    # -(0.285714 ln 0.285714 + 0.714286 ln 0.714286) = 0.357932 + 0.240337 = 0.598270
    # median of two values = their mean = 0.580302
    assert entropy.median_entropy(T, ["A"]) == pytest.approx(0.580302, abs=1e-6)


def test_median_entropy_skips_empty_groups() -> None:
    # groups by B: b1 = [3, 2] -> 0.673012, b2 = [0, 5] -> 0, b3 = [1, 0] -> 0; median 0
    assert entropy.median_entropy(T, ["B"]) == 0.0
    t = T.copy(data=[[3, 0, 0], [2, 0, 0]])
    # b2 and b3 are empty; only b1 = [3, 2] remains: -(0.6 ln 0.6 + 0.4 ln 0.4) = 0.673012
    assert entropy.median_entropy(t, ["B"]) == pytest.approx(0.673012, abs=1e-6)


def test_median_entropy_change() -> None:
    # protected a1 = [3, 1, 0] (0.562335), a2 = [3, 4, 0]: -(3/7 ln 3/7 + 4/7 ln 4/7) = 0.682908
    # median (0.562335 + 0.682908) / 2 = 0.622622
    change = entropy.median_entropy_change(T, T.copy(data=[[3, 1, 0], [3, 4, 0]]), ["A"])
    assert change.original == pytest.approx(0.580302, abs=1e-6)
    assert change.protected == pytest.approx(0.622622, abs=1e-6)


def test_unknown_group_dimension() -> None:
    with pytest.raises(MeasureConfigError, match=r"median entropy groups: unknown dimension\(s\) \['SEX'\]"):
        entropy.median_entropy(T, ["SEX"])


def test_negative_counts() -> None:
    with pytest.raises(NegativeCountError, match="entropy needs non-negative counts but got -2"):
        entropy.entropy([1, -2])


def test_median_entropy_needs_named_dimensions() -> None:
    with pytest.raises(MeasureConfigError, match="median entropy needs a table with named dimensions"):
        entropy.median_entropy(np.ones((2, 2)), ["A"])  # type: ignore[arg-type]

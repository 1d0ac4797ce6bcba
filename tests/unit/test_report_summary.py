"""Cube summaries and pooled Höhne tables, on the hand-made cube of test_measures_deviations.

Original (A: T, a1, a2 by B: T, b1, b2, b3)      protected
        T  b1 b2 b3                                      T  b1 b2 b3
  T    11   5  5  1                                T    12   5  4  1
  a1    4   3  0  1                                a1    4   3  1  0
  a2    7   2  5  0                                a2    7   3  4  0

Noise over cells with an original count >= 1 (ten cells): +1 at (T,T), (a2,b1); -1 at (T,b2),
(a1,b3), (a2,b2); 0 elsewhere (five). Small cells (original 1 or 2): (T,b3) 0, (a1,b3) -1, (a2,b1) +1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cubeguard.measures.deviations import deviation_by_dimension, deviation_by_size
from cubeguard.report.errors import ReportError
from cubeguard.report.summary import pool, summarise
from cubeguard.report.tables import long_by_dimension, long_cumulative, pool_by_dimension, pool_by_size, size_counts
from tests.strategies import build_cube, flat_tree, override

ORIGINAL = build_cube(
    {"A": flat_tree("T", "a1", "a2"), "B": flat_tree("T", "b1", "b2", "b3")}, np.array([[3, 0, 1], [2, 5, 0]])
)
PROTECTED = override(ORIGINAL, np.array([[12, 5, 4, 1], [4, 3, 1, 0], [7, 3, 4, 0]]))


def _random_pair(seed: int, scale: int = 400) -> tuple:
    rng = np.random.default_rng(seed)
    dims = {"A": flat_tree("T", "a1", "a2", "a3"), "B": flat_tree("T", "b1", "b2")}
    original = build_cube(dims, rng.integers(0, scale, (3, 2)) * rng.integers(0, 2, (3, 2)))
    noisy = original["count"].values + rng.integers(-3, 4, original["count"].shape)
    return original, override(original, np.maximum(noisy, 0))


def test_noise_histograms_and_pairs() -> None:
    s = summarise(ORIGINAL, PROTECTED)
    assert s.cells == 12
    assert s.noise.to_dict() == {-1: 3, 0: 5, 1: 2}
    assert s.noise_small.to_dict() == {-1: 1, 0: 1, 1: 1}
    assert int(s.pairs["cells"].sum()) == 12
    zero_to_one = s.pairs[(s.pairs["original"] == 0) & (s.pairs["protected"] == 1)]
    assert zero_to_one["cells"].tolist() == [1]  # (a1, b2)
    pd.testing.assert_frame_equal(s.by_dimension, deviation_by_dimension(ORIGINAL, PROTECTED))


def test_recorded_noise_is_used_when_present() -> None:
    recorded = PROTECTED.assign(noise=PROTECTED["count"] * 0 + 2)
    s = summarise(ORIGINAL, recorded, small_values=(1,))
    assert s.noise.to_dict() == {2: 10}
    assert s.noise_small.to_dict() == {2: 2} and s.small_values == (1,)  # (T, b3) and (a1, b3)


def test_pooling_twice_the_same_cube_doubles_counts_and_keeps_shares() -> None:
    one = summarise(ORIGINAL, PROTECTED)
    two = pool([one, one])
    assert two.cells == 24 and two.noise.to_dict() == {-1: 6, 0: 10, 1: 4}
    assert (two.by_dimension["cells"] == 2 * one.by_dimension["cells"]).all().all()
    pd.testing.assert_frame_equal(two.by_dimension["cum_pct"], one.by_dimension["cum_pct"])
    pd.testing.assert_frame_equal(two.by_size.cumulative, one.by_size.cumulative)
    assert two.pairs["cells"].sum() == 24


def test_pooled_size_tables_equal_tables_of_the_pooled_cells() -> None:
    pairs = [(ORIGINAL, PROTECTED), _random_pair(1), _random_pair(2, scale=40_000)]
    pooled = pool_by_size([deviation_by_size(o, p) for o, p in pairs])
    o_all = np.concatenate([o["count"].values.ravel() for o, _ in pairs])
    p_all = np.concatenate([p["count"].values.ravel() for _, p in pairs])
    expected = deviation_by_size(o_all, p_all)
    pd.testing.assert_frame_equal(pooled.cells, expected.cells)
    pd.testing.assert_frame_equal(pooled.cumulative, expected.cumulative)


def test_pooling_one_table_returns_it() -> None:
    t3 = deviation_by_dimension(ORIGINAL, PROTECTED)
    pd.testing.assert_frame_equal(pool_by_dimension([t3]), t3)
    t4 = deviation_by_size(ORIGINAL, PROTECTED)
    pooled = pool_by_size([t4])
    pd.testing.assert_frame_equal(pooled.cells, t4.cells)
    pd.testing.assert_frame_equal(pooled.cumulative, t4.cumulative)


def test_size_counts_recover_cells_per_deviation() -> None:
    counts = size_counts(deviation_by_size(ORIGINAL, PROTECTED))
    # 1-9: five cells with deviation 0, four with 1; 10-99: (T, T) with deviation 1
    assert counts.loc["1-9"].tolist() == [5, 4] and counts.loc["10-99"].tolist() == [0, 1]


def test_long_forms_hold_every_cell() -> None:
    t3 = deviation_by_dimension(ORIGINAL, PROTECTED)
    long = long_by_dimension(t3)
    assert list(long.columns) == ["table_dimension", "deviation", "cells", "cum_pct"]
    assert long.groupby("table_dimension")["cells"].sum().to_dict() == {"0": 1, "1": 5, "2": 4}
    cum = long_cumulative(deviation_by_size(ORIGINAL, PROTECTED))
    assert cum.set_index(["size", "deviation"])["cum_pct"].to_dict() == {
        ("1-9", 0): pytest.approx(500 / 9),
        ("1-9", 1): 100.0,
        ("10-99", 0): 0.0,
        ("10-99", 1): 100.0,
    }


def test_pool_rejects_nothing_and_mixed_small_values() -> None:
    with pytest.raises(ReportError, match="at least one cube summary"):
        pool([])
    with pytest.raises(ReportError, match="count different values as small"):
        pool([summarise(ORIGINAL, PROTECTED), summarise(ORIGINAL, PROTECTED, small_values=(1,))])
    with pytest.raises(ReportError, match="at least one table"):
        pool_by_dimension([])
    with pytest.raises(ReportError, match="at least one pair of tables"):
        pool_by_size([])


def test_noise_of_another_shape_is_refused() -> None:
    odd = PROTECTED.assign(noise=(("X",), np.zeros(5, dtype=np.int64)))
    with pytest.raises(ReportError, match=r"noise has shape \(5,\) but its counts \(3, 4\)"):
        summarise(ORIGINAL, odd)

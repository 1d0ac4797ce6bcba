"""Published means in one compiled loop equal numpy's ``round(where(n > 0, m / max(n, 1), nan), d)`` bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cubeguard.tables.means import published_means

SUMS = st.floats(allow_nan=True, allow_infinity=True, width=64)
# halves and near-halves after scaling are where rounding differs if the arithmetic does
TIES = st.integers(-(10**9), 10**9).map(lambda k: k / 2**6)


def _numpy(sums: np.ndarray, counts: np.ndarray, decimals: int) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.round(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan), decimals)


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    n=st.integers(0, 40),
    decimals=st.integers(0, 6),
    ties=st.booleans(),
)
def test_means_equal_numpy(data: st.DataObject, n: int, decimals: int, ties: bool) -> None:
    sums = data.draw(arrays(np.float64, n, elements=TIES if ties else SUMS))
    counts = data.draw(arrays(np.int64, n, elements=st.integers(-3, 2**40)))
    mine = published_means(sums, counts, decimals)
    np.testing.assert_array_equal(mine.view(np.uint64), _numpy(sums, counts, decimals).view(np.uint64))


def test_shape_kept_and_empty_cells_nan() -> None:
    sums = np.array([[7.0, 0.0], [5.0, 1.0]])
    counts = np.array([[2, 0], [3, -1]])
    out = published_means(sums, counts, 1)
    assert out.shape == (2, 2)
    assert out[0, 0] == 3.5 and out[1, 0] == 1.7
    assert np.isnan(out[0, 1]) and np.isnan(out[1, 1])


def test_half_rounds_to_even() -> None:
    assert published_means(np.array([0.25, 0.75, 5.0]), np.array([1, 1, 2]), 1).tolist() == [0.2, 0.8, 2.5]
    assert published_means(np.array([5.0, 7.0]), np.array([2, 2]), 0).tolist() == [2.0, 4.0]


@pytest.mark.parametrize("decimals", [-1, 7])
def test_decimals_outside_the_config_range_refused(decimals: int) -> None:
    with pytest.raises(ValueError, match="decimals must be 0 to 6"):
        published_means(np.ones(2), np.ones(2, dtype=np.int64), decimals)

"""``_distinct`` (counting) gives what ``np.unique`` gives, on the small integers it is used for."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cubeguard.measures.deviations import _distinct


@given(arrays(np.int64, st.tuples(st.integers(0, 4), st.integers(0, 40)), elements=st.integers(-1, 60)))
def test_distinct_equals_numpy_unique(values: np.ndarray) -> None:
    found = _distinct(values)
    assert found.dtype == np.int64
    np.testing.assert_array_equal(found, np.unique(values))

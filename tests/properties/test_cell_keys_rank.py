"""The attack's cell numbering ranks values exactly as ``np.unique`` does (``cubeguard.attack.cells``)."""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.attack.cells import _rank_in_place


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.int64, st.integers(0, 300), elements=st.integers(-(2**62), 2**62) | st.integers(0, 5)))
def test_ranks_in_place_are_np_unique_inverse(values: np.ndarray) -> None:
    want = np.unique(values, return_inverse=True)[1].reshape(-1)
    got = values.copy()
    _rank_in_place(got)
    np.testing.assert_array_equal(got, want)

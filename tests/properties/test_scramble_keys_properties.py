"""The vectorised ``scramble_keys`` equals the one-key-at-a-time reference (cellKey's ``.scramble_ckeys``) bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.ckm.magnitude.keys import _fixed_digits, scramble_keys, scramble_keys_reference

uniform = st.floats(0.0, 1.0, exclude_max=True)
below_1e4 = st.floats(0.0, 1e-4, exclude_min=True)  # scientific notation in R (the string rotates "e-05")
trailing_zeros = st.builds(lambda n, k: n / 10**k, st.integers(0, 10**8), st.integers(1, 8)).filter(lambda x: x < 1)
near_ties = st.builds(lambda n: (10 * n + 5) / 10**16, st.integers(10**13, 10**15 - 1))  # 16th digit a 5
ulp_neighbours = st.builds(
    lambda x, up: float(np.nextafter(x, 1.0 if up else 0.0)),
    st.sampled_from([0.1, 0.01, 0.001, 1e-4, 0.5]),
    st.booleans(),
)
keys = st.lists(
    st.one_of(uniform, below_1e4, trailing_zeros, near_ties, ulp_neighbours, st.just(0.0)), min_size=1, max_size=60
)


def assert_same(cell_keys: np.ndarray, top_k: int, same_key: bool) -> None:
    fast = scramble_keys(cell_keys, top_k, same_key)
    slow = scramble_keys_reference(cell_keys, top_k, same_key)
    assert fast.shape == slow.shape == (cell_keys.size, top_k)
    differ = ~((fast == slow) | (np.isnan(fast) & np.isnan(slow)))
    assert not differ.any(), f"{cell_keys[differ.any(axis=1)].tolist()!r}"
    assert (fast.view(np.int64) == slow.view(np.int64)).all()  # bit for bit (NaN included), so -0.0 != 0.0 too


@settings(max_examples=300, deadline=None)
@given(keys, st.integers(1, 6), st.booleans())
def test_fast_scrambling_is_the_reference(cell_keys: list[float], top_k: int, same_key: bool) -> None:
    assert_same(np.array(cell_keys), top_k, same_key)


@pytest.mark.parametrize(("top_k", "same_key"), [(1, False), (2, True), (3, False), (6, False), (1, True)])
def test_many_random_keys(top_k: int, same_key: bool) -> None:
    rng = np.random.default_rng(20240611)
    cell_keys = np.concatenate(
        [
            rng.random(20_000),  # cell keys of real-valued record keys
            np.mod(np.round(rng.random((20_000, 4)) * 1e8).sum(axis=1) / 1e8, 1.0),  # sums of 8-digit keys
            np.round(rng.random(2_000) * 1e3) / 1e3,  # few decimals, trailing zeros
            rng.random(200) * 1e-4,  # below 1e-4 (slow in the reference: exponents in the thousands)
            np.zeros(10),
        ]
    )
    assert_same(cell_keys, top_k, same_key)


def test_most_keys_take_the_fast_path() -> None:
    cell_keys = np.random.default_rng(1).random(100_000)
    _, _, fast = _fixed_digits(cell_keys)
    assert fast.mean() > 0.99  # only ties within 2e-4 (about 0.04 %) and keys below 1e-4 go to the reference

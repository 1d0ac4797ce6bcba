"""The compiled first component key equals cellKey's ``.scramble_ckeys`` (the R string round trip) bit for bit.

:func:`first_keys` emulates ``as.character`` and the x87 ``R_strtod`` without long doubles; the
references are :func:`scramble_keys_reference` (one key at a time, as R) and :func:`scramble_keys`
(vectorised in long double, itself checked against the reference in test_scramble_keys_properties).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.ckm.magnitude.first_key import first_keys
from cubeguard.ckm.magnitude.keys import _fixed_digits, _rotated_keys, scramble_keys, scramble_keys_reference

uniform = st.floats(0.0, 1.0, exclude_max=True)
below_1e4 = st.floats(0.0, 1e-4, exclude_min=True)  # scientific notation in R: the reference path
few_digits = st.builds(lambda n, k: n / 10**k, st.integers(0, 10**6), st.integers(1, 6)).filter(lambda x: x < 1)
dyadic = st.builds(lambda n, k: n / 2**k, st.integers(1, 2**20), st.integers(1, 20)).filter(lambda x: x < 1)
near_ties = st.builds(lambda n: (10 * n + 5) / 10**16, st.integers(10**13, 10**15 - 1))  # 16th digit a 5
ulp_neighbours = st.builds(
    lambda x, up: float(np.nextafter(x, 1.0 if up else 0.0)),
    st.sampled_from([0.1, 0.01, 0.001, 1e-4, 0.5, 0.25, 1.0 - 2**-53]),
    st.booleans(),
)
keys = st.lists(
    st.one_of(uniform, below_1e4, few_digits, dyadic, near_ties, ulp_neighbours, st.just(0.0)), min_size=1, max_size=60
)


def assert_bits(fast: np.ndarray, slow: np.ndarray, cell_keys: np.ndarray) -> None:
    differ = fast.view(np.int64) != slow.view(np.int64)  # bit for bit: NaN and -0.0 included
    assert not differ.any(), f"{cell_keys[differ][:10].tolist()!r}"


@settings(max_examples=300, deadline=None)
@given(keys, st.booleans())
def test_first_key_is_the_reference(cell_keys: list[float], same_key: bool) -> None:
    k = np.array(cell_keys)
    assert_bits(first_keys(k, same_key), scramble_keys_reference(k, 1, same_key)[:, 0], k)


def _many_keys() -> np.ndarray:
    rng = np.random.default_rng(20260611)
    return np.concatenate(
        [
            rng.random(1_000_000),  # cell keys of binary record keys
            np.mod(np.round(rng.random((20_000, 4)) * 1e8).sum(axis=1) / 1e8, 1.0),  # sums of 8-digit keys
            np.round(rng.random(5_000) * 10.0 ** rng.integers(1, 8, 5_000)) / 10.0 ** rng.integers(1, 8, 5_000),
            (10 * rng.integers(10**13, 10**15, 5_000) + 5) / 1e16,  # as.character ties
            rng.random(5_000) * 10.0 ** -rng.integers(1, 5, 5_000),  # 0.0ddd to 0.0000ddd
            rng.integers(1, 2**20, 5_000) / 2**20,
            rng.random(200) * 1e-4,
            np.zeros(10),
        ]
    )


@pytest.mark.parametrize("same_key", [False, True])
def test_a_million_keys_are_the_long_double_keys(same_key: bool) -> None:
    k = _many_keys()
    k = k[k < 1.0]
    assert_bits(first_keys(k, same_key), scramble_keys(k, 1, same_key)[:, 0], k)
    some = k[:: k.size // 20_000]
    assert_bits(first_keys(some, same_key), scramble_keys_reference(some, 1, same_key)[:, 0], some)


def test_keys_where_the_x87_double_rounding_differs_are_the_reference() -> None:
    """Where ``R_strtod``'s two roundings (64 bits, then 53) differ from one, the compiled key follows R."""
    k = _many_keys()
    k = k[(k >= 1e-4) & (k < 1.0)]
    digits, decimals, usable = _fixed_digits(k)
    k, digits, decimals = k[usable], digits[usable], decimals[usable]
    x87 = _rotated_keys(digits, decimals, 1, 1)[:, 0]
    head = 10 ** (decimals - 1)
    rotated = (digits % head) * 10 + digits // head
    once = np.where(rotated % 10 == 0, (rotated // 10) / 10.0 ** (decimals - 1), rotated / 10.0**decimals)
    twice = x87 != once  # both are exact doubles then: the division rounds once
    assert twice.sum() > 100  # about one key in 4,000
    assert_bits(first_keys(k[twice], False), scramble_keys_reference(k[twice], 1, False)[:, 0], k[twice])

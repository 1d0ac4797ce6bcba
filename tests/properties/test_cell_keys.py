"""Cell keys from summed record-key numerators (``cubeguard.ckm.keys``)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.ckm.keys import KeyScale

U64 = st.integers(0, 2**64 - 1)


@settings(max_examples=200, deadline=None)
@given(sums=st.lists(U64 | st.sampled_from([0, 1, 2**64 - 1, 2**64 - 2**10, 2**63, 2**53 + 1]), max_size=50))
def test_binary_cell_key_is_the_correctly_rounded_fraction_below_one(sums: list[int]) -> None:
    """ck = sum / 2**64 rounded once to the nearest double, and never 1.0 (sums just below 2**64)."""
    got = KeyScale().cell_keys(np.array(sums, dtype=np.uint64))
    below_one = np.nextafter(1.0, 0.0)
    expected = [min(float(Fraction(s, 2**64)), below_one) for s in sums]
    assert got.tolist() == expected
    assert ((got >= 0.0) & (got < 1.0)).all()


@settings(max_examples=200, deadline=None)
@given(sums=st.lists(st.integers(0, 2**63), max_size=50), digits=st.integers(1, 15))
def test_decimal_cell_key_is_the_correctly_rounded_remainder(sums: list[int], digits: int) -> None:
    """Up to 15 digits the remainder is an exact double, so one division rounds it correctly."""
    got = KeyScale("decimal", digits).cell_keys(np.array(sums, dtype=np.uint64))
    assert got.tolist() == [float(Fraction(s % 10**digits, 10**digits)) for s in sums]


def test_cell_keys_keep_the_shape() -> None:
    sums = np.arange(12, dtype=np.uint64).reshape(3, 4) * np.uint64(2**60)
    assert KeyScale().cell_keys(sums).shape == (3, 4)
    assert KeyScale().cell_keys(np.uint64(2**63)).shape == ()

"""The table kernel against a plain numpy tabulation: cells, key sums mod 2**64, filters, masks, bad codes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.tables.kernel import FILTERED, OUTSIDE, empty_uint8, tabulate


@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    filters=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
    masked=st.booleans(),
)
def test_the_kernel_counts_what_numpy_counts(sizes: list[int], filters: int, seed: int, masked: bool) -> None:
    rng = np.random.default_rng(seed)
    n = 300
    entries = [s + 2 for s in sizes]  # two dictionary entries per column that no code covers
    codes = [rng.integers(0, e, n).astype(np.uint16) for e in entries]
    positions = [np.r_[rng.permutation(s), -1, -1] for s in sizes]
    strides = [int(np.prod(sizes[d + 1 :])) for d in range(len(sizes))]
    pairs = [(c, np.where(p < 0, OUTSIDE, p * s)) for c, p, s in zip(codes, positions, strides, strict=True)]
    keep = np.ones(n, dtype=bool)
    for _ in range(filters):  # a filter on a column of its own: its entries 0 and 1 pass
        column = rng.integers(0, 4, n).astype(np.uint16)
        pairs.append((column, np.array([0, 0, FILTERED, FILTERED], dtype=np.int64)))
        keep &= column < 2
    mask = rng.integers(0, 2, n).astype(np.uint8) if masked else empty_uint8()
    member = mask == 1 if masked else np.ones(n, dtype=bool)
    keep &= member
    keys = rng.integers(0, 2**64, n, dtype=np.uint64)
    counts = np.zeros(int(np.prod(sizes)), dtype=np.int64)
    key_sums = np.zeros_like(counts, dtype=np.uint64)
    bad = tabulate(tuple(pairs), mask, keys, counts, key_sums)
    cell = np.zeros(n, dtype=np.int64)
    unknown = np.zeros(n, dtype=bool)
    for c, p, s in zip(codes, positions, strides, strict=True):
        cell += p[c] * s
        unknown |= p[c] < 0
    assert bad == int((unknown & member).sum())  # a bad code counts whatever the filters say
    good = keep & ~unknown
    np.testing.assert_array_equal(counts, np.bincount(cell[good], minlength=counts.size))
    expected = np.zeros_like(key_sums)
    np.add.at(expected, cell[good], keys[good])  # uint64: wraps modulo 2**64
    np.testing.assert_array_equal(key_sums, expected)

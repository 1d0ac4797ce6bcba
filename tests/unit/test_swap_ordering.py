"""Donor orderings and donor search kernels of targeted swapping."""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.swap._donors import find_donor
from cubeguard.swap._ordering import donor_index, extend_group, group_by, top_by_key


def full_order(group: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Reference: households by group, then key descending, ties by position (stable)."""
    return np.lexsort((np.arange(len(keys)), -keys, group))


def test_group_by_is_a_stable_counting_sort() -> None:
    group = np.array([2, 0, 2, 1, 0], dtype=np.int64)
    items = np.array([4, 3, 2, 1, 0], dtype=np.int64)
    order, starts = group_by(items, group, 3)
    assert order.tolist() == [4, 1, 3, 2, 0]
    assert starts.tolist() == [0, 2, 3, 5]


@pytest.mark.parametrize("m", [0, 1, 5, 17, 40, 100])
def test_top_by_key_puts_the_m_largest_first_in_order(m: int) -> None:
    rng = np.random.default_rng(m)
    keys = np.round(rng.random(40), 1)  # many ties
    items = rng.permutation(40).astype(np.int64)
    out = top_by_key(items, keys, m)
    assert sorted(out.tolist()) == list(range(40))
    reference = items[np.lexsort((np.arange(40), -keys[items]))]
    k = min(m, 40)
    assert out[:k].tolist() == reference[:k].tolist()


@pytest.mark.parametrize("share", [0.0, 0.1, 1.0])
def test_partially_sorted_index_extends_to_the_full_order(share: float) -> None:
    rng = np.random.default_rng(4)
    n = 1000
    profiles = rng.integers(0, 3, (2, n)).astype(np.int64)
    keys = rng.exponential(size=n)
    keys[:50] = 0.0
    orders, starts, ends = donor_index(profiles, np.array([3, 3]), keys, share)
    for p in range(2):
        for g in range(3):
            extend_group(orders[p], keys, ends[p, g], starts[p, g + 1])
        np.testing.assert_array_equal(orders[p], full_order(profiles[p], keys))


def make_index(profiles: np.ndarray, keys: np.ndarray, share: float) -> tuple:
    n_groups = profiles.max(axis=1) + 1
    orders, starts, ends = donor_index(profiles, n_groups.astype(np.int64), keys, share)
    parents = np.tile(np.arange(len(keys), dtype=np.int64), (len(profiles), 1))
    return orders, starts, ends, parents, keys


def test_find_donor_takes_largest_key_elsewhere_and_skips_used() -> None:
    area = np.array([0, 0, 1, 1, 2], dtype=np.int64)
    profiles = np.array([[0, 0, 0, 1, 0]], dtype=np.int64)
    keys = np.array([5.0, 9.0, 1.0, 8.0, 2.0])
    used = np.zeros(5, dtype=np.uint8)
    index = make_index(profiles, keys, 0.0)
    # Household 0: household 1 has the largest key but the same area; 3 has another profile.
    assert find_donor(0, area, profiles, index, used) == (4, 0)
    used[4] = 1
    assert find_donor(0, area, profiles, index, used) == (2, 0)
    used[2] = 1
    assert find_donor(0, area, profiles, index, used) == (-1, -1)


def test_find_donor_falls_back_to_the_next_profile_and_ignores_zero_keys() -> None:
    area = np.array([0, 1, 1], dtype=np.int64)
    profiles = np.array([[0, 1, 1], [0, 0, 0]], dtype=np.int64)
    keys = np.array([1.0, 0.0, 3.0])
    used = np.zeros(3, dtype=np.uint8)
    assert find_donor(0, area, profiles, make_index(profiles, keys, 1.0), used) == (2, 1)
    keys[2] = 0.0
    assert find_donor(0, area, profiles, make_index(profiles, keys, 1.0), used) == (-1, -1)

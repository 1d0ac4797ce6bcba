"""Numba orderings for swapping: counting sort by group, partial sort by key, donor index.

A donor search at one level only ever consumes the top of each similarity group (households in
key order). Sorting whole groups costs ``n log n`` with random memory access, which dominates at 10M
persons; :func:`donor_index` therefore sorts only the top ``share`` of every group (selected in
linear time) and :func:`extend_group` sorts the rest of a group the first time a search needs it.
The resulting order is exactly that of a full sort by key descending (ties: lower position first).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@numba.njit(cache=True)
def group_by(items: IntArray, group: IntArray, n_groups: int) -> tuple[IntArray, IntArray]:
    """``items`` stably sorted by ``group[item]`` (counting sort), and the start of each group."""
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for item in items:
        starts[group[item] + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    fill = starts[:-1].copy()
    out = np.empty_like(items)
    for item in items:
        out[fill[group[item]]] = item
        fill[group[item]] += 1
    return out, starts


@numba.njit(cache=True)
def top_by_key(items: IntArray, keys: FloatArray, m: int) -> IntArray:
    """``items`` rearranged: the ``m`` with the largest keys first, descending; then the others.

    Ties keep the order of ``items`` (stable); the others keep their order too.
    """
    n = items.shape[0]
    if m >= n:
        return items[np.argsort(-keys[items], kind="mergesort")]
    out = np.empty_like(items)
    if m <= 0:
        out[:] = items
        return out
    neg = -keys[items]
    threshold = np.partition(neg.copy(), m - 1)[m - 1]
    n_below = 0
    for i in range(n):
        if neg[i] < threshold:
            n_below += 1
    ties = m - n_below
    top, rest = 0, m
    for i in range(n):
        if neg[i] < threshold or (neg[i] == threshold and ties > 0):
            if neg[i] == threshold:
                ties -= 1
            out[top] = items[i]
            top += 1
        else:
            out[rest] = items[i]
            rest += 1
    head = out[:m].copy()
    out[:m] = head[np.argsort(-keys[head], kind="mergesort")]
    return out


@numba.njit(cache=True)
def donor_index(
    profiles: IntArray, n_groups: IntArray, keys: FloatArray, share: float
) -> tuple[IntArray, IntArray, IntArray]:
    """Households by (profile group, key descending) per profile, with only the top sorted.

    Returns ``orders`` (profiles x households), ``starts`` (profiles x groups+1, padded) and
    ``sorted_end`` (profiles x groups): positions ``starts[p, g] .. sorted_end[p, g] - 1`` hold the
    group's largest keys in order; the rest is unsorted until :func:`extend_group`.
    """
    n_profiles, n = profiles.shape
    max_groups = n_groups.max()
    orders = np.empty((n_profiles, n), dtype=np.int64)
    starts = np.full((n_profiles, max_groups + 1), n, dtype=np.int64)
    sorted_end = np.full((n_profiles, max_groups), n, dtype=np.int64)
    everyone = np.arange(n, dtype=np.int64)
    for p in range(n_profiles):
        order, group_starts = group_by(everyone, profiles[p], n_groups[p])
        for g in range(n_groups[p]):
            lo, hi = group_starts[g], group_starts[g + 1]
            m = min(hi - lo, math.ceil(share * (hi - lo)) + 64)
            order[lo:hi] = top_by_key(order[lo:hi], keys, m)
            sorted_end[p, g] = lo + m
        orders[p] = order
        starts[p, : n_groups[p] + 1] = group_starts
    return orders, starts, sorted_end


@numba.njit(cache=True)
def extend_group(order: IntArray, keys: FloatArray, lo: int, hi: int) -> None:
    """Sort the unsorted tail ``order[lo:hi]`` of a group by key descending (stable)."""
    order[lo:hi] = top_by_key(order[lo:hi], keys, hi - lo)

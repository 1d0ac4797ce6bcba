"""Numba kernels of targeted record swapping: donor search and the two matching passes.

Donor sampling follows sdcMicro ``recordSwap`` (C++ ``sampleDonor``): at level ``h`` every household
gets the key ``risk_h / Exp(1)`` once; a household to swap takes, for the first similarity profile
that has one, the unused household with the *largest* key among those with equal profile values in
another area of level ``h``. Taking the largest of ``w / Exp(1)`` keys is weighted sampling without
replacement with weights ``w`` (Efraimidis and Spirakis 2006), i.e. Handbook on SDC v2 5.6.1 step 4
("normalising the risk values and using them as sampling probabilities").

Instead of scanning one list of all households per level (quadratic), households are ordered by
(profile group, key descending) per profile (:func:`~cubeguard.swap._ordering.donor_index`), and
used entries are skipped with a path-compressed "next unused position" forest, so a search costs
the unused entries of its own group and area that rank above the donor.

The donor index is a tuple ``(orders, starts, sorted_end, parents, keys)``. The swap ``state`` is a
matrix of one column per household with the rows named below; -1 where not set.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from cubeguard.swap._ordering import extend_group, top_by_key

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
FlagArray = npt.NDArray[np.uint8]

# Rows of the swap state matrix (numba reads these module constants as compile-time constants).
PARTNER = 0  # the household it swaps with
LEVEL = 1  # the geography level of the swap
PROFILE = 2  # the similarity profile that matched
NO_DONOR_AT = 3  # the level at which no donor was found
SAMPLED = 4  # 1 for the sampled side of a pair (sdcMicro's ``swappedIndex``)
STATE_ROWS = 5


def new_state(n: int) -> IntArray:
    """A swap state for ``n`` households, nothing set."""
    return np.full((STATE_ROWS, n), -1, dtype=np.int64)


DonorIndex = tuple[IntArray, IntArray, IntArray, IntArray, FloatArray]


@numba.njit(cache=True)
def _next_unused(parent: IntArray, order: IntArray, used: FlagArray, start: int, limit: int) -> int:
    """First position in ``start .. limit - 1`` whose household is unused, else ``limit``."""
    root = start
    while root < limit and used[order[root]]:
        step = parent[root]
        root = root + 1 if step == root else step
    node = start
    while node < root:
        step = parent[node]
        parent[node] = root
        node = node + 1 if step == node else step
    return root


@numba.njit(cache=True)
def find_in_profile(s: int, p: int, area: IntArray, profiles: IntArray, index: DonorIndex, used: FlagArray) -> int:
    """Unused household with the largest key, ``s``'s group of profile row ``p``, another area; or -1.

    ``area`` holds the area of every household at the level where partners must differ,
    ``profiles`` the group codes (profile rows x households). Keys <= 0 are never donors.
    """
    orders, starts, sorted_end, parents, keys = index
    group = profiles[p, s]
    hi = starts[p, group + 1]
    pos = starts[p, group]
    while True:
        limit = sorted_end[p, group]
        pos = _next_unused(parents[p], orders[p], used, pos, limit)
        if pos >= limit:
            if limit >= hi:
                return -1
            extend_group(orders[p], keys, limit, hi)
            sorted_end[p, group] = hi
            continue
        d = orders[p, pos]
        if keys[d] <= 0.0:
            return -1
        if area[d] != area[s]:
            return int(d)
        pos += 1


@numba.njit(cache=True)
def find_donor(s: int, area: IntArray, profiles: IntArray, index: DonorIndex, used: FlagArray) -> tuple[int, int]:
    """Donor for household ``s`` from the first profile that has one, and that profile; or (-1, -1)."""
    for p in range(profiles.shape[0]):
        d = find_in_profile(s, p, area, profiles, index, used)
        if d >= 0:
            return d, p
    return -1, -1


@numba.njit(cache=True)
def _swap_one(
    s: int,
    level: int,
    area: IntArray,
    profiles: IntArray,
    index: DonorIndex,
    state: IntArray,
    used: FlagArray,
) -> None:
    """Pair ``s`` with a donor and record the pair in ``state``, or record the failure."""
    d, p = find_donor(s, area, profiles, index, used)
    if d < 0:
        state[NO_DONOR_AT, s] = level
        return
    used[s] = 1
    used[d] = 1
    record_pair(s, d, level, p, state)
    state[SAMPLED, s] = 1


@numba.njit(cache=True)
def record_pair(s: int, d: int, level: int, p: int, state: IntArray) -> None:
    """Record that ``s`` and ``d`` swap at ``level``, matched on profile ``p``."""
    state[PARTNER, s], state[PARTNER, d] = d, s
    state[LEVEL, s], state[LEVEL, d] = level, level
    state[PROFILE, s], state[PROFILE, d] = p, p


@numba.njit(cache=True)
def match_upper(
    candidates: IntArray,
    level: int,
    area: IntArray,
    profiles: IntArray,
    index: DonorIndex,
    state: IntArray,
    used: FlagArray,
) -> None:
    """Swap every still unused must-swap household of a level above the lowest, in the given order."""
    for s in candidates:
        if used[s] == 0 and state[NO_DONOR_AT, s] < 0:
            _swap_one(s, level, area, profiles, index, state, used)


@numba.njit(cache=True)
def match_lowest(
    must: IntArray,
    must_starts: IntArray,
    extra: IntArray,
    extra_starts: IntArray,
    sample_keys: FloatArray,
    quota: IntArray,
    level: int,
    area: IntArray,
    profiles: IntArray,
    index: DonorIndex,
    state: IntArray,
    used: FlagArray,
) -> None:
    """Lowest level, area by area: swap the must-swap households, then top up to the area's quota.

    The top-up takes the unused candidates of the area (``extra``) with the largest
    ``sample_keys`` (lowest-level risk / Exp(1): weighted sampling without replacement, sdcMicro
    ``randSample``), in descending key order. The candidates are fixed before the area's swaps, as
    in sdcMicro; they cannot change meanwhile since donors come from other areas.
    """
    for a in range(must_starts.shape[0] - 1):
        n_must = 0
        for i in range(must_starts[a], must_starts[a + 1]):
            s = must[i]
            if used[s] == 0 and state[NO_DONOR_AT, s] < 0:
                n_must += 1
                _swap_one(s, level, area, profiles, index, state, used)
        todo = quota[a] - n_must
        if todo <= 0:
            continue
        pool = extra[extra_starts[a] : extra_starts[a + 1]]
        pool = pool[(used[pool] == 0) & (state[NO_DONOR_AT, pool] < 0)]
        todo = min(todo, pool.shape[0])
        for s in top_by_key(pool, sample_keys, todo)[:todo]:
            _swap_one(s, level, area, profiles, index, state, used)

"""Numba kernels of the additivity check: one pass over a slab per dimension, no copies.

A slab is viewed as ``(A, n, B)`` around the dimension checked (``A``: the cells before it in C order,
``n``: its positions, ``B``: the cells after it), which is a free reshape of a C-ordered array.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def children_sums(values, group_of_parent, sums):  # type: ignore[no-untyped-def]
    """``sums[a, g, b] += values[a, j, b]`` for every position ``j`` whose parent is group ``g`` (-1: none)."""
    n_a, n, n_b = values.shape
    for a in range(n_a):
        for j in range(n):
            g = group_of_parent[j]
            if g >= 0:
                for b in range(n_b):
                    sums[a, g, b] += values[a, j, b]


@njit(nogil=True, cache=True)
def compare(values, parents, sums, bad, stats, examples, n_examples):  # type: ignore[no-untyped-def]
    """Hold each parent cell ``values[a, parents[g], b]`` against ``sums[a, g, b]``.

    Adds per group ``g`` to ``stats[g]``: non-additive cells, those not yet flagged in ``bad`` (which
    it then flags), the largest gap, the parent cells' total and the children's total. Records up to
    ``len(examples) - n_examples`` violations as ``(a, g, b, value, sum)`` rows; returns the new count.
    """
    n_a, n_g, n_b = sums.shape
    for a in range(n_a):
        for g in range(n_g):
            p = parents[g]
            for b in range(n_b):
                v = values[a, p, b]
                s = sums[a, g, b]
                stats[g, 3] += v
                stats[g, 4] += s
                d = v - s
                if d != 0:
                    stats[g, 0] += 1
                    if not bad[a, p, b]:
                        stats[g, 1] += 1
                        bad[a, p, b] = True
                    gap = d if d > 0 else -d
                    if gap > stats[g, 2]:
                        stats[g, 2] = gap
                    if n_examples < examples.shape[0]:
                        examples[n_examples, 0] = a
                        examples[n_examples, 1] = g
                        examples[n_examples, 2] = b
                        examples[n_examples, 3] = v
                        examples[n_examples, 4] = s
                        n_examples += 1
    return n_examples


def as_abn(array: np.ndarray, k: int) -> np.ndarray:
    """The ``(A, n, B)`` view of a C-ordered array around axis ``k``."""
    shape = array.shape
    return array.reshape(
        int(np.prod(shape[:k], dtype=np.int64)), shape[k], int(np.prod(shape[k + 1 :], dtype=np.int64))
    )

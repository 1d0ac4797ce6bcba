"""Feasibility intervals: what additivity and the published bounds leave of each original count.

The original counts of a cube are non-negative integers that add up: along every dimension, a
code with children holds the sum of its children's cells, the other coordinates fixed. A published
cell tells an intruder who knows the method that its original lies in ``[lo, hi]`` (the method's
``bounds``: cell key ``|n - n_hat| <= D`` narrowed by the p-table, rounding to adjacent multiples or
K steps, exact cells exact). Bounds propagation over every such relation (a parent lies between the
sums of its children's bounds; a child between the parent's bounds less its siblings') narrows
the intervals until nothing changes: the interval audit of tau-ARGUS (Hundepool et al. 2024,
Handbook on SDC v2, 5.2 "disclosure by differencing"; Giessing 2016), generalised from suppressed
cells to every perturbative method. :mod:`cubeguard.attack.lp` then solves the linear programs of
the cells it leaves narrow.

Counts are int64; :data:`UNBOUNDED` stands for "no upper bound" (far above any census count, and
sums of a few thousand of them still fit in int64).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.errors import InternalError

IntArray = npt.NDArray[np.int64]
UNBOUNDED = 1 << 40


@dataclass(frozen=True)
class Relations:
    """The parent-children relations along one axis, as CSR: ``kids[ptr[r]:ptr[r + 1]]`` add up to ``parents[r]``."""

    parents: IntArray
    ptr: IntArray
    kids: IntArray

    @classmethod
    def of(cls, parent_of: Sequence[int]) -> Relations:
        """From each position's parent position (-1 for the root)."""
        parent = np.asarray(parent_of, dtype=np.int64)
        parents = np.unique(parent[parent >= 0])
        kids = [np.flatnonzero(parent == p) for p in parents]
        ptr = np.zeros(parents.size + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([k.size for k in kids])
        flat = np.concatenate(kids) if kids else np.empty(0, dtype=np.int64)
        return cls(parents, ptr, flat.astype(np.int64))

    @classmethod
    def of_codes(cls, codes: Sequence[str], parents: Sequence[str]) -> Relations:
        """From a cube axis' codes and its ``<dim>.parent`` coordinate ("" for the total)."""
        position = {c: k for k, c in enumerate(codes)}
        return cls.of([position.get(p, -1) if p else -1 for p in parents])


class Infeasible(InternalError):
    """Bounds that the original counts break: a method's ``bounds`` is wrong (a bug in cubeguard)."""


def propagate(lo: IntArray, hi: IntArray, axes: Sequence[Relations], max_rounds: int = 100) -> int:
    """Narrow ``lo`` and ``hi`` (cube-shaped, C order) in place to a fixed point; returns the rounds run.

    Raises:
        Infeasible: some interval became empty (the bounds exclude every additive table).
    """
    if lo.shape != hi.shape or len(axes) != lo.ndim:
        raise InternalError("interval arrays and axes do not match; this is a bug in cubeguard")
    for rounds in range(1, max_rounds + 1):
        changed = 0
        for k, rel in enumerate(axes):
            if rel.parents.size:
                changed += _axis(_abn(lo, k), _abn(hi, k), rel.parents, rel.ptr, rel.kids)
        if np.any(lo > hi):
            raise Infeasible(f"{int((lo > hi).sum())} cell interval(s) became empty; a method's bounds are wrong")
        if not changed:
            return rounds
    return max_rounds


def _abn(array: IntArray, k: int) -> IntArray:
    shape = array.shape
    a = int(np.prod(shape[:k], dtype=np.int64))
    b = int(np.prod(shape[k + 1 :], dtype=np.int64))
    return array.reshape(a, shape[k], b)


@njit(nogil=True, cache=True)
def _axis(lo, hi, parents, ptr, kids):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """One sweep of every relation along the middle axis of ``(A, n, B)`` views; returns the bounds changed.

    Each ``(a, b)`` line is a system of its own, its relations taken in order; the sweep takes a
    relation for every ``b`` at once, so that the innermost loop reads memory in order (the lines do
    not interact, so the result is the same as line by line).
    """
    changed = 0
    width = lo.shape[2]
    slo = np.empty(width, dtype=lo.dtype)
    shi = np.empty(width, dtype=lo.dtype)
    for a in range(lo.shape[0]):
        for r in range(parents.size):
            p = parents[r]
            slo[:] = 0
            shi[:] = 0
            for k in range(ptr[r], ptr[r + 1]):
                c = kids[k]
                for b in range(width):
                    slo[b] += lo[a, c, b]
                    shi[b] += hi[a, c, b]
            for b in range(width):
                plo = max(lo[a, p, b], slo[b])
                phi = min(hi[a, p, b], shi[b])
                if plo != lo[a, p, b] or phi != hi[a, p, b]:
                    lo[a, p, b] = plo
                    hi[a, p, b] = phi
                    changed += 1
            for k in range(ptr[r], ptr[r + 1]):
                c = kids[k]
                for b in range(width):
                    clo = max(lo[a, c, b], lo[a, p, b] - (shi[b] - hi[a, c, b]))
                    chi = min(hi[a, c, b], hi[a, p, b] - (slo[b] - lo[a, c, b]))
                    if clo != lo[a, c, b] or chi != hi[a, c, b]:
                        lo[a, c, b] = clo
                        hi[a, c, b] = chi
                        changed += 1
    return changed

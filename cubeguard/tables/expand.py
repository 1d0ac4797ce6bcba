"""A table with every total and subtotal, from its bottom cells or from a finer table's.

Each output code of an axis is a range of the source's bottom positions along one source axis
(a code of the hierarchy covers a contiguous range of bottom positions in pre-order; a coarser
level's bottom code covers a contiguous range of a finer level's). So a table, margins included,
is one pass per source axis: a running prefix over the axis and a difference per code, whatever
the width of the range. Source axes the table does not cross are summed whole. Counts and key
sums are summed as unsigned integers, which wrap modulo 2**64 as numpy's sums do, so the key sums,
hence the cell keys and the published values, equal those of the cubes bit for bit.
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.cubes.hierarchy import Breakdown

N = TypeVar("N", bound=np.number)
Ranges = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]  # per output code: first and one-past-last source position


@njit(nogil=True, cache=True)
def _expand_axis(src, lo, hi, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[o, k, i] = src[o, lo[k]:hi[k], i].sum()`` for a (outer, n, inner) ``src``."""
    outer, n, inner = src.shape
    if inner == 1:  # the last axis: scalar running sums
        line = np.zeros(n + 1, dtype=src.dtype)
        for o in range(outer):
            for j in range(n):
                line[j + 1] = line[j] + src[o, j, 0]
            for k in range(lo.size):
                out[o, k, 0] = line[hi[k]] - line[lo[k]]
        return
    prefix = np.zeros((n + 1, inner), dtype=src.dtype)
    for o in range(outer):
        for j in range(n):
            before, after, row = prefix[j], prefix[j + 1], src[o, j]
            for i in range(inner):
                after[i] = before[i] + row[i]
        for k in range(lo.size):
            first, last, cell = prefix[lo[k]], prefix[hi[k]], out[o, k]
            for i in range(inner):
                cell[i] = last[i] - first[i]


def gather(source: npt.NDArray[N], axes: list[tuple[int, Ranges]]) -> npt.NDArray[N]:
    """The table whose axis ``d`` holds, for ``axes[d] = (source axis, (lo, hi))``, the sums over those ranges.

    Source axes not named in ``axes`` are summed whole. The axes are taken smallest result first
    (summed-out and coarsened axes shrink the array before the margins grow it).
    """
    signed = source.dtype == np.int64
    out = np.ascontiguousarray(source.view(np.uint64) if signed else source)
    steps: dict[int, Ranges] = {a: r for a, r in axes}
    for a in range(source.ndim):
        steps.setdefault(a, (np.zeros(1, dtype=np.int64), np.full(1, source.shape[a], dtype=np.int64)))
    todo = set(steps)
    while todo:
        a = min(todo, key=lambda x: (steps[x][0].size / out.shape[x], -x))
        out = _along(out, a, steps[a])
        todo.remove(a)
    named = [a for a, _ in axes]
    out = np.ascontiguousarray(np.transpose(out, named + [a for a in range(source.ndim) if a not in named]))
    out = out.reshape(out.shape[: len(named)])
    return out.view(np.int64) if signed else out


def _along(array: npt.NDArray[N], axis: int, ranges: Ranges) -> npt.NDArray[N]:
    shape = array.shape
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    lo, hi = ranges
    grown = np.empty((*shape[:axis], lo.size, *shape[axis + 1 :]), dtype=array.dtype)
    _expand_axis(array.reshape(outer, shape[axis], inner), lo, hi, grown.reshape(outer, lo.size, inner))
    return grown


def margins(bottom: npt.NDArray[N], bds: list[Breakdown]) -> npt.NDArray[N]:
    """Every total and subtotal of a table from its bottom cells.

    :func:`cubeguard.cubes.margins.expand_all` does the same for whole cubes on every core; a
    table is small and many are built at once, so here it is done in the calling thread, without
    the GIL.
    """
    return gather(bottom, [(d, (bd.lo, bd.hi)) for d, bd in enumerate(bds)])

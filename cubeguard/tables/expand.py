"""A table with every total and subtotal, from its bottom cells or from a finer table's.

Each output code of an axis is a range of the source's bottom positions along one source axis
(a code of the hierarchy covers a contiguous range of bottom positions in pre-order; a coarser
level's bottom code covers a contiguous range of a finer level's). So a table, margins included,
is one pass per source axis (:func:`cubeguard.cubes.margins.expand_serial`, the cubes' margin
kernel in the calling thread: a running prefix over the axis and a difference per code, whatever
the width of the range). Source axes the table does not cross are summed whole. Counts and key
sums are summed as unsigned integers, which wrap modulo 2**64 as numpy's sums do, so the key sums,
hence the cell keys and the published values, equal those of the cubes bit for bit.
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.margins import expand_serial

N = TypeVar("N", bound=np.number)
Ranges = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]  # per output code: first and one-past-last source position


def gather(source: npt.NDArray[N], axes: list[tuple[int, Ranges]]) -> npt.NDArray[N]:
    """The table whose axis ``d`` holds, for ``axes[d] = (source axis, (lo, hi))``, the sums over those ranges.

    Source axes not named in ``axes`` are summed whole. The axes are taken smallest result first
    (summed-out and coarsened axes shrink the array before the margins grow it), and the axes are
    put in the table's order before the first pass that grows it, where the copy is smallest.
    """
    signed = source.dtype == np.int64
    out = np.ascontiguousarray(source.view(np.uint64) if signed else source)
    steps: dict[int, Ranges] = {a: r for a, r in axes}
    for a in range(source.ndim):
        steps.setdefault(a, (np.zeros(1, dtype=np.int64), np.full(1, source.shape[a], dtype=np.int64)))
    named = [a for a, _ in axes]
    order = named + [a for a in range(source.ndim) if a not in named]
    where = list(range(source.ndim))  # where[a]: the position of source axis a in ``out``
    placed = order == where
    todo = set(steps)
    while todo:
        a = min(todo, key=lambda x: (steps[x][0].size / out.shape[where[x]], -x))
        if not placed and steps[a][0].size > out.shape[where[a]]:
            out, where, placed = _in_order(out, order, where), [order.index(x) for x in range(source.ndim)], True
        out = _along(out, where[a], steps[a])
        todo.remove(a)
    if not placed:
        out = _in_order(out, order, where)
    out = out.reshape(out.shape[: len(named)])
    return out.view(np.int64) if signed else out


def _in_order(array: npt.NDArray[N], order: list[int], where: list[int]) -> npt.NDArray[N]:
    """``array`` (source axis ``a`` at ``where[a]``) copied with its axes in ``order``."""
    return np.ascontiguousarray(np.transpose(array, [where[a] for a in order]))


def _along(array: npt.NDArray[N], axis: int, ranges: Ranges) -> npt.NDArray[N]:
    shape = array.shape
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    lo, hi = ranges
    grown = np.empty((*shape[:axis], lo.size, *shape[axis + 1 :]), dtype=array.dtype)
    expand_serial(array.reshape(outer, shape[axis], inner), lo, hi, grown.reshape(outer, lo.size, inner))
    return grown


def margins(bottom: npt.NDArray[N], bds: list[Breakdown]) -> npt.NDArray[N]:
    """Every total and subtotal of a table from its bottom cells.

    :func:`cubeguard.cubes.margins.expand_all` does the same for whole cubes on every core; a
    table is small and many are built at once, so here it is done in the calling thread, without
    the GIL.
    """
    return gather(bottom, [(d, (bd.lo, bd.hi)) for d, bd in enumerate(bds)])

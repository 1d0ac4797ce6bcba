"""Totals and subtotals from the finest cells, exactly, along each hierarchical dimension."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from cubeguard.cubes.hierarchy import Breakdown

_BLOCK = 2048  # trailing cells per task: the prefix buffer of a task stays in cache

_Cell = TypeVar("_Cell", bound=np.number)  # counts (int64), key sums (uint64), sums of values (float64)


def expand_axis(bottom: npt.NDArray[_Cell], axis: int, breakdown: Breakdown) -> npt.NDArray[_Cell]:
    """Replace ``axis`` (bottom codes) by every code of ``breakdown`` (totals, subtotals, bottom).

    Each code covers a contiguous bottom range [lo, hi), so its value is a difference of prefix sums.
    Integer arithmetic keeps this exact; uint64 key sums wrap modulo 2**64 consistently.
    """
    src = np.ascontiguousarray(bottom)
    shape = src.shape
    pre = int(np.prod(shape[:axis], dtype=np.int64))
    post = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    out = np.empty((*shape[:axis], breakdown.lo.size, *shape[axis + 1 :]), dtype=src.dtype)
    lo = np.ascontiguousarray(breakdown.lo, dtype=np.int64)
    hi = np.ascontiguousarray(breakdown.hi, dtype=np.int64)
    _expand(src.reshape(pre, shape[axis], post), lo, hi, out.reshape(pre, lo.size, post))
    return out


def expand_all(bottom: npt.NDArray[_Cell], breakdowns: list[Breakdown]) -> npt.NDArray[_Cell]:
    """All margins of a bottom-cell array, one axis after the other."""
    out = bottom
    for axis, bd in enumerate(breakdowns):
        out = expand_axis(out, axis, bd)
    return out


@njit(parallel=True, nogil=True, cache=True)
def _expand(
    src: npt.NDArray[np.integer], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], out: npt.NDArray[np.integer]
) -> None:  # pragma: no cover - compiled
    """``out[p, k, q] = sum(src[p, lo[k]:hi[k], q])`` as differences of prefix sums over the middle axis.

    Tasks are (p, block of q): each keeps a prefix buffer of (n + 1) x block values.
    """
    pre, n, post = src.shape
    blocks = (post + _BLOCK - 1) // _BLOCK
    for task in prange(pre * blocks):
        p = task // blocks
        q0 = (task % blocks) * _BLOCK
        width = min(_BLOCK, post - q0)
        prefix = np.zeros((n + 1, width), dtype=src.dtype)
        for j in range(n):
            for q in range(width):
                prefix[j + 1, q] = prefix[j, q] + src[p, j, q0 + q]
        for k in range(lo.shape[0]):
            for q in range(width):
                out[p, k, q0 + q] = prefix[hi[k], q] - prefix[lo[k], q]

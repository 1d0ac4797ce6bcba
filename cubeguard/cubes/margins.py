"""Totals and subtotals from the finest cells, exactly, along each hierarchical dimension.

The one margin kernel: the tabulation (:func:`expand_all`), the table service (:func:`expand_serial`)
and the methods that publish every margin as a sum of their changed interior
(:func:`cubeguard.methods.cells.sum_up`) sum over contiguous ranges of the finest cells here.
Integers are differences of prefix sums; real values a method publishes are summed directly
(:func:`sum_ranges`), since a prefix difference is not the direct sum to the bit.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from cubeguard.cubes.hierarchy import Breakdown

_BLOCK = 2048  # trailing cells per task: the prefix buffer of a task stays in cache
#: values of the serial kernel's prefix buffer: 256 KB of 8-byte values, an eighth of a core's L2 here, so
#: source and output rows stream past it (150 new 4-way AGE tables of the EU programme at 10M persons summed
#: from crossings, one thread: 3.11-3.16 ms a table against 3.36-3.38 with 2 MB; 32 KB 3.54, 128 KB 3.21,
#: 512 KB 3.19)
_SERIAL_BUFFER = 2**15

_Cell = TypeVar("_Cell", bound=np.number)  # counts (int64), key sums (uint64), sums of values (float64)


def expand_axis(bottom: npt.NDArray[_Cell], axis: int, breakdown: Breakdown) -> npt.NDArray[_Cell]:
    """Replace ``axis`` (bottom codes) by every code of ``breakdown`` (totals, subtotals, bottom).

    Each code covers a contiguous bottom range [lo, hi), so its value is a difference of prefix sums.
    Integer arithmetic keeps this exact; uint64 key sums wrap modulo 2**64 consistently.
    """
    return expand_ranges(bottom, axis, breakdown.lo, breakdown.hi)


def expand_ranges(
    bottom: npt.NDArray[_Cell], axis: int, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]
) -> npt.NDArray[_Cell]:
    """Replace ``axis`` by one entry per range: entry ``k`` sums positions ``lo[k]`` to ``hi[k] - 1``."""
    return _ranged(bottom, axis, lo, hi, direct=False)


def sum_ranges(
    bottom: npt.NDArray[_Cell], axis: int, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]
) -> npt.NDArray[_Cell]:
    """As :func:`expand_ranges`, but each entry summed directly: ``bottom[lo[k]] + ... + bottom[hi[k] - 1]``, in that order.

    For real-valued cells. A difference of two prefix sums is exact for integers, not for floats:
    it rounds differently from the direct sum, and a small subtotal that is the difference of two
    large running sums keeps only the digits they share. The direct sum, left to right from zero,
    gives the same bits as multiplying by the 0/1 aggregation matrix did (a sparse row sums its
    entries in column order), for ``depth + 1`` additions per bottom cell instead of two.
    """
    return _ranged(bottom, axis, lo, hi, direct=True)


#: Below this many cells out, one thread sums: waking the others costs more than they save (and
#: on a busy machine, much more), and the serial and parallel kernels give the same bits.
_PARALLEL_CELLS = 2**16


def _ranged(
    bottom: npt.NDArray[_Cell], axis: int, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], direct: bool
) -> npt.NDArray[_Cell]:
    """``bottom`` with ``axis`` replaced by the sums over ranges, by prefix differences or ``direct`` sums."""
    src = np.ascontiguousarray(bottom)
    shape = src.shape
    pre = int(np.prod(shape[:axis], dtype=np.int64))
    post = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    out = np.empty((*shape[:axis], lo.size, *shape[axis + 1 :]), dtype=src.dtype)
    parallel = out.size >= _PARALLEL_CELLS
    kernel = (_sum_direct if parallel else sum_direct_serial) if direct else (_expand if parallel else expand_serial)
    kernel(src.reshape(pre, shape[axis], post), lo, hi, out.reshape(pre, lo.size, post))
    return out


def expand_all(bottom: npt.NDArray[_Cell], breakdowns: list[Breakdown]) -> npt.NDArray[_Cell]:
    """All margins of a bottom-cell array, one axis after the other."""
    out = bottom
    for axis, bd in enumerate(breakdowns):
        out = expand_axis(out, axis, bd)
    return out


@njit(parallel=True, nogil=True, cache=True)
def _expand(
    src: npt.NDArray[np.number], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], out: npt.NDArray[np.number]
) -> None:  # pragma: no cover - compiled
    """``out[p, k, q] = sum(src[p, lo[k]:hi[k], q])`` on every core.

    Tasks are (p, block of q): each keeps a prefix buffer of (n + 1) x block values; along a last
    axis (one q), a task is a run of p sharing one running-sum line.
    """
    pre, n, post = src.shape
    if post == 1:
        runs = (pre + _BLOCK - 1) // _BLOCK
        for run in prange(runs):
            line = np.zeros(n + 1, dtype=src.dtype)
            for p in range(run * _BLOCK, min(pre, (run + 1) * _BLOCK)):
                _expand_line(src, lo, hi, out, p, line)
        return
    blocks = (post + _BLOCK - 1) // _BLOCK
    for task in prange(pre * blocks):
        p = task // blocks
        q0 = (task % blocks) * _BLOCK
        width = min(_BLOCK, post - q0)
        prefix = np.zeros((n + 1, width), dtype=src.dtype)
        _expand_block(src, lo, hi, out, p, q0, width, prefix)


@njit(parallel=True, nogil=True, cache=True)
def _sum_direct(
    src: npt.NDArray[np.number], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], out: npt.NDArray[np.number]
) -> None:  # pragma: no cover - compiled
    """``out[p, k, q] = src[p, lo[k], q] + ... + src[p, hi[k] - 1, q]`` (from zero, in that order) on every core.

    Tasks are (p, block of q); each entry is summed along the middle axis in order, the inner loop
    running over q (contiguous, vectorised) without reordering any entry's additions. Along a last
    axis (one q), a task is a run of p.
    """
    pre, _, post = src.shape
    if post == 1:
        runs = (pre + _BLOCK - 1) // _BLOCK
        for run in prange(runs):
            for p in range(run * _BLOCK, min(pre, (run + 1) * _BLOCK)):
                _sum_line(src, lo, hi, out, p)
        return
    blocks = (post + _BLOCK - 1) // _BLOCK
    for task in prange(pre * blocks):
        q0 = (task % blocks) * _BLOCK
        _sum_block(src, lo, hi, out, task // blocks, q0, min(post, q0 + _BLOCK))


@njit(nogil=True, cache=True)
def sum_direct_serial(
    src: npt.NDArray[np.number], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], out: npt.NDArray[np.number]
) -> None:  # pragma: no cover - compiled
    """:func:`_sum_direct` in the calling thread (the same additions in the same order)."""
    pre, _, post = src.shape
    for p in range(pre):
        if post == 1:
            _sum_line(src, lo, hi, out, p)
        else:
            for q0 in range(0, post, _BLOCK):
                _sum_block(src, lo, hi, out, p, q0, min(post, q0 + _BLOCK))


@njit(nogil=True, cache=True, inline="always")
def _sum_block(src, lo, hi, out, p, q0, q1):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[p, k, q0:q1]``, each entry its range's values added in order to zero."""
    for k in range(lo.shape[0]):
        cell = out[p, k, q0:q1]
        cell[:] = 0
        for j in range(lo[k], hi[k]):
            row = src[p, j, q0:q1]
            for q in range(q1 - q0):
                cell[q] += row[q]


@njit(nogil=True, cache=True, inline="always")
def _sum_line(src, lo, hi, out, p):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[p, k, 0]``, each entry a scalar running sum of its range."""
    for k in range(lo.shape[0]):
        total = src.dtype.type(0)
        for j in range(lo[k], hi[k]):
            total += src[p, j, 0]
        out[p, k, 0] = total


@njit(nogil=True, cache=True)
def expand_serial(
    src: npt.NDArray[np.number], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], out: npt.NDArray[np.number]
) -> None:  # pragma: no cover - compiled
    """:func:`_expand` in the calling thread (for many small tables at once, as the table service builds).

    Blocks of q are as wide as keeps the prefix buffer within :data:`_SERIAL_BUFFER` values.
    """
    pre, n, post = src.shape
    if post == 1:
        line = np.zeros(n + 1, dtype=src.dtype)
        for p in range(pre):
            _expand_line(src, lo, hi, out, p, line)
        return
    block = max(1, min(post, _SERIAL_BUFFER // (n + 1)))
    prefix = np.zeros((n + 1, block), dtype=src.dtype)
    for p in range(pre):
        for q0 in range(0, post, block):
            _expand_block(src, lo, hi, out, p, q0, min(block, post - q0), prefix)


@njit(nogil=True, cache=True, inline="always")
def _expand_block(src, lo, hi, out, p, q0, width, prefix):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[p, k, q0:q0 + width]`` as differences of prefix sums over the middle axis.

    ``prefix`` is an (n + 1) x ``width``-or-wider buffer whose first row is zero (it is never written).
    """
    for j in range(src.shape[1]):  # row views keep the inner loops contiguous (and vectorised)
        before, after, row = prefix[j, :width], prefix[j + 1, :width], src[p, j, q0 : q0 + width]
        for q in range(width):
            after[q] = before[q] + row[q]
    for k in range(lo.shape[0]):
        first, last, cell = prefix[lo[k], :width], prefix[hi[k], :width], out[p, k, q0 : q0 + width]
        for q in range(width):
            cell[q] = last[q] - first[q]


@njit(nogil=True, cache=True, inline="always")
def _expand_line(src, lo, hi, out, p, line):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``out[p, k, 0]`` from running sums of ``src[p, :, 0]`` in ``line`` (n + 1 values, the first zero)."""
    for j in range(src.shape[1]):
        line[j + 1] = line[j] + src[p, j, 0]
    for k in range(lo.shape[0]):
        out[p, k, 0] = line[hi[k]] - line[lo[k]]

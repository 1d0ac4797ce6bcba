"""Noise of one component from a numeric p-table: cellKey 1.0.2's ``.lookup_v_flex``.

The ratio ``a = |running value / x_delta|`` is capped at the table's largest ``i`` (``d``). If it
equals a point ``i`` of the table exactly, ``v`` is that of the first row of ``i`` with
``ck < ub`` (intervals ``[lb, ub)``, as for counts). Otherwise the two neighbouring points
``a0 < a < a1`` are looked up with the same key and ``v = (1 - lambda) v(a0) + lambda v(a1)``,
``lambda = (a - a0) / (a1 - a0)`` (Gießing 2016, PSD 2016; Handbook on SDC v2, 5.4). A key of
0 gives 0. ``a`` = NaN (0/0) or a key that R could not read (NA) make cellKey stop; here they
are reported as ``UNDEFINED`` and the component is skipped.

The table is flattened for the compiled loop by :func:`kernel_table`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.ckm.magnitude.ptable import TYPES, NumPTable

EXACT, INTERPOLATED, KEY_ZERO, UNDEFINED = 0, 1, 2, 3
MODES = ("exact", "interpolated", "ck0", "undefined")


class KernelTable(NamedTuple):
    """A numeric p-table as flat arrays: per type (code = index in ``TYPES``) its sorted points.

    ``points[first[t]:first[t + 1]]`` are the sorted ``i`` of type ``t``; the rows of point ``k``
    are ``row_start[k]..row_end[k] - 1`` (file rows, 0-based) with bounds ``ub`` and noise ``v``.
    """

    first: npt.NDArray[np.int64]
    points: npt.NDArray[np.float64]
    row_start: npt.NDArray[np.int64]
    row_end: npt.NDArray[np.int64]
    ub: npt.NDArray[np.float64]
    v: npt.NDArray[np.float64]
    max_i: npt.NDArray[np.float64]


def kernel_table(table: NumPTable) -> KernelTable:
    """Flatten ``table`` for :func:`lookup_v` (its validation guarantees adjacent, ascending blocks)."""
    first, points, starts, ends, max_i = [0], [], [], [], []
    for kind in TYPES:
        rows = np.flatnonzero(table.type == kind)
        levels = np.unique(table.i[rows])
        for level in levels:
            block = rows[table.i[rows] == level]
            points.append(level)
            starts.append(block[0])
            ends.append(block[-1] + 1)
        first.append(len(points))
        max_i.append(levels[-1] if levels.size else np.nan)
    return KernelTable(
        np.array(first, dtype=np.int64),
        np.array(points, dtype=np.float64),
        np.array(starts, dtype=np.int64),
        np.array(ends, dtype=np.int64),
        np.ascontiguousarray(table.ub, dtype=np.float64),
        np.ascontiguousarray(table.v, dtype=np.float64),
        np.array(max_i, dtype=np.float64),
    )


@njit(nogil=True, cache=True, inline="always")
def _first_row(start: int, end: int, ub: np.ndarray, ck: float) -> int:  # pragma: no cover - compiled
    """The first row of ``start..end-1`` whose upper bound exceeds ``ck`` (bounds ascend: a bisection)."""
    lo, hi = start, end - 1  # the last bound is 1 > ck
    while lo < hi:
        mid = (lo + hi) // 2
        if ck < ub[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(nogil=True, cache=True, inline="always")
def lookup_v(kind: int, ck: float, a: float, t: KernelTable, out: np.ndarray) -> int:  # pragma: no cover
    """Noise for type ``kind``, key ``ck``, ratio ``a``; returns the mode and fills ``out``.

    ``out`` (float64, 7) receives a capped, v, row low, row up (-1 if none), lambda, v low, v up.
    """
    out[:] = np.nan
    out[2] = -1.0
    out[3] = -1.0
    if ck == 0.0:
        out[1] = 0.0
        return KEY_ZERO
    if ck != ck:  # NaN: R's as.numeric gave NA for a scrambled key; cellKey stops
        return UNDEFINED
    d = t.max_i[kind]
    capped = d if a > d else a
    out[0] = capped
    if capped != capped:
        return UNDEFINED
    lo, hi = t.first[kind], t.first[kind + 1]
    below = lo
    for k in range(lo, hi):
        if t.points[k] == capped:
            row = _first_row(t.row_start[k], t.row_end[k], t.ub, ck)
            out[1] = t.v[row]
            out[2] = row
            out[5] = t.v[row]
            return EXACT
        if t.points[k] < capped:
            below = k
    above = below + 1
    row_low = _first_row(t.row_start[below], t.row_end[below], t.ub, ck)
    row_up = _first_row(t.row_start[above], t.row_end[above], t.ub, ck)
    a0, a1 = t.points[below], t.points[above]
    lam = (capped - a0) / (a1 - a0)
    out[1] = (1.0 - lam) * t.v[row_low] + lam * t.v[row_up]
    out[2], out[3], out[4], out[5], out[6] = row_low, row_up, lam, t.v[row_low], t.v[row_up]
    return INTERPOLATED

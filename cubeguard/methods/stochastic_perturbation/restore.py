"""Additivity after a perturbation: iterative proportional fitting to margin tables, then integers.

Shlomo (2009), 3.2.2: "an IPF algorithm can be used to fit the margins of the table after the
perturbation. This results in cell values that are not integers ... Cell values can also be
rounded to their nearest integers resulting in 'close' additivity". IPF (Deming and Stephan
1940) scales the interior cells, one margin table after another, until every margin table is
within ``tolerance`` of its target; a zero cell stays zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Fit:
    """The outcome of IPF: the fitted interior and how close it came.

    Attributes:
        fitted: the interior cells after fitting.
        iterations: full cycles over the margin tables.
        max_gap: the largest absolute difference between a fitted margin cell and its target.
        converged: whether ``max_gap`` fell within the tolerance.
    """

    fitted: FloatArray
    iterations: int
    max_gap: float
    converged: bool


def margin(table: FloatArray, axes: Sequence[int]) -> FloatArray:
    """The margin table of ``table`` over ``axes`` (summed over every other axis, axes kept in order)."""
    other = tuple(a for a in range(table.ndim) if a not in axes)
    out: FloatArray = table.sum(axis=other)
    return out


def ipf(start: FloatArray, targets: Sequence[tuple[Sequence[int], FloatArray]], tolerance: float, cycles: int) -> Fit:
    """``start`` scaled to the margin tables ``targets`` (each: the axes it keeps and its values).

    A margin cell whose interior is all zero cannot be fitted and keeps its sum (0); it counts in
    ``max_gap``. Stops when every margin cell is within ``tolerance`` or after ``cycles`` cycles.

    >>> fit = ipf(np.array([[1.0, 1.0], [1.0, 3.0]]), [((0,), np.array([4.0, 4.0])), ((1,), np.array([3.0, 5.0]))], 1e-9, 200)
    >>> np.round(fit.fitted, 6).tolist(), fit.converged
    ([[2.0, 2.0], [1.0, 3.0]], True)
    """
    x = np.asarray(start, dtype=np.float64).copy()
    gap, done = _gap(x, targets), 0
    while gap > tolerance and done < cycles:
        for axes, target in targets:
            current = margin(x, axes)
            ratio = np.divide(target, current, out=np.ones_like(current), where=current > 0)
            x *= np.expand_dims(ratio, tuple(a for a in range(x.ndim) if a not in axes))
        done += 1
        gap = _gap(x, targets)
    return Fit(x, done, gap, gap <= tolerance)


def _gap(x: FloatArray, targets: Sequence[tuple[Sequence[int], FloatArray]]) -> float:
    return max((float(np.abs(margin(x, axes) - t).max(initial=0.0)) for axes, t in targets), default=0.0)


def controlled_integers(
    fit: FloatArray, targets: Sequence[tuple[Sequence[int], FloatArray]], time_limit_s: float = 60.0
) -> IntArray | None:
    """The fitted interior rounded down or up so every cell of every margin table in ``targets`` is exact.

    Controlled rounding to base 1 (Cox 1987; Shlomo 2009, 3.2.2) with the margin tables as its
    only constraints: each cell takes the floor or the ceiling of its fitted value, the sum over
    every margin cell equals its (integral) target, and the sum of absolute differences from the
    fitted values is least (HiGHS through SciPy). The other totals of the cube are then sums of
    the result, so it is additive. ``None`` when no such rounding exists or none is found in
    ``time_limit_s`` (three or more margin tables need not admit one).

    >>> fitted = np.array([[0.5, 1.5], [2.5, 0.5]])
    >>> controlled_integers(fitted, [((0,), np.array([2.0, 3.0])), ((1,), np.array([3.0, 2.0]))]).tolist()
    [[0, 2], [3, 0]]
    """
    low = np.floor(fit + 1e-9)
    fraction = (fit - low).ravel()
    free = np.flatnonzero(fraction > 1e-9)
    index = np.indices(fit.shape).reshape(fit.ndim, -1)
    rows, cols, need, offset = [], [], [], 0
    for axes, target in targets:
        cell = np.ravel_multi_index(tuple(index[a] for a in axes), target.shape)  # its margin cell, per interior cell
        floors = np.bincount(cell, weights=low.ravel(), minlength=target.size)
        need.append(np.rint(target).ravel() - floors)
        rows.append(offset + cell[free])
        cols.append(np.arange(free.size))
        offset += target.size
    needed = np.concatenate(need)
    if free.size == 0:
        return None if np.any(np.abs(needed) > 0.5) else low.astype(np.int64)
    a = sp.csr_array(
        (np.ones(free.size * len(rows)), (np.concatenate(rows), np.concatenate(cols))), (offset, free.size)
    )
    result = milp(
        c=1.0 - 2.0 * fraction[free],
        constraints=LinearConstraint(a, needed, needed),
        integrality=np.ones(free.size),
        bounds=Bounds(0.0, 1.0),
        options={"time_limit": time_limit_s},
    )
    if result.x is None:
        return None
    out = low.ravel()
    out[free] += np.rint(result.x)
    return out.reshape(fit.shape).astype(np.int64)

"""Additivity after a perturbation: iterative proportional fitting to margin tables, then integers.

Shlomo (2009), 3.2.2: "an IPF algorithm can be used to fit the margins of the table after the
perturbation. This results in cell values that are not integers ... Cell values can also be
rounded to their nearest integers resulting in 'close' additivity". IPF (Deming and Stephan
1940) scales the interior cells, one margin table after another, until every margin table is
within ``tolerance`` of its target; a zero cell stays zero. A margin table is any partition of the
interior cells (:class:`Table`): the cells of a breakdown's codes (the sum over every other axis),
or the control groups of a perturbation, which are then kept as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Table:
    """A margin table: the margin cell each interior cell (flat) adds to, and each margin cell's target.

    Attributes:
        cell: for each interior cell, its margin cell, 0 .. target.size - 1.
        target: the value each margin cell is fitted to.
    """

    cell: IntArray
    target: FloatArray

    def sums(self, x: FloatArray) -> FloatArray:
        """Each margin cell's sum of ``x`` (flat interior cells)."""
        return np.bincount(self.cell, weights=x, minlength=self.target.size).astype(np.float64)


def table_over(original: FloatArray, axes: Sequence[int]) -> Table:
    """The margin table of ``original`` (the interior, shaped) over ``axes``, its target the original sums."""
    return table_of(labels_over(original.shape, axes), original.ravel())


def labels_over(shape: Sequence[int], axes: Sequence[int]) -> IntArray:
    """Each interior cell's margin cell over ``axes`` (flat, margin cells numbered in C order of those axes)."""
    kept = [n if a in axes else 1 for a, n in enumerate(shape)]
    labels = np.arange(int(np.prod(kept)), dtype=np.int64).reshape(kept)
    return np.broadcast_to(labels, tuple(shape)).ravel()  # one label per interior cell, not an index grid


def table_of(cell: IntArray, original: FloatArray) -> Table:
    """The margin table of the labels ``cell`` (flat), its target the sums of ``original`` (flat)."""
    return Table(cell, np.bincount(cell, weights=original, minlength=int(cell.max(initial=-1)) + 1).astype(np.float64))


@dataclass(frozen=True)
class Fit:
    """The outcome of IPF: the fitted interior and how close it came.

    Attributes:
        fitted: the interior cells after fitting (flat).
        iterations: full cycles over the margin tables.
        max_gap: the largest absolute difference between a fitted margin cell and its target.
        converged: whether ``max_gap`` fell within the tolerance.
    """

    fitted: FloatArray
    iterations: int
    max_gap: float
    converged: bool


def ipf(start: FloatArray, tables: Sequence[Table], tolerance: float, cycles: int) -> Fit:
    """``start`` (flat interior cells) scaled to the margin tables ``tables``.

    A margin cell whose interior is all zero cannot be fitted and keeps its sum (0); it counts in
    ``max_gap``. Stops when every margin cell is within ``tolerance`` or after ``cycles`` cycles.

    >>> start, rows, cols = np.array([1.0, 1.0, 1.0, 3.0]), np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    >>> fit = ipf(start, [Table(rows, np.array([4.0, 4.0])), Table(cols, np.array([3.0, 5.0]))], 1e-9, 200)
    >>> np.round(fit.fitted, 6).tolist(), fit.converged
    ([2.0, 2.0, 1.0, 3.0], True)
    """
    x = np.asarray(start, dtype=np.float64).ravel().copy()
    gap, done = _gap(x, tables), 0
    while gap > tolerance and done < cycles:
        for table in tables:
            current = table.sums(x)
            ratio = np.divide(table.target, current, out=np.ones_like(current), where=current > 0)
            x *= ratio[table.cell]
        done += 1
        gap = _gap(x, tables)
    return Fit(x, done, gap, gap <= tolerance)


def _gap(x: FloatArray, tables: Sequence[Table]) -> float:
    return max((float(np.abs(t.sums(x) - t.target).max(initial=0.0)) for t in tables), default=0.0)


def controlled_integers(fit: FloatArray, tables: Sequence[Table], time_limit_s: float = 60.0) -> IntArray | None:
    """The fitted interior (flat) rounded down or up so every cell of every margin table is exact.

    Controlled rounding to base 1 (Cox 1987; Shlomo 2009, 3.2.2) with the margin tables as its
    only constraints: each cell takes the floor or the ceiling of its fitted value, the sum over
    every margin cell equals its (integral) target, and the sum of absolute differences from the
    fitted values is least whenever the linear relaxation's vertex is integral (HiGHS through SciPy;
    see :func:`_zero_one`). The other totals of the cube are then sums of
    the result, so it is additive. ``None`` when no such rounding exists or none is found in
    ``time_limit_s`` (three or more margin tables need not admit one).

    >>> rows, cols = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    >>> tables = [Table(rows, np.array([2.0, 3.0])), Table(cols, np.array([3.0, 2.0]))]
    >>> controlled_integers(np.array([0.5, 1.5, 2.5, 0.5]), tables).tolist()
    [0, 2, 3, 0]
    """
    low = np.floor(fit + 1e-9)
    fraction = fit - low
    free = np.flatnonzero(fraction > 1e-9)
    needed = np.concatenate(
        [np.rint(t.target) - np.bincount(t.cell, weights=low, minlength=t.target.size) for t in tables]
    )
    if free.size == 0:
        return None if np.any(np.abs(needed) > 0.5) else low.astype(np.int64)
    offsets = np.cumsum([0] + [t.target.size for t in tables])[:-1]
    rows = np.concatenate([o + t.cell[free] for o, t in zip(offsets, tables, strict=True)])
    cols = np.tile(np.arange(free.size), len(tables))
    a = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(needed.size, free.size))
    chosen = _zero_one(1.0 - 2.0 * fraction[free], a, needed, time_limit_s)
    if chosen is None:
        return None
    out = low.copy()
    out[free] += chosen
    return out.astype(np.int64)


def _zero_one(cost: FloatArray, a: sp.csr_array, rhs: FloatArray, time_limit_s: float) -> FloatArray | None:
    """A 0/1 vector with ``a x = rhs`` of least cost: the linear program's vertex, then a MIP on what it left fractional.

    With few rows, a vertex of the relaxation has at most as many fractional entries as rows (on
    the EU programme's cubes, none: the vertex is then the least-cost 0/1 vector), so the integer
    program that remains is tiny; solving the whole one as a MIP took 7 times longer on a 7.6M-cell
    EU cube. Should the entries fixed by the vertex leave the rest no solution, the whole program
    is solved as a MIP.
    """
    lp = linprog(cost, A_eq=a, b_eq=rhs, bounds=(0.0, 1.0), method="highs", options={"time_limit": time_limit_s})
    if lp.x is None:
        return None
    x = np.asarray(lp.x, dtype=np.float64)
    open_ = np.flatnonzero((x > 1e-9) & (x < 1 - 1e-9))
    x = np.rint(x)
    if open_.size == 0:
        return x
    x[open_] = 0.0
    rest = _mip(cost[open_], a[:, open_], rhs - a @ x, time_limit_s)
    if rest is None:
        return _mip(cost, a, rhs, time_limit_s)
    x[open_] = rest
    return x


def _mip(cost: FloatArray, a: sp.csr_array, rhs: FloatArray, time_limit_s: float) -> FloatArray | None:
    result = milp(
        c=cost,
        constraints=LinearConstraint(a, rhs, rhs),
        integrality=np.ones(cost.size),
        bounds=Bounds(0.0, 1.0),
        options={"time_limit": time_limit_s},
    )
    return None if result.x is None else np.rint(np.asarray(result.x, dtype=np.float64))

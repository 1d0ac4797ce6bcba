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

FloatArray = npt.NDArray[np.float64]


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

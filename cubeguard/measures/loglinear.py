"""Fit of a log-linear model to a table before and after protection (Handbook on SDC v2, 5.8).

Handbook on SDC v2, 5.8: "For multi-way tables, one can examine conditional dependencies and
calculate expected cell frequencies based on the theory of log-linear models. The test statistic for
the fit of the model is also based on a Pearson Chi-squared statistic ... we examine the impact to
the test statistics before and after the application of the SDC method."

A hierarchical log-linear model is given by its generating class, the margins it keeps (tuples of
axes): ``((0, 2), (1, 2))`` is conditional independence of axes 0 and 1 given axis 2. Its expected
cell frequencies (maximum likelihood) are fitted by iterative proportional fitting (Bishop,
Fienberg and Holland 1975, section 3.5), exact in one cycle for decomposable models. The default
model keeps every margin of all axes but one: no highest-order interaction (independence for a
two-way table, where Pearson's statistic is that of Cramér's V).

Examples:
    >>> round(pearson_fit([[4, 2], [2, 4]]), 6)
    1.333333
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from cubeguard.measures._arrays import BeforeAfter, Counts, check_nonnegative, count_array, numeric, pair
from cubeguard.measures.errors import MeasureConfigError

Margins = Sequence[Sequence[int]]
FloatArray = npt.NDArray[np.float64]


def _generating_class(ndim: int, margins: Margins | None) -> list[tuple[int, ...]]:
    if margins is None:
        return [tuple(c) for c in itertools.combinations(range(ndim), ndim - 1)] if ndim > 1 else [()]
    out = [tuple(sorted({int(a) for a in m})) for m in margins]
    if not out or any(a < 0 or a >= ndim for m in out for a in m):
        raise MeasureConfigError(f"log-linear margins must be tuples of axes 0 to {ndim - 1}, got {list(margins)}")
    return out


def fitted_frequencies(
    table: Counts, margins: Margins | None = None, tolerance: float = 1e-10, max_cycles: int = 1000
) -> FloatArray:
    """Expected cell frequencies of the log-linear model keeping ``margins``, by IPF.

    Cycles stop when no fitted margin is further than ``tolerance`` times the total from the table's.

    Raises:
        MeasureConfigError: for margins that name axes the table does not have.
        NegativeCountError: if a count is negative.
    """
    t = numeric(count_array(table)).astype(np.float64)
    check_nonnegative(t, "the log-linear fit")
    keep = _generating_class(t.ndim, margins)
    fit = np.full(t.shape, t.sum() / max(t.size, 1))
    for _ in range(max_cycles):
        gap = 0.0
        for m in keep:
            other = tuple(a for a in range(t.ndim) if a not in m)
            want, have = t.sum(axis=other, keepdims=True), fit.sum(axis=other, keepdims=True)
            gap = max(gap, float(np.abs(want - have).max(initial=0.0)))
            fit *= np.divide(want, have, out=np.zeros_like(have), where=have > 0)
        if gap <= tolerance * max(float(t.sum()), 1.0):
            break
    return fit


def pearson_fit(table: Counts, margins: Margins | None = None) -> float:
    """Pearson's ``X2 = sum (n - m)^2 / m`` of the table against its fitted log-linear model.

    Cells with a fitted frequency of 0 (their observed count is then 0 too) add nothing.
    """
    t = numeric(count_array(table)).astype(np.float64)
    m = fitted_frequencies(t, margins)
    inside = m > 0
    return float((((t - m) ** 2)[inside] / m[inside]).sum())


def pearson_fit_change(original: Counts, protected: Counts, margins: Margins | None = None) -> BeforeAfter:
    """Pearson's statistic of the log-linear model on the original and on the protected table (5.8)."""
    o, p = pair(original, protected)
    return BeforeAfter(pearson_fit(o, margins), pearson_fit(p, margins))

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

What it does not promise: a fit that has not converged after ``max_cycles`` cycles is reported as
it stands. Sparse tables whose zeros leave no maximum likelihood estimate converge slowly (the gap
falls as one over the cycles): 90 of the 192 fits of the EU programme's measures at 10M persons
stop at 1,000 cycles; in six of them Pearson's statistic was then within 4e-5 of its value at 3,000.

Examples:
    >>> round(pearson_fit([[4, 2], [2, 4]]), 6)
    1.333333
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from numba import njit

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
    cell_of = np.empty((len(keep), t.size), dtype=np.intp)
    wants, offsets = [], [0]
    for i, m in enumerate(keep):
        want = t.sum(axis=tuple(a for a in range(t.ndim) if a not in m), keepdims=True)
        cell_of[i].reshape(t.shape)[...] = np.arange(want.size).reshape(want.shape)
        wants.append(want.ravel())
        offsets.append(offsets[-1] + want.size)
    fit = np.full(t.size, t.sum() / max(t.size, 1))
    stop = tolerance * max(float(t.sum()), 1.0)
    _ipf(fit, cell_of, np.concatenate(wants), np.array(offsets, dtype=np.int64), stop, max_cycles)
    return fit.reshape(t.shape)


@njit(nogil=True, cache=True)
def _ipf(
    fit: FloatArray, cell_of: npt.NDArray[np.intp], wants: FloatArray, offsets: npt.NDArray[np.int64],
    stop: float, max_cycles: int,
) -> int:  # fmt: skip
    """IPF cycles on the flat ``fit`` in place; the cycles run.

    Margin ``m``'s cells are ``wants[offsets[m]:offsets[m + 1]]``; ``cell_of[m, c]`` is the margin
    cell of table cell ``c``. Each pass scales the table to one margin and sums it into the next
    margin's, so a margin costs one pass instead of numpy's sum and multiply. On the 192 fits of
    the EU programme's measures at 10M persons: 118.7 s with numpy, 37.5 s so, Pearson's statistic
    the same to 3e-15 of itself (or of 1). A margin cell fitted at 0 scales its cells to 0.
    """
    k, n = cell_of.shape
    width = int(np.max(offsets[1:] - offsets[:-1]))
    have, following, ratio = np.zeros(width), np.zeros(width), np.empty(width)
    for c in range(n):
        have[cell_of[0, c]] += fit[c]
    for cycle in range(max_cycles):
        gap = 0.0
        for m in range(k):
            start, size = offsets[m], offsets[m + 1] - offsets[m]
            for g in range(size):
                gap = max(gap, abs(wants[start + g] - have[g]))
                ratio[g] = wants[start + g] / have[g] if have[g] > 0 else 0.0
            nxt = (m + 1) % k
            following[: offsets[nxt + 1] - offsets[nxt]] = 0.0
            for c in range(n):
                scaled = fit[c] * ratio[cell_of[m, c]]
                fit[c] = scaled
                following[cell_of[nxt, c]] += scaled
            have, following = following, have
        if gap <= stop:
            return cycle + 1
    return max_cycles


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

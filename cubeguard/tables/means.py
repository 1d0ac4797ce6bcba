"""Published means: a cell's perturbed sum over its published count, rounded, in one compiled loop.

``np.round(np.where(n > 0, m / max(n, 1), nan), decimals)`` took four passes and three temporary
arrays of the table's size; this is the same arithmetic, cell by cell, so the means are those
bit for bit: numpy rounds to ``decimals`` > 0 by multiplying by ``10**decimals``, rounding half to
even (``rint``) and dividing back (``numpy/_core/src/multiarray/calculation.c``, ``PyArray_Round``),
and to 0 decimals by ``rint`` alone.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit


@njit(nogil=True, cache=True)
def _means(sums, counts, scale, out):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    for i in range(out.size):
        n = counts[i]
        if n > 0:
            out[i] = np.rint(sums[i] / n * scale) / scale
        else:
            out[i] = np.nan


def published_means(
    sums: npt.NDArray[np.float64], counts: npt.NDArray[np.int64], decimals: int
) -> npt.NDArray[np.float64]:
    """Per cell ``sums / counts`` rounded to ``decimals`` (0 to 6; half to even), NaN where the count is not positive."""
    if not 0 <= decimals <= 6:
        raise ValueError(f"decimals must be 0 to 6, not {decimals}")
    shape = np.shape(counts)
    n = np.ascontiguousarray(counts, dtype=np.int64).ravel()
    m = np.ascontiguousarray(sums, dtype=np.float64).ravel()
    if m.size != n.size:
        raise ValueError(f"{m.size} sums for {n.size} counts")
    out = np.empty(n.size)
    _means(m, n, float(10**decimals), out)
    return out.reshape(shape)

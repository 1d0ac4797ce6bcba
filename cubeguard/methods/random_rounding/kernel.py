"""Unbiased random rounding of integer counts, vectorised, exact.

Shlomo (2009), 3.2.1: with ``r = x mod b``, ``x`` goes up to ``x - r + b`` with probability
``r / b`` and down to ``x - r`` otherwise. The draw of a cell is a number ``u`` in [0, 1): up
when ``u * b < r``, a comparison of a double with a small integer (``u * b`` is exact to half an
ulp, far below the spacing of the residuals).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cubeguard.errors import InternalError


def random_round(counts: npt.NDArray[np.int64], base: int, u: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """``counts`` rounded to multiples of ``base``, up where ``u * base < counts mod base``.

    >>> random_round(np.array([0, 1, 2, 3, 4]), 3, np.array([0.1, 0.1, 0.9, 0.5, 0.5])).tolist()
    [0, 3, 0, 3, 3]

    Raises:
        InternalError: the counts are not integers, the base is below 1, or the shapes differ.
    """
    if counts.dtype.kind not in "iu" or base < 1 or counts.shape != u.shape:
        raise InternalError(f"random rounding got {counts.dtype} counts, base {base}; this is a bug in cubeguard")
    residual = counts % base
    rounded: npt.NDArray[np.int64] = counts - residual + np.where(u * base < residual, base, 0)
    return rounded

"""Conventional rounding of counts, vectorised over a whole array in exact integer arithmetic.

Handbook on SDC v2, 5.5: each cell is rounded to the nearest multiple of the base. With
``r = count mod base`` the count goes down by ``r`` when ``r < base - r`` and up by ``base - r``
otherwise, so an exact half (``r == base - r``, even bases only) goes up. No product is formed: a
count up to the dtype's largest multiple of the base never overflows.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cubeguard.errors import InternalError


def round_to_base(counts: npt.NDArray[np.integer], base: int) -> npt.NDArray[np.integer]:
    """Integer ``counts`` (a cube's int64) rounded to the nearest multiple of ``base``, halves up; same shape and dtype.

    >>> round_to_base(np.array([0, 1, 2, 3, 6, 12, 16, 20, 23, 32, 39]), 5).tolist()
    [0, 0, 0, 5, 5, 10, 15, 20, 25, 30, 40]
    >>> round_to_base(np.array([1, 2, 3]), 4).tolist()
    [0, 4, 4]

    Raises:
        InternalError: the counts are not integers or the base is below 1 (the config forbids both).
    """
    if counts.dtype.kind not in "iu" or base < 1:
        raise InternalError(
            f"conventional rounding got {counts.dtype} counts and base {base}; this is a bug in cubeguard"
        )
    residual = counts % base
    down = counts - residual
    rounded: npt.NDArray[np.integer] = np.where(residual >= base - residual, down + base, down)
    return rounded

"""Small cell adjustment of counts, vectorised over a whole array in exact integer arithmetic.

Hundepool et al. (2024), Handbook on SDC v2, 5.5: small counts are adjusted up or down to a base
"using an unbiased prescribed probability scheme". A count ``c`` with ``0 < c < base`` goes to
``base`` with probability ``c / base`` and to 0 otherwise, so its expected value stays ``c``. The
uniform number ``u`` of each cell decides: up when ``u < c / base``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cubeguard.errors import InternalError


def adjust_small_cells(counts: npt.NDArray[np.int64], u: npt.NDArray[np.float64], base: int) -> npt.NDArray[np.int64]:
    """``counts`` with each count in 1..base-1 moved to ``base`` when ``u < count / base``, else to 0.

    Other counts, zeros included, are returned unchanged; same shape and dtype.

    >>> adjust_small_cells(np.array([0, 1, 2, 2, 3, 7]), np.array([0.0, 0.3, 0.6, 0.7, 0.0, 0.9]), 3).tolist()
    [0, 3, 3, 0, 3, 7]

    Raises:
        InternalError: the counts are not integers, ``u`` has another shape, or the base is below 2
            (the config forbids all three).
    """
    if counts.dtype.kind not in "iu" or counts.shape != u.shape or base < 2:
        raise InternalError(
            f"small cell adjustment got {counts.dtype} counts of shape {counts.shape}, uniforms of shape "
            f"{u.shape} and base {base}; this is a bug in cubeguard"
        )
    small = (counts > 0) & (counts < base)
    up = u < counts / base
    adjusted: npt.NDArray[np.int64] = np.where(small, np.where(up, base, 0), counts).astype(counts.dtype)
    return adjusted

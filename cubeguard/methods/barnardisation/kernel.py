"""Barnardisation of counts, vectorised over a whole array in exact integer arithmetic.

Hundepool et al. (2024), Handbook on SDC v2, 5.3: each inner cell is modified "by +1, 0 or -1,
according to probabilities p/2, 1-p and p/2 respectively for a fixed p in (0,1)", and zeros are
not adjusted. The uniform number ``u`` of each cell decides: -1 when ``u < p/2``, +1 when
``u >= 1 - p/2``, 0 otherwise. A count of 1 may become 0; no count goes below 0.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cubeguard.errors import InternalError


def barnardise(counts: npt.NDArray[np.int64], u: npt.NDArray[np.float64], p: float) -> npt.NDArray[np.int64]:
    """``counts`` with each non-zero count changed by -1 (``u < p/2``), +1 (``u >= 1 - p/2``) or 0.

    Zeros (and negative counts, which a cube never holds) are returned unchanged; same shape and dtype.

    >>> barnardise(np.array([0, 0, 1, 1, 5, 5]), np.array([0.01, 0.99, 0.04, 0.5, 0.96, 0.94]), 0.1).tolist()
    [0, 0, 0, 1, 6, 5]

    Raises:
        InternalError: the counts are not integers, ``u`` has another shape, or ``p`` is not in
            (0, 1) (the config forbids all three).
    """
    if counts.dtype.kind not in "iu" or counts.shape != u.shape or not 0.0 < p < 1.0:
        raise InternalError(
            f"Barnardisation got {counts.dtype} counts of shape {counts.shape}, uniforms of shape {u.shape} "
            "and a probability outside (0, 1); this is a bug in cubeguard"
        )
    change = (u >= 1.0 - p / 2).astype(counts.dtype) - (u < p / 2).astype(counts.dtype)
    perturbed: npt.NDArray[np.int64] = np.where(counts > 0, counts + change, counts)
    return perturbed

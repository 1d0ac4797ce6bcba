"""Average ranks of many integer counts in (near) linear time.

``scipy.stats.rankdata`` sorts, which dominates the cost of rank statistics on cubes of millions of
cells. Counts are integers with few distinct values, so ranks come from a histogram instead: values
less than ``_DENSE`` above the minimum are counted with ``np.bincount``; the few larger ones (cube
totals) are ranked by ``np.unique`` on that subset only. Ties get the average of the ranks they
span, as in ``rankdata``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import stats

_DENSE = 1 << 16


def _tied_ranks(counts: npt.NDArray[np.int64], offset: int) -> npt.NDArray[np.float64]:
    """Average rank of each value class, given class sizes in increasing value order."""
    upto = np.cumsum(counts, dtype=np.float64) + offset
    return upto - (counts.astype(np.float64) - 1.0) / 2.0


def average_ranks(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """1-based average ranks of a flat array (ties share the mean of their ranks)."""
    a = np.asarray(values).ravel()
    if a.size == 0:
        return np.zeros(0, dtype=np.float64)
    if a.dtype.kind not in "biu":
        return np.asarray(stats.rankdata(a), dtype=np.float64)
    shifted = a.astype(np.int64) - int(a.min())
    clipped = np.minimum(shifted, _DENSE)  # every large value falls in the last bin
    counts = np.bincount(clipped, minlength=_DENSE + 1)
    ranks = _tied_ranks(counts[:_DENSE], 0)[np.minimum(clipped, _DENSE - 1)]
    big = np.flatnonzero(clipped == _DENSE)
    if big.size:
        _, inverse, ucounts = np.unique(shifted[big], return_inverse=True, return_counts=True)
        ranks[big] = _tied_ranks(ucounts, a.size - big.size)[inverse]
    return ranks


def tie_sizes(values: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Sizes of the groups of equal values (for tie corrections)."""
    a = np.asarray(values).ravel()
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a.dtype.kind not in "biu":
        return np.unique(a, return_counts=True)[1].astype(np.int64)
    shifted = a.astype(np.int64) - int(a.min())
    clipped = np.minimum(shifted, _DENSE)
    counts = np.bincount(clipped, minlength=_DENSE + 1)[:_DENSE]
    big = shifted[clipped == _DENSE]
    rest = np.unique(big, return_counts=True)[1]
    return np.concatenate([counts[counts > 0], rest]).astype(np.int64)

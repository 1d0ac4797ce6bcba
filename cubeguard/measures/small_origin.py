"""How sure an intruder can be that a published value hides a small original count.

Enderle, Giessing and Tent (2020) measure the cell key method's risk as ``P(original = i |
published = j)`` for small ``i``, from the p-table and a prior. Here the same question is asked of
a protected cube itself, whatever the method: among the cells published with value ``j``, the share
whose original count is small (1 or 2), and the largest such share over the published values. The
cube's own distribution of original counts is the prior. It is 1 when any small count is
published unchanged and nothing else is published with that value, and it stays meaningful where
the share of small cells published unchanged is 0 by design (the cell key method with ``js = 2``,
rounding), which made the R-U map's risk axis flat for them.

Examples:
    >>> small_origin_risk([1, 0, 2, 5, 3], [3, 0, 3, 5, 3])
    0.6666666666666666
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from cubeguard.measures._arrays import Counts, pair


def small_origin_risk(original: Counts, protected: Counts, small: Iterable[int] = (1, 2)) -> float:
    """The largest share, over published values ``j``, of the cells published as ``j`` whose original is small.

    ``nan`` for a cube without a small original count (as :func:`~cubeguard.measures.risk.small_cells_unchanged`):
    there is nothing to hide, and a summary over cubes should not count it as safe or unsafe.
    """
    o, p = pair(original, protected)
    o, p = o.ravel(), p.ravel()
    is_small = np.isin(o, np.asarray(list(small), dtype=o.dtype)).astype(np.float64)
    if not is_small.any():
        return math.nan
    _, index = np.unique(p, return_inverse=True)
    cells = np.bincount(index)
    smalls = np.bincount(index, weights=is_small)
    return float((smalls / cells).max())

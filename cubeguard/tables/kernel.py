"""The numba kernel that tabulates one flexible table from the key store's columns.

Each dimension of a table (and each filter) is a pair of arrays: the records' dictionary indices
into the column, and a weight per dictionary entry, ``bottom position * stride`` (0 for a
filter's categories). A record's bottom cell is the sum of its weights, one per dimension; the
loop over dimensions is unrolled for each number of dimensions, so a record costs one lookup and
one addition per dimension and no branch. Values no code covers weigh :data:`OUTSIDE`, records a
filter leaves out :data:`FILTERED`: both make the sum negative, and an :data:`OUTSIDE` sum stays
below :data:`BAD_BELOW` whatever else is added (a table has fewer than 2**40 cells, at most 8
filters).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import literal_unroll, njit

OUTSIDE = -(2**50)  # a raw value no code of the breakdown covers (bad input)
FILTERED = -(2**40)  # a record a filter leaves out
BAD_BELOW = -(2**49)


@njit(nogil=True, cache=True)
def tabulate(pairs, mask, keys, counts, key_sums):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Add every record of the population to its bottom cell; return its records with unknown codes.

    A record of the population with a code no breakdown covers is counted as bad whether or not
    the filters keep it (the store itself is then broken).

    ``pairs`` holds (indices, weights) per dimension and filter; ``mask`` (empty: everyone)
    selects the population. Sums of keys wrap modulo 2**64, as the cubes' do. (Means read their
    column's values with :mod:`cubeguard.tables.values`.)
    """
    bad = 0
    use_mask = mask.size > 0
    for r in range(keys.size):
        i = 0
        for pair in literal_unroll(pairs):
            i += pair[1][pair[0][r]]
        if i >= 0:
            if use_mask and mask[r] == 0:
                continue
            counts[i] += 1
            key_sums[i] += keys[r]
        elif i < BAD_BELOW and not (use_mask and mask[r] == 0):
            bad += 1
    return bad


def empty_uint8() -> npt.NDArray[np.uint8]:
    """The 'no mask' argument."""
    return np.empty(0, dtype=np.uint8)

"""The numba kernel that tabulates one flexible table from the key store's columns."""

from __future__ import annotations

import numpy as np
from numba import njit

OUTSIDE = -1  # a raw value no code of the breakdown covers (bad input)
FILTERED = -2  # a record a filter leaves out


@njit(nogil=True, cache=True)
def tabulate(codes, luts, strides, mask, keys, values, counts, key_sums, sums):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Add every record of the population to its bottom cell; return the records with unknown codes.

    ``codes[d]`` holds each record's dictionary index of dimension ``d``'s column, ``luts[d]`` maps
    it to a bottom position (or :data:`OUTSIDE`, :data:`FILTERED`), ``strides[d]`` weighs it (0 for
    a filter). ``mask`` (empty: everyone) selects the population; ``values`` (empty: none) are
    summed into ``sums`` for means. Sums of keys wrap modulo 2**64, as the cubes' do.
    """
    dims = len(codes)
    bad = 0
    use_mask = mask.size > 0
    use_values = values.size > 0
    for r in range(keys.size):
        if use_mask and mask[r] == 0:
            continue
        idx = 0
        for d in range(dims):
            p = luts[d][codes[d][r]]
            if p < 0:
                idx = p
                break
            idx += p * strides[d]
        if idx < 0:
            if idx == OUTSIDE:
                bad += 1
            continue
        counts[idx] += 1
        key_sums[idx] += keys[r]
        if use_values:
            sums[idx] += values[r]
    return bad


def empty_uint8() -> np.ndarray:
    """The 'no mask' argument."""
    return np.empty(0, dtype=np.uint8)

"""Numba kernels for the fused tabulation pass (one pass over a record batch serves every cube).

Record keys arrive as float64 in [0, 1) and are turned into uint64 numerators inside the kernel
(``cubeguard.microdata.keys``): ``key * 2**64`` for binary keys (exact for multiples of 2**-64),
``round(key * 10**d)`` for d-digit decimal keys, without a temporary array. Threads own whole
cubes, so no two threads ever add to the same cell.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

TWO64 = 18446744073709551616.0


@njit(inline="always")
def _fixed(key: float, scale: float, decimal: bool) -> np.uint64:
    if decimal:
        return np.uint64(np.floor(key * scale + 0.5))
    return np.uint64(key * scale)


@njit(inline="always")
def _cell(codes: np.ndarray, cube_dims: np.ndarray, strides: np.ndarray, c: int, r: int) -> int:
    """Flat bottom-cell index of record ``r`` in cube ``c`` (-1 if a code is unknown)."""
    idx = 0
    for d in range(cube_dims.shape[1]):
        b = cube_dims[c, d]
        if b < 0:
            break
        v = codes[b, r]
        if v < 0:
            return -1
        idx += v * strides[c, d]
    return idx


@njit(parallel=True, nogil=True, cache=True)
def scatter_by_cube(
    codes, cube_dims, strides, offsets, cube_pop, masks, keys, scale, decimal, counts, key_sums, bad
) -> None:  # pragma: no cover - compiled
    """Add every record to each cube whose population holds it; threads own whole cubes."""
    for c in prange(cube_dims.shape[0]):
        pop = cube_pop[c]
        for r in range(keys.shape[0]):
            if masks[pop, r]:
                idx = _cell(codes, cube_dims, strides, c, r)
                if idx < 0:
                    bad[c] += 1
                else:
                    counts[offsets[c] + idx] += 1
                    key_sums[offsets[c] + idx] += _fixed(keys[r], scale, decimal)

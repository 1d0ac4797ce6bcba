"""Numba kernels for the fused tabulation pass (one pass over a record batch serves every cube)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, nogil=True, cache=True)
def scatter_cubes(
    codes: np.ndarray,  # (n_breakdowns, n) int32 bottom positions, -1 = not in the classification
    cube_dims: np.ndarray,  # (n_cubes, max_dims) int32 rows of ``codes``, -1 padded
    strides: np.ndarray,  # (n_cubes, max_dims) int64
    offsets: np.ndarray,  # (n_cubes,) int64 start of each cube in the flat accumulators
    cube_pop: np.ndarray,  # (n_cubes,) int32 row of ``masks``
    masks: np.ndarray,  # (n_populations, n) bool
    keys: np.ndarray,  # (n,) uint64 record-key numerators
    counts: np.ndarray,  # flat int64 accumulator
    key_sums: np.ndarray,  # flat uint64 accumulator (wraps modulo 2**64 by design)
    bad: np.ndarray,  # (n_cubes,) int64 records in the population with an unknown code
) -> None:
    """Add every record to the bottom cell of each cube whose population holds it (parallel over cubes)."""
    n = keys.shape[0]
    for c in prange(cube_dims.shape[0]):
        pop = cube_pop[c]
        for r in range(n):
            if not masks[pop, r]:
                continue
            idx = offsets[c]
            ok = True
            for d in range(cube_dims.shape[1]):
                b = cube_dims[c, d]
                if b < 0:
                    break
                v = codes[b, r]
                if v < 0:
                    ok = False
                    break
                idx += v * strides[c, d]
            if ok:
                counts[idx] += 1
                key_sums[idx] += keys[r]
            else:
                bad[c] += 1

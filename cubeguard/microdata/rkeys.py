"""Record keys generated from a secret seed, per record, independent of record order.

A key is a keyed hash of the person id (SplitMix64 finaliser, Steele, Lea and Flood 2014) scaled to
[0, 1) in steps of 2**-53, so the same person gets the same key whatever order or chunking the
records come in (cell key method, Wilak et al. 2024: record keys are fixed once per record).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def keys_from_ids(ids: npt.ArrayLike, seed: int) -> npt.NDArray[np.float64]:
    """Uniform record keys in [0, 1), a deterministic function of (id, seed)."""
    salt = _splitmix64(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    with np.errstate(over="ignore"):
        h = _splitmix64(np.asarray(ids).astype(np.int64).view(np.uint64) ^ salt)
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53

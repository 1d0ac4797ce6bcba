"""Record keys generated from a secret seed, per record, independent of record order.

A key is a keyed hash of the person id (SplitMix64 finaliser, Steele, Lea and Flood 2014) scaled to
[0, 1) in steps of 2**-53, so the same person gets the same key whatever order or chunking the
records come in (cell key method, Wilak et al. 2024: record keys are fixed once per record).
Whole-number ids enter as their 64-bit value; text ids as the 64-bit FNV-1a hash of their UTF-8
bytes (so the id "0042" and the number 42 are different persons).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from cubeguard.errors import CubeguardError

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
        h = _splitmix64(_id_words(np.asarray(ids)) ^ salt)
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _id_words(ids: npt.NDArray[np.generic]) -> npt.NDArray[np.uint64]:
    """Each id as 64 bits: a whole number as it is, a text by the FNV-1a hash of its UTF-8 bytes."""
    if ids.dtype.kind in "iub":
        return ids.astype(np.int64).view(np.uint64)
    if ids.dtype.kind == "f":
        if not np.array_equal(ids, np.floor(ids)):
            raise CubeguardError("input.person_id holds numbers that are not whole; give whole numbers or text ids")
        return ids.astype(np.int64).view(np.uint64)
    if ids.dtype.kind in "OUS":
        if ids.dtype.kind == "O" and any(i is None for i in ids):
            raise CubeguardError("input.person_id has empty ids; give every person an id to generate record keys")
        encoded = np.char.encode(ids.astype(str), "utf-8") if ids.dtype.kind != "S" else ids
        width = max(encoded.dtype.itemsize, 1)
        text = np.ascontiguousarray(encoded, dtype=f"S{width}")
        rows = text.view(np.uint8).reshape(len(text), width)
        return _fnv1a(rows, np.char.str_len(text.astype(np.bytes_)).astype(np.int64))
    raise CubeguardError(f"input.person_id holds {ids.dtype} values; give whole numbers or text ids")


@njit(nogil=True, cache=True)
def _fnv1a(rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    out = np.empty(rows.shape[0], dtype=np.uint64)
    for i in range(rows.shape[0]):
        h = np.uint64(0xCBF29CE484222325)
        for j in range(lengths[i]):
            h = (h ^ np.uint64(rows[i, j])) * np.uint64(0x100000001B3)
        out[i] = h
    return out

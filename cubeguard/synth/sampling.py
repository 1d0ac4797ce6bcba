"""Vectorised sampling helpers shared by the synthetic census modules."""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_AGE = 110


def cumulative(weights: npt.ArrayLike) -> FloatArray:
    """Row-normalised cumulative probabilities of a ``(..., K)`` table of non-negative weights."""
    c: FloatArray = np.cumsum(np.asarray(weights, dtype=np.float64), axis=-1)
    return c / c[..., -1:]


@numba.njit(cache=True, nogil=True)
def _bisect(u: FloatArray, cum: FloatArray) -> IntArray:  # pragma: no cover - compiled
    out = np.empty(u.size, dtype=np.int64)
    last = cum.size - 1
    for i in range(u.size):
        lo, hi = 0, last  # first index with cum[index] > u[i], at most `last`
        while lo < hi:
            mid = (lo + hi) // 2
            if cum[mid] <= u[i]:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out


@numba.njit(cache=True, nogil=True)
def _scan(u: FloatArray, cum: FloatArray, group: IntArray) -> IntArray:  # pragma: no cover - compiled
    out = np.empty(u.size, dtype=np.int64)
    last = cum.shape[1] - 1
    for i in range(u.size):
        row = group[i]
        k = 0
        while k < last and cum[row, k] <= u[i]:
            k += 1
        out[i] = k
    return out


def categorical(rng: np.random.Generator, cum: FloatArray, n: int) -> IntArray:
    """``n`` draws from one categorical distribution given by its cumulative vector ``cum``."""
    return _bisect(rng.random(n), np.ascontiguousarray(cum, dtype=np.float64))


def categorical_by(rng: np.random.Generator, cum: FloatArray, group: npt.NDArray[np.integer]) -> IntArray:
    """One draw per element of ``group`` from the row ``cum[group]`` of a ``(G, K)`` cumulative table."""
    g = np.ascontiguousarray(group, dtype=np.int64)
    return _scan(rng.random(g.size), np.ascontiguousarray(cum, dtype=np.float64), g)


def age_density(anchors: dict[int, float]) -> FloatArray:
    """Probabilities over ages ``0..MAX_AGE`` from a piecewise-linear density through ``anchors``."""
    xs = np.array(sorted(anchors), dtype=np.float64)
    ys = np.array([anchors[int(x)] for x in xs], dtype=np.float64)
    d: FloatArray = np.interp(np.arange(MAX_AGE + 1, dtype=np.float64), xs, ys, left=0.0, right=0.0)
    p: FloatArray = d / d.sum()
    return p


def by_age(anchors: dict[int, float]) -> FloatArray:
    """A value per age ``0..MAX_AGE``, linear between ``anchors`` and flat beyond them."""
    xs = np.array(sorted(anchors), dtype=np.float64)
    ys = np.array([anchors[int(x)] for x in xs], dtype=np.float64)
    return np.interp(np.arange(MAX_AGE + 1, dtype=np.float64), xs, ys)


def rounded_normal(rng: np.random.Generator, mean: float, sd: float, n: int) -> IntArray:
    """Normal draws rounded to integers."""
    return np.rint(rng.normal(mean, sd, size=n)).astype(np.int64)

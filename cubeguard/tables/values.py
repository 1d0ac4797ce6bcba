"""Tabulation of a numeric column for a flexible table's means: what the magnitude perturbation needs.

One pass over the records gives, per bottom cell, the count, the exact record-key sums of all
records and of those with a non-zero value, the sum, the largest and smallest value, and the
``k`` largest contributions by absolute value (ties: the earlier record first). Margins are then
summed (:func:`cubeguard.tables.expand.gather`: counts, key sums and sums, exact since the values
are whole numbers) or merged along each axis (the top ``k`` of a union is among its parts' top
``k``; maxima and minima). The result is :class:`~cubeguard.ckm.magnitude.MagnitudeCells` for
every cell of the table, so a cell has the same inputs, hence the same perturbed sum, in every
table that holds it (Handbook on SDC v2, 5.7; Gießing 2016).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from numba import literal_unroll, njit

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.magnitude import MagnitudeCells
from cubeguard.ckm.magnitude.topk import MAX_TOP
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.tables.expand import gather

Pairs = tuple[tuple[npt.NDArray[np.uint16], npt.NDArray[np.int64]], ...]


@njit(nogil=True, cache=True)
def _tabulate(pairs, mask, keys, values, counts, key_sums, nz_key_sums, sums, high, low, top, rank):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Add every record of the population to its bottom cell (see :func:`cubeguard.tables.kernel.tabulate`)."""
    use_mask = mask.size > 0
    k = top.shape[1]
    for r in range(keys.size):
        i = 0
        for pair in literal_unroll(pairs):
            i += pair[1][pair[0][r]]
        if i < 0 or (use_mask and mask[r] == 0):
            continue
        x = values[r]
        counts[i] += 1
        key_sums[i] += keys[r]
        sums[i] += x
        if x != 0.0:
            nz_key_sums[i] += keys[r]
        high[i] = max(high[i], x)
        low[i] = min(low[i], x)
        _insert(top[i], rank[i], x, r, k)


@njit(nogil=True, cache=True)
def _insert(top, rank, x, r, k):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Put ``x`` (record ``r``) into a cell's list, kept by |x| descending, then rank ascending."""
    j = k
    while j > 0 and (rank[j - 1] < 0 or abs(top[j - 1]) < abs(x) or (abs(top[j - 1]) == abs(x) and rank[j - 1] > r)):
        j -= 1
    if j == k:
        return
    for m in range(k - 1, j, -1):
        top[m] = top[m - 1]
        rank[m] = rank[m - 1]
    top[j] = x
    rank[j] = r


@njit(nogil=True, cache=True)
def _merge_along(top, rank, high, low, lo, hi, out_top, out_rank, out_high, out_low):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Along axis 1 of (outer, n, inner[, k]) arrays: merge positions ``lo[c]..hi[c]-1`` into code ``c``."""
    k = top.shape[3]
    for o in range(top.shape[0]):
        for c in range(lo.size):
            for q in range(top.shape[2]):
                out_high[o, c, q] = -np.inf
                out_low[o, c, q] = np.inf
                for m in range(k):
                    out_rank[o, c, q, m] = -1
                for s in range(lo[c], hi[c]):
                    out_high[o, c, q] = max(out_high[o, c, q], high[o, s, q])
                    out_low[o, c, q] = min(out_low[o, c, q], low[o, s, q])
                    for m in range(k):
                        if rank[o, s, q, m] < 0:
                            break
                        _insert(out_top[o, c, q], out_rank[o, c, q], top[o, s, q, m], rank[o, s, q, m], k)


def tabulate_values(
    pairs: Pairs,
    shape: tuple[int, ...],
    mask: npt.NDArray[np.uint8],
    keys: npt.NDArray[np.uint64],
    values: npt.NDArray[np.float64],
    top_k: int,
) -> dict[str, npt.NDArray[Any]]:
    """Per bottom cell of ``shape``: counts, key sums, non-zero key sums, sums, high, low, top, rank."""
    k = max(top_k, 1)
    out: dict[str, npt.NDArray[Any]] = {
        "counts": np.zeros(shape, dtype=np.int64),
        "key_sums": np.zeros(shape, dtype=np.uint64),
        "nz_key_sums": np.zeros(shape, dtype=np.uint64),
        "sums": np.zeros(shape, dtype=np.float64),
        "high": np.full(shape, -np.inf),
        "low": np.full(shape, np.inf),
        "top": np.full((*shape, k), np.nan),
        "rank": np.full((*shape, k), -1, dtype=np.int64),
    }
    n = math.prod(shape)
    flat = {name: a.reshape(n, *a.shape[len(shape) :]) for name, a in out.items()}
    _tabulate(pairs, mask, keys, values, *(flat[f] for f in ("counts", "key_sums", "nz_key_sums", "sums", "high", "low", "top", "rank")))  # fmt: skip
    return out


def with_margins(bottom: dict[str, npt.NDArray[Any]], bds: list[Breakdown]) -> dict[str, npt.NDArray[Any]]:
    """Every total and subtotal: sums by :func:`gather`, extremes and top lists merged axis by axis."""
    axes = [(d, (bd.lo, bd.hi)) for d, bd in enumerate(bds)]
    out = {name: gather(bottom[name], axes) for name in ("counts", "key_sums", "nz_key_sums", "sums")}
    top, rank, high, low = (bottom[f] for f in ("top", "rank", "high", "low"))
    for d, bd in enumerate(bds):
        shape = high.shape
        outer, inner, k = math.prod(shape[:d]), math.prod(shape[d + 1 :]), top.shape[-1]
        grown = (*shape[:d], bd.lo.size, *shape[d + 1 :])
        new_top, new_rank = np.full((*grown, k), np.nan), np.full((*grown, k), -1, dtype=np.int64)
        new_high, new_low = np.empty(grown), np.empty(grown)
        _merge_along(
            top.reshape(outer, shape[d], inner, k), rank.reshape(outer, shape[d], inner, k),
            high.reshape(outer, shape[d], inner), low.reshape(outer, shape[d], inner), bd.lo, bd.hi,
            new_top.reshape(outer, bd.lo.size, inner, k), new_rank.reshape(outer, bd.lo.size, inner, k),
            new_high.reshape(outer, bd.lo.size, inner), new_low.reshape(outer, bd.lo.size, inner),
        )  # fmt: skip
        top, rank, high, low = new_top, new_rank, new_high, new_low
    return {**out, "top": top, "rank": rank, "high": high, "low": low}


def magnitude_cells(cells: dict[str, npt.NDArray[Any]], scale: KeyScale) -> MagnitudeCells:
    """The perturbation's input for every cell (flattened), from :func:`with_margins`."""
    counts = cells["counts"].reshape(-1)
    sums = cells["sums"].reshape(-1)
    empty = counts == 0
    top = cells["top"].reshape(counts.size, -1)
    padded = np.full((counts.size, MAX_TOP), np.nan)
    padded[:, : top.shape[1]] = top
    with np.errstate(invalid="ignore"):
        means = np.where(empty, 0.0, sums / np.maximum(counts, 1))
        spreads = np.where(empty, 0.0, cells["high"].reshape(-1) - cells["low"].reshape(-1))
    return MagnitudeCells(
        sums=sums,
        counts=counts,
        top=padded,
        n_top=np.minimum(counts, top.shape[1]),
        means=means,
        spreads=spreads,
        keys=scale.cell_keys(cells["key_sums"].reshape(-1)),
        keys_nz=scale.cell_keys(cells["nz_key_sums"].reshape(-1)),
    )

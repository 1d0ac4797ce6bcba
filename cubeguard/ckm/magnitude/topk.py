"""The largest contributions of every cell, for the ``top_contr`` magnitude type.

A cell's contributions are ordered by absolute value, descending; ties keep the order of the
records' ``ranks`` (cellKey: a stable sort of sdcTable's ``rawData``, which is the microdata sorted
by the dimension codes and then by record order; see the golden README, 5.2). Only the first
``k`` (at most 6, cellKey's hard-coded maximum) are kept.

The top ``k`` of a union of records is the top ``k`` of the union of its parts' top ``k`` lists,
so a margin's list is merged from its children's (:func:`merge_top`) instead of reading the
records again: cubeguard tabulates bottom cells and sums the margins.

cellKey 1.0.2 stores fewer contributions than it should (bug Q1): :func:`stored_counts` gives
both the correct count and cellKey's.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cubeguard.ckm.magnitude.params import TopK

MAX_TOP = 6


class TopContributions(NamedTuple):
    """The top contributions of every cell.

    ``values`` (cells, k) by |x| descending, NaN-padded; the contributors' ``ranks`` (-1 where
    padded); ``n`` stored per cell.
    """

    values: npt.NDArray[np.float64]
    ranks: npt.NDArray[np.int64]
    n: npt.NDArray[np.int64]


def top_contributions(
    cells: npt.ArrayLike, values: npt.ArrayLike, ranks: npt.ArrayLike, n_cells: int, k: int = MAX_TOP
) -> TopContributions:
    """The ``k`` largest ``|values|`` of each cell (``cells`` gives each entry's cell, 0-based).

    Entries may be records or the merged lists of children; NaN values are skipped.

    >>> top = top_contributions([0, 0, 1, 0], [3.0, -5.0, 2.0, 3.0], [0, 1, 2, 3], 2, k=2)
    >>> top.values.tolist(), top.n.tolist()
    ([[-5.0, 3.0], [2.0, nan]], [2, 1])
    """
    c = np.asarray(cells, dtype=np.int64)
    x = np.asarray(values, dtype=np.float64)
    r = np.asarray(ranks, dtype=np.int64)
    keep = ~np.isnan(x)
    c, x, r = c[keep], x[keep], r[keep]
    order = np.lexsort((r, -np.abs(x), c))
    c, x, r = c[order], x[order], r[order]
    counts = np.bincount(c, minlength=n_cells)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    position = np.arange(c.size) - starts[c]
    take = position < k
    out = np.full((n_cells, k), np.nan)
    out_ranks = np.full((n_cells, k), -1, dtype=np.int64)
    out[c[take], position[take]] = x[take]
    out_ranks[c[take], position[take]] = r[take]
    return TopContributions(out, out_ranks, np.minimum(counts, k))


def merge_top(parents: npt.ArrayLike, children: TopContributions, n_parents: int) -> TopContributions:
    """Top contributions of each parent cell from those of its children (``parents[c]`` = parent of child c).

    Exact: the top ``k`` of a union is among the top ``k`` lists of its parts, and ranks order ties.
    """
    p = np.asarray(parents, dtype=np.int64)
    k = children.values.shape[1]
    return top_contributions(np.repeat(p, k), children.values.ravel(), children.ranks.ravel(), n_parents, k)


def stored_counts(counts: npt.ArrayLike, mode: TopK = "correct") -> npt.NDArray[np.int64]:
    """How many contributions each cell stores: ``min(6, records)``, or cellKey 1.0.2's number.

    cellKey's ``.get_max_contributions`` overwrites its ``top_k`` with ``min(top_k, records)``
    cell after cell (golden README Q1): the n-th cell in cellKey's cell order stores the running
    minimum of the record counts so far, and 1 value once that minimum is 0 (``x[1:0]`` is element
    1). ``cellkey_1_0_2`` reproduces this and needs the cells in cellKey's order (dimensions nested
    in the order given, each walked parent first). Empty cells store nothing.
    """
    n = np.asarray(counts, dtype=np.int64)
    correct = np.minimum(n, MAX_TOP)
    if mode == "correct":
        return correct
    running = np.minimum.accumulate(np.minimum(n, MAX_TOP)) if n.size else n
    return np.where(n == 0, 0, np.maximum(running, 1))

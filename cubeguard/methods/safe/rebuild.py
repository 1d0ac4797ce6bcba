"""Rebuilding the microdata from the protected elementary table (Höhne 2011, section 2: "the data set").

Every move of the heuristic (``m`` records from elementary cell ``j`` to cell ``k``) is made on real
records: the first ``m`` of ``j``'s records, in a seeded random order, take ``k``'s category values,
copied from one of ``k``'s original records, so each moved record gets raw values that occur in
the data. Records in one elementary cell are alike in every SAFE variable, so which of them moves
changes no controlled cell; the seeded order makes the choice deterministic and unrelated to any
other column. Person ids, household ids, record keys and every other column stay as they were.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd
from numba import njit

IntArray = npt.NDArray[np.int64]


@njit(cache=True, nogil=True)
def _relocate(cell, order, log, n_cells):  # type: ignore[no-untyped-def]
    head = np.full(n_cells, -1, np.int64)
    nxt = np.full(cell.size, -1, np.int64)
    for i in range(order.size - 1, -1, -1):
        r = order[i]
        c = cell[r]
        nxt[r] = head[c]
        head[c] = r
    final = cell.copy()
    for e in range(log.shape[0]):
        j, k, m = log[e, 0], log[e, 1], log[e, 2]
        for _ in range(m):
            r = head[j]
            head[j] = nxt[r]
            nxt[r] = head[k]
            head[k] = r
            final[r] = k
    return final


def relocate(cell: IntArray, log: IntArray, n_cells: int, rng: np.random.Generator) -> IntArray:
    """Each record's elementary cell after the moves in ``log`` (records chosen in a seeded order)."""
    order = rng.permutation(cell.size).astype(np.int64)
    final: IntArray = _relocate(cell, order, log.astype(np.int64), n_cells)
    return final


def rebuilt(frame: pd.DataFrame, columns: tuple[str, ...], cell: IntArray, final: IntArray) -> pd.DataFrame:
    """``frame`` with each moved record's ``columns`` copied from an original record of its new cell."""
    first = np.full(int(cell.max(initial=-1)) + 1, -1, dtype=np.int64)
    first[cell[::-1]] = np.arange(cell.size - 1, -1, -1)
    moved = np.flatnonzero(final != cell)
    donors = first[final[moved]]
    out = frame.copy(deep=False)
    for col in columns:
        values = frame[col].copy()
        if moved.size:
            values.iloc[moved] = frame[col].iloc[donors].to_numpy()
        out[col] = values
    return out

"""Tabulation of a numeric variable for the cell key method for magnitudes.

For every cell (bottom cells and margins alike) cellKey's ``ck_setup`` keeps the record count,
the sum, the mean (over all records, zeros included), the spread (max - min), the parity of the
count, the 6 largest contributions and two cell keys: from all records and from the records with
a non-zero value (golden README 5.1-5.2). Cell keys come from the exact fixed-point record keys of
:mod:`cubeguard.ckm.keys`, so they are identical in every margin and chunk layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.magnitude.topk import MAX_TOP, top_contributions

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class MagnitudeCells:
    """What the perturbation needs of every cell (arrays of one entry per cell).

    Attributes:
        sums: cell sums (cellKey's ``ws``; unweighted).
        counts: records in the cell.
        top: (cells, 6) largest contributions by |x| descending, NaN-padded.
        n_top: contributions in ``top`` (``min(6, counts)``).
        means: ``sums / counts``, 0 for an empty cell (cellKey's ``w_mean``).
        spreads: ``max - min`` of the values, 0 for an empty cell.
        keys: cell keys from all records, in [0, 1).
        keys_nz: cell keys from the records with a non-zero value.
    """

    sums: FloatArray
    counts: IntArray
    top: FloatArray
    n_top: IntArray
    means: FloatArray
    spreads: FloatArray
    keys: FloatArray
    keys_nz: FloatArray


def tabulate_magnitudes(
    memberships: npt.ArrayLike,
    n_cells: int,
    values: npt.ArrayLike,
    record_keys: npt.ArrayLike,
    scale: KeyScale | None = None,
    ranks: npt.ArrayLike | None = None,
) -> MagnitudeCells:
    """Tabulate one numeric variable into every cell its records belong to.

    Args:
        memberships: (records, m) cell index (0-based) of each record in each of ``m`` cells it
            belongs to (its bottom cell and every margin); -1 where it belongs to none.
        n_cells: number of cells.
        values: the variable, one finite value per record.
        record_keys: record keys in [0, 1).
        scale: how record keys are summed exactly (default binary, as R ``runif``).
        ranks: tie order of equal |values| (default record order); cellKey's is the records
            sorted by their dimension codes, then record order.

    Sums are accumulated in float64; they are exact (whatever the order) while the values are
    integers and partial sums stay below 2**53, as in the golden data.
    """
    cells = np.asarray(memberships, dtype=np.int64)
    cells = cells.reshape(cells.shape[0], -1)
    x = np.asarray(values, dtype=np.float64)
    scale = scale or KeyScale()
    fixed = scale.to_fixed(record_keys)
    rank = np.arange(x.size, dtype=np.int64) if ranks is None else np.asarray(ranks, dtype=np.int64)
    record = np.repeat(np.arange(x.size), cells.shape[1])
    flat = cells.ravel()
    record, flat = record[flat >= 0], flat[flat >= 0]
    counts = np.bincount(flat, minlength=n_cells)
    sums = np.bincount(flat, weights=x[record], minlength=n_cells).astype(np.float64)
    high = np.full(n_cells, -np.inf)
    low = np.full(n_cells, np.inf)
    np.maximum.at(high, flat, x[record])
    np.minimum.at(low, flat, x[record])
    key_all = np.zeros(n_cells, dtype=np.uint64)
    key_nz = np.zeros(n_cells, dtype=np.uint64)
    np.add.at(key_all, flat, fixed[record])
    np.add.at(key_nz, flat, np.where(x[record] != 0.0, fixed[record], np.uint64(0)))
    top = top_contributions(flat, x[record], rank[record], n_cells, MAX_TOP)
    empty = counts == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(empty, 0.0, sums / np.maximum(counts, 1))
    return MagnitudeCells(
        sums=sums,
        counts=counts,
        top=top.values,
        n_top=top.n,
        means=means,
        spreads=np.where(empty, 0.0, high - low),
        keys=scale.cell_keys(key_all),
        keys_nz=scale.cell_keys(key_nz),
    )

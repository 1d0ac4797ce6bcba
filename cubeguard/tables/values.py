"""Tabulation of a numeric column for a flexible table's means: what the magnitude perturbation needs.

One pass over the records gives, per bottom cell, what :mod:`cubeguard.cubes.values` accumulates
(count, key sums, sum, extremes, top contributions; ties: the earlier record first); margins are
summed with :func:`cubeguard.tables.expand.gather` and merged with the cubes' kernels, so a cell
has the same inputs, hence the same perturbed sum, in every table and published cube that holds it
(Handbook on SDC v2, 5.7; Gießing 2016).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import literal_unroll, njit

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.values import add_indexed, empty_values, value_margins
from cubeguard.tables.expand import gather

Pairs = tuple[tuple[npt.NDArray[np.uint16], npt.NDArray[np.int64]], ...]


@njit(nogil=True, cache=True)
def _cells(pairs, mask, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Each record's bottom cell, or -1 when the filters or the population leave it out (see :mod:`.kernel`)."""
    use_mask = mask.size > 0
    for r in range(out.size):
        i = 0
        for pair in literal_unroll(pairs):
            i += pair[1][pair[0][r]]
        out[r] = -1 if i < 0 or (use_mask and mask[r] == 0) else i


def tabulate_values(
    pairs: Pairs,
    shape: tuple[int, ...],
    mask: npt.NDArray[np.uint8],
    keys: npt.NDArray[np.uint64],
    values: npt.NDArray[np.float64],
    top_k: int,
) -> dict[str, npt.NDArray[Any]]:
    """Per bottom cell of ``shape``: counts, key sums, non-zero key sums, sums, high, low, top, rank."""
    cells = np.empty(keys.size, dtype=np.int64)
    _cells(pairs, mask, cells)
    out = empty_values(shape, top_k)
    add_indexed(out, cells, values, keys, 0)
    return out


def _gathered(bottom: npt.NDArray[Any], bds: list[Breakdown]) -> npt.NDArray[Any]:
    return gather(bottom, [(d, (bd.lo, bd.hi)) for d, bd in enumerate(bds)])


def with_margins(bottom: dict[str, npt.NDArray[Any]], bds: list[Breakdown]) -> dict[str, npt.NDArray[Any]]:
    """Every total and subtotal: sums by :func:`gather` (in the calling thread), extremes and top lists merged."""
    return value_margins(bottom, bds, _gathered)

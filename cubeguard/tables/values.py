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
from cubeguard.cubes.values import add_record, empty_values, flat, value_margins
from cubeguard.tables.expand import gather

Pairs = tuple[tuple[npt.NDArray[np.uint16], npt.NDArray[np.int64]], ...]


@njit(nogil=True, cache=True)
def _tabulate(pairs, mask, keys, values, counts, key_sums, nz_key_sums, sums, high, low, top, rank):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Add every record of the population to its bottom cell (see :func:`cubeguard.tables.kernel.tabulate`)."""
    use_mask = mask.size > 0
    for r in range(keys.size):
        i = 0
        for pair in literal_unroll(pairs):
            i += pair[1][pair[0][r]]
        if i < 0 or (use_mask and mask[r] == 0):
            continue
        add_record(i, values[r], keys[r], r, counts, key_sums, nz_key_sums, sums, high, low, top, rank)


def tabulate_values(
    pairs: Pairs,
    shape: tuple[int, ...],
    mask: npt.NDArray[np.uint8],
    keys: npt.NDArray[np.uint64],
    values: npt.NDArray[np.float64],
    top_k: int,
) -> dict[str, npt.NDArray[Any]]:
    """Per bottom cell of ``shape``: counts, key sums, non-zero key sums, sums, high, low, top, rank."""
    out = empty_values(shape, top_k)
    _tabulate(pairs, mask, keys, values, *flat(out))
    return out


def _gathered(bottom: npt.NDArray[Any], bds: list[Breakdown]) -> npt.NDArray[Any]:
    return gather(bottom, [(d, (bd.lo, bd.hi)) for d, bd in enumerate(bds)])


def with_margins(bottom: dict[str, npt.NDArray[Any]], bds: list[Breakdown]) -> dict[str, npt.NDArray[Any]]:
    """Every total and subtotal: sums by :func:`gather` (in the calling thread), extremes and top lists merged."""
    return value_margins(bottom, bds, _gathered)

"""Totals and subtotals from the finest cells, exactly, along each hierarchical dimension."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cubeguard.cubes.hierarchy import Breakdown


def expand_axis(bottom: npt.NDArray[np.generic], axis: int, breakdown: Breakdown) -> npt.NDArray[np.generic]:
    """Replace ``axis`` (bottom codes) by every code of ``breakdown`` (totals, subtotals, bottom).

    Each code covers a contiguous bottom range [lo, hi), so its value is a difference of prefix sums.
    Integer arithmetic keeps this exact; uint64 key sums wrap modulo 2**64 consistently.
    """
    moved = np.moveaxis(bottom, axis, 0)
    prefix = np.zeros((moved.shape[0] + 1, *moved.shape[1:]), dtype=moved.dtype)
    np.cumsum(moved, axis=0, out=prefix[1:])
    out = prefix[breakdown.hi] - prefix[breakdown.lo]
    return np.moveaxis(out, 0, axis)


def expand_all(bottom: npt.NDArray[np.generic], breakdowns: list[Breakdown]) -> npt.NDArray[np.generic]:
    """All margins of a bottom-cell array, one axis after the other."""
    out = bottom
    for axis, bd in enumerate(breakdowns):
        out = expand_axis(out, axis, bd)
    return out

"""Shared by the methods' published bounds (:data:`cubeguard.methods.base.BoundsFunction`).

What an intruder who knows a method and all its parameters learns of each original count from the
published one: an interval ``[lo, hi]`` per cell, never narrower than the method allows (a bound
that excluded the true count would be a false certainty) and as narrow as its rule gives. Originals
are counts, so ``lo`` is never below 0. Methods that publish their margins as sums of the changed
interior bound only the interior; the margins get ``[0, inf)`` and are bounded by additivity.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.cubes.tree import hierarchies

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
Bounds = tuple[FloatArray, FloatArray]


def interior_mask(cube: xr.Dataset | xr.DataArray) -> BoolArray:
    """Whether each cell of ``cube`` has a leaf code on every dimension (the ``interior`` of a bounds function).

    The same cells as :func:`cubeguard.methods.cells.leaf_index`: those the interior-changing
    methods change; every other cell is a total or subtotal on some axis.
    """
    found = hierarchies(cube)
    dims = [str(d) for d in (cube["count"] if isinstance(cube, xr.Dataset) else cube).dims]
    mask = np.ones((), dtype=bool)
    for axis, dim in enumerate(dims):
        shape = [1] * len(dims)
        shape[axis] = -1
        mask = mask & found[dim].is_leaf.reshape(shape)
    out: BoolArray = np.broadcast_to(mask, tuple(len(found[d].codes) for d in dims)).copy()
    return out


def exact(published: IntArray) -> Bounds:
    """Every original equals its published count."""
    values = np.asarray(published, dtype=np.float64)
    return values.copy(), values.copy()


def unbounded(published: IntArray) -> Bounds:
    """Nothing learnt: ``[0, inf)`` for every cell."""
    shape = np.shape(published)
    return np.zeros(shape), np.full(shape, np.inf)


def offsets(published: IntArray, below: int, above: int) -> Bounds:
    """``[published - below, published + above]``, never below 0."""
    values = np.asarray(published, dtype=np.float64)
    return np.maximum(values - below, 0.0), values + above


def open_margins(bounds: Bounds, interior: BoolArray) -> Bounds:
    """``bounds`` with every cell outside ``interior`` widened to ``[0, inf)`` (margins summed from the interior)."""
    lo, hi = bounds
    return np.where(interior, lo, 0.0), np.where(interior, hi, np.inf)


def by_value(published: IntArray, lo_of: FloatArray, hi_of: FloatArray, beyond: tuple[int, int]) -> Bounds:
    """Bounds read from tables indexed by the published count, with a fixed offset past their end.

    ``lo_of[j], hi_of[j]`` bound the originals of a published ``j < lo_of.size`` (``nan``: ``j`` is
    never published, so nothing is learnt: ``[0, inf)``); a larger ``j`` comes from
    ``[j - beyond[0], j + beyond[1]]``.
    """
    values = np.asarray(published, dtype=np.int64)
    inside = values < lo_of.size
    at = np.where(inside, values, 0)
    lo = np.where(inside, lo_of[at], values - beyond[0]).astype(np.float64)
    hi = np.where(inside, hi_of[at], values + beyond[1]).astype(np.float64)
    never = np.isnan(lo)
    return np.where(never, 0.0, np.maximum(lo, 0.0)), np.where(never, np.inf, hi)

"""Cells of a cube: the interior, a margin, or the whole cube with its totals.

A cube follows the cube convention of :mod:`cubeguard.cubes.tree`: one dimension per breakdown,
with every code (total and subtotals included) and the ``f"{dim}.parent"`` and ``f"{dim}.depth"``
coordinates from which :func:`~cubeguard.cubes.tree.hierarchies` reads each dimension's code tree.
Over those trees:

* *interior* cells have a leaf code on every dimension (the finest cells);
* the *margin* over dimensions ``S`` has leaf codes on the dimensions in ``S`` and the total on
  every other dimension (the sub-table of ``S``);
* the *table dimension* of a cell is the number of dimensions on which it is not at the total, so
  the cell belongs to a table of that many variables (Höhne 2011, Table 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.cubes.tree import DimHierarchy, IntArray, hierarchies
from cubeguard.measures.errors import MeasureConfigError

Scope: TypeAlias = "Literal['cube', 'interior'] | tuple[str, ...]"
CubeT = TypeVar("CubeT", xr.Dataset, xr.DataArray)


def check_dims(cube: xr.Dataset | xr.DataArray, dims: Sequence[str], what: str) -> None:
    """Raise :class:`MeasureConfigError` if some of ``dims`` are not dimensions of the cube."""
    known = [str(d) for d in cube.dims]
    unknown = [d for d in dims if d not in known]
    if unknown:
        raise MeasureConfigError(f"{what}: unknown dimension(s) {unknown}; known: {', '.join(known)}")


def scope_positions(
    hier: dict[str, DimHierarchy], dims: Sequence[str], scope: Scope
) -> dict[str, int | IntArray | None]:
    """Per dimension: the total's position (dimension dropped), leaf positions, or None (all codes)."""
    if scope == "cube":
        return {d: None for d in dims}
    if scope == "interior":
        return {d: hier[d].leaves for d in dims}
    keep = set(scope)
    return {d: (hier[d].leaves if d in keep else hier[d].root) for d in dims}


def take(values: npt.NDArray[np.generic], positions: Sequence[int | IntArray | None]) -> npt.NDArray[np.generic]:
    """Cells of ``values`` at ``positions`` (as from :func:`scope_positions`, in axis order)."""
    basic = tuple(p if isinstance(p, int) else slice(None) for p in positions)
    out = values[basic]
    arrays = [p for p in positions if not isinstance(p, int)]
    sizes = out.shape
    fancy = [
        slice(None) if p is None or (p.size == n and np.array_equal(p, np.arange(n))) else p
        for p, n in zip(arrays, sizes, strict=True)
    ]
    if all(isinstance(f, slice) for f in fancy):
        return out
    grids = np.ix_(*[np.arange(n) if isinstance(f, slice) else f for f, n in zip(fancy, sizes, strict=True)])
    picked: npt.NDArray[np.generic] = out[grids]
    return picked


def select(cube: CubeT, scope: Scope) -> CubeT:
    """The cells of ``cube`` in ``scope``: ``"cube"`` (all), ``"interior"``, or a margin's dimensions.

    A margin keeps the cube's dimension order; the other dimensions are dropped (kept as scalar
    coordinates holding the total's code).
    """
    if scope == "cube":
        return cube
    dims = [str(d) for d in cube.dims]
    if scope != "interior":
        check_dims(cube, scope, "margin")
    hier = hierarchies(cube)
    return cube.isel(scope_positions(hier, dims, scope))


def interior(cube: CubeT) -> CubeT:
    """The interior cells: a leaf code on every dimension."""
    return select(cube, "interior")


def margin(cube: CubeT, dims: Sequence[str]) -> CubeT:
    """The margin (sub-table) over ``dims``: leaf codes on ``dims``, the total elsewhere."""
    return select(cube, tuple(dims))


def scope_label(scope: Scope) -> str:
    """A short name for a scope: ``cube``, ``interior`` or the margin's dimensions joined by ``*``."""
    return scope if isinstance(scope, str) else "*".join(scope)


def table_dimension(cube: xr.Dataset | xr.DataArray) -> xr.DataArray:
    """For every cell, the number of dimensions on which it is not at the total."""
    hier = hierarchies(cube)
    total = xr.DataArray(0)
    for d, h in hier.items():
        total = total + xr.DataArray((h.parent >= 0).astype(np.int64), dims=(d,))
    return total.broadcast_like(cube).transpose(*cube.dims).astype(np.int64)

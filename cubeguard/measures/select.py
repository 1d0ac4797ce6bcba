"""Cells of a cube: the interior, a margin, or the whole cube with its totals.

The cube convention: one dimension per breakdown, whose index coordinate
holds every code of the breakdown, total and subtotals included; along each dimension the
coordinates ``f"{dim}.parent"`` (parent code, ``""`` for the total) and ``f"{dim}.depth"`` (0 for
the total). A code is a *leaf* when no other code of its dimension names it as parent.

* *interior* cells have a leaf code on every dimension (the finest cells);
* the *margin* over dimensions ``S`` has leaf codes on the dimensions in ``S`` and the total on
  every other dimension (the sub-table of ``S``);
* the *table dimension* of a cell is the number of dimensions on which it is not at the total, so
  the cell belongs to a table of that many variables (Höhne 2011, Table 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.errors import InternalError
from cubeguard.measures.errors import InvalidCubeError, MeasureConfigError

IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
Scope: TypeAlias = "Literal['cube', 'interior'] | tuple[str, ...]"
CubeT = TypeVar("CubeT", xr.Dataset, xr.DataArray)


@dataclass(frozen=True)
class DimHierarchy:
    """The code tree of one cube dimension, as positions along that dimension.

    Attributes:
        dim: dimension name.
        codes: the codes in coordinate order.
        parent: position of each code's parent, -1 for the total.
        depth: depth of each code, 0 for the total.
    """

    dim: str
    codes: tuple[str, ...]
    parent: IntArray
    depth: IntArray

    @property
    def root(self) -> int:
        """Position of the total."""
        return int(np.flatnonzero(self.parent < 0)[0])

    @property
    def n_children(self) -> IntArray:
        """Number of children of each code."""
        has = self.parent[self.parent >= 0]
        return np.bincount(has, minlength=len(self.codes)).astype(np.int64)

    @property
    def is_leaf(self) -> BoolArray:
        """Whether each code has no children."""
        leaf: BoolArray = self.n_children == 0
        return leaf

    @property
    def leaves(self) -> IntArray:
        """Positions of the leaf codes, in coordinate order."""
        return np.flatnonzero(self.is_leaf).astype(np.int64)

    @cached_property
    def leaf_ranges(self) -> tuple[IntArray, IntArray]:
        """Per code, the run ``[lo, hi)`` of :attr:`leaves` below it (numbered 0, 1, ... among the leaves).

        A cube lists its codes in pre-order (:mod:`cubeguard.cubes.hierarchy`), so the leaves below
        a code are consecutive leaves and a margin is a sum over a range
        (:func:`cubeguard.cubes.margins.expand_ranges`). A leaf's range is itself.

        Raises:
            InternalError: the leaves below some code are not consecutive (the codes are not in pre-order).
        """
        n_leaves = self.leaves.size
        lo = np.full(len(self.codes), n_leaves, dtype=np.int64)
        hi = np.zeros(len(self.codes), dtype=np.int64)
        below = np.zeros(len(self.codes), dtype=np.int64)
        node, rank = self.leaves, np.arange(n_leaves, dtype=np.int64)
        for _ in range(len(self.codes)):  # climb every leaf to the total, one level a pass
            np.minimum.at(lo, node, rank)
            np.maximum.at(hi, node, rank + 1)
            np.add.at(below, node, 1)
            up = self.parent[node]
            node, rank = up[up >= 0], rank[up >= 0]
            if node.size == 0:
                break
        broken = np.flatnonzero(hi - lo != below)
        if broken.size:
            code = self.codes[int(broken[0])]
            raise InternalError(
                f"dimension {self.dim!r} is not in pre-order: the leaves below {code!r} are not consecutive "
                f"({broken.size} code(s) so); this is a bug in cubeguard"
            )
        lo.flags.writeable = hi.flags.writeable = False  # cached: shared by every caller
        return lo, hi


def hierarchies(cube: xr.Dataset | xr.DataArray) -> dict[str, DimHierarchy]:
    """The hierarchy of every dimension; raise one :class:`InvalidCubeError` listing all problems."""
    out: dict[str, DimHierarchy] = {}
    problems: list[str] = []
    for dim in cube.dims:
        h = _hierarchy(cube, str(dim), problems)
        if h is not None:
            out[str(dim)] = h
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise InvalidCubeError(f"the cube does not follow the cube convention: {shown}")
    return out


def _hierarchy(cube: xr.Dataset | xr.DataArray, dim: str, problems: list[str]) -> DimHierarchy | None:
    missing = [c for c in (dim, f"{dim}.parent", f"{dim}.depth") if c not in cube.coords]
    if missing:
        problems.append(f"dimension {dim!r} lacks coordinate(s) {', '.join(map(repr, missing))}")
        return None
    codes = tuple(str(c) for c in cube.coords[dim].values)
    parents = [str(p) for p in cube.coords[f"{dim}.parent"].values]
    depth = np.asarray(cube.coords[f"{dim}.depth"].values).astype(np.int64)
    where = {c: i for i, c in enumerate(codes)}
    if len(where) != len(codes):
        problems.append(f"dimension {dim!r} lists a code twice")
        return None
    unknown = sorted({p for p in parents if p and p not in where})
    if unknown:
        problems.append(f"dimension {dim!r} has parent codes that are not codes of it: {unknown[:3]}")
        return None
    parent = np.array([where[p] if p else -1 for p in parents], dtype=np.int64)
    roots = np.flatnonzero(parent < 0)
    if roots.size != 1 or depth[roots[0]] != 0:
        problems.append(f"dimension {dim!r} needs exactly one total (parent '' and depth 0), found {roots.size}")
        return None
    if not np.array_equal(depth[parent >= 0], depth[parent[parent >= 0]] + 1):
        problems.append(f"dimension {dim!r} has a depth that is not its parent's depth plus one")
        return None
    return DimHierarchy(dim=dim, codes=codes, parent=parent, depth=depth)


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

"""The code tree of a cube's dimension, read from the cube's coordinates.

The cube convention: one dimension per breakdown, whose index coordinate holds every code of the
breakdown, total and subtotals included, in pre-order (:mod:`cubeguard.cubes.hierarchy`); along each
dimension the coordinates ``f"{dim}.parent"`` (parent code, ``""`` for the total) and
``f"{dim}.depth"`` (0 for the total). A code is a *leaf* when no other code of its dimension names it
as parent.

:class:`DimHierarchy` is the one tree type of cubeguard: :func:`hierarchies` parses it from a cube
(what a method, gate or measure holds), and :attr:`cubeguard.cubes.hierarchy.Breakdown.tree` builds
the same value from a breakdown (what tabulation, tables and SAFE hold), so both sides of a release
agree on one tree. Cell selections over it (interior, margins) are in :mod:`cubeguard.measures.select`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TypeAlias

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.errors import CubeguardError, InternalError

IntArray: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

#: Problems named in an :class:`InvalidCubeError` message; the rest are counted.
SHOWN_PROBLEMS = 5


class InvalidCubeError(CubeguardError):
    """A cube lacks what the cube convention requires (hierarchy coordinates, one total)."""


@dataclass(frozen=True, eq=False)
class DimHierarchy:
    """The code tree of one cube dimension, as positions along that dimension.

    Two trees are equal when they have the same dimension, codes, parents and depths.

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

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DimHierarchy):
            return NotImplemented
        return (
            self.dim == other.dim
            and self.codes == other.codes
            and np.array_equal(self.parent, other.parent)
            and np.array_equal(self.depth, other.depth)
        )

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
        more = len(problems) - SHOWN_PROBLEMS
        shown = "; ".join(problems[:SHOWN_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
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

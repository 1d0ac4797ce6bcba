"""Shared by the methods that change a cube's inner cells and publish its margins as their sums.

Random and semi-controlled rounding, small cell adjustment and Barnardisation change the interior
(the cells with a leaf code on every dimension, :mod:`cubeguard.measures.select`) and then publish
every total and subtotal as the sum of the changed interior, so the published cube is additive.
They also need one uniform number per cell: the cell key (the record keys' sum mod 1, the same
for the same records in every cube, so a cell shared by several cubes changes the same way in all
of them; Shlomo and Young 2008, as in Shlomo 2009, 3.2.1) or a seeded stream.

The margins are summed by the tabulation's kernel (:mod:`cubeguard.cubes.margins`): a cube lists
its codes in pre-order, so the leaves below each code are a range of the interior
(:attr:`~cubeguard.cubes.tree.DimHierarchy.leaf_ranges`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import xarray as xr

from cubeguard.ckm.perturb import cell_keys
from cubeguard.cubes.margins import expand_ranges, sum_ranges
from cubeguard.cubes.tree import DimHierarchy, hierarchies
from cubeguard.errors import InternalError
from cubeguard.methods.context import CheckContext, Problem

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
_Cell = TypeVar("_Cell", bound=np.generic)
_Real = TypeVar("_Real", np.int64, np.float64)


def leaf_index(cube: xr.Dataset, found: dict[str, DimHierarchy] | None = None) -> tuple[IntArray, ...]:
    """Positions of the leaf codes along each dimension, in dimension order (for ``np.ix_``)."""
    found = found or hierarchies(cube)
    return tuple(found[str(d)].leaves for d in cube["count"].dims)


def interior(values: npt.NDArray[_Cell], index: tuple[IntArray, ...]) -> npt.NDArray[_Cell]:
    """The interior cells of a full-cube array (a copy, leaf codes on every axis)."""
    return values[np.ix_(*index)]


def summed(cube: xr.Dataset, inner: IntArray, found: dict[str, DimHierarchy] | None = None) -> IntArray:
    """The whole cube (totals and subtotals included) as exact sums of ``inner``, its interior cells.

    ``found`` is the cube's :func:`~cubeguard.cubes.tree.hierarchies`, when the caller has them.
    """
    return sum_up(np.asarray(inner, dtype=np.int64), _along(cube, found))


def summed_real(cube: xr.Dataset, inner: FloatArray, found: dict[str, DimHierarchy] | None = None) -> FloatArray:
    """As :func:`summed`, for real-valued interior cells (e.g. fitted by IPF), each margin summed directly."""
    return sum_up(np.asarray(inner, dtype=np.float64), _along(cube, found))


def _along(cube: xr.Dataset, found: dict[str, DimHierarchy] | None) -> list[DimHierarchy]:
    """The hierarchy of each dimension of ``count``, in axis order."""
    found = found or hierarchies(cube)
    return [found[str(d)] for d in cube["count"].dims]


def sum_up(inner: npt.NDArray[_Real], hier: Sequence[DimHierarchy]) -> npt.NDArray[_Real]:
    """Every cell (totals and subtotals) from the interior ``inner``: each code the sum of the leaves below it.

    One axis after the other, each code summing its :attr:`~cubeguard.cubes.tree.DimHierarchy.leaf_ranges`:
    integers as differences of prefix sums (exact, :func:`~cubeguard.cubes.margins.expand_ranges`),
    floats directly (:func:`~cubeguard.cubes.margins.sum_ranges`: a difference of prefix sums
    is not the direct sum to the bit, and the published floats must not change).
    """
    leaves = tuple(h.leaves.size for h in hier)
    if inner.shape != leaves:
        raise InternalError(f"interior of shape {inner.shape} for leaves {leaves}; this is a bug in cubeguard")
    kernel = sum_ranges if np.issubdtype(inner.dtype, np.floating) else expand_ranges
    out = inner
    for axis, h in enumerate(hier):
        out = kernel(out, axis, *h.leaf_ranges)
    return np.ascontiguousarray(out)


def uniforms(cube: xr.Dataset, seed: int | None) -> FloatArray:
    """One number in [0, 1) per cell: its cell key, or with ``seed`` a draw from a seeded stream.

    Cell keys come from the exact record-key sums, so they need a cube tabulated with keys; a
    seeded stream gives the same numbers for the same seed and cube shape, but two cubes sharing
    a cell draw different numbers for it.
    """
    if seed is None:
        return np.asarray(cell_keys(cube).values, dtype=np.float64)
    return np.random.default_rng(seed).random(cube["count"].shape)


def publish_interior(cube: xr.Dataset, inner: IntArray) -> xr.Dataset:
    """The cube with its interior set to ``inner`` and every margin summed from it (see :func:`publish`)."""
    return publish(cube, summed(cube, inner))


def publish(cube: xr.Dataset, full: IntArray) -> xr.Dataset:
    """The cube with ``count`` set to ``full`` (every cell) and ``noise`` kept as published minus original.

    An earlier step's noise is added to, so stacked steps keep ``noise`` the change from the tabulated count.
    """
    count = cube["count"]
    published = count.copy(data=np.asarray(full).astype(count.dtype))
    change = published - count
    noise = cube["noise"] + change if "noise" in cube else change
    return cube.assign(count=published, noise=noise)


def change_interior(
    cube: xr.Dataset, seed: int | None, change: Callable[[IntArray, FloatArray], IntArray]
) -> xr.Dataset:
    """The cube with its interior replaced by ``change(interior counts, their draws)`` and every margin summed.

    The draws are :func:`uniforms` (cell keys, or a seeded stream with ``seed``); ``count``
    becomes the published count and ``noise`` published minus original (added to earlier noise).
    """
    found = hierarchies(cube)
    index = leaf_index(cube, found)
    inner = np.asarray(interior(np.asarray(cube["count"].values), index), dtype=np.int64)
    return publish(cube, summed(cube, change(inner, interior(uniforms(cube, seed), index)), found))


def last_step_problems(ctx: CheckContext, kept: str) -> list[Problem]:
    """A problem when a later post-tabular step protects a cube this step protects: it would undo what ``kept`` says.

    ``kept`` completes "so its counts would no longer ...", e.g. "all be multiples of 3".
    """
    later = ctx.sharing(later=True)
    if not later:
        return []
    k, other, both = later[0]
    return [
        (
            ("cubes",),
            f"cube {both[0]!r} (and {len(both) - 1} more) is protected again by steps[{k}] ({other.name}) "
            f"after this step, so its counts would no longer {kept}; make this step the last of each cube "
            "it protects, or restrict 'cubes'",
        )
    ]


def control_groups(
    cube: xr.Dataset,
    control: list[str],
    depth: int,
    index: tuple[IntArray, ...],
    found: dict[str, DimHierarchy] | None = None,
) -> tuple[IntArray, IntArray]:
    """The control group of each interior cell and, per group, the flat position of its total cell.

    The groups are the codes at ``depth`` along the first dimension of ``control`` the cube has
    (a leaf above that depth is a group of its own); without one, the whole cube is one group.
    """
    dims = [str(d) for d in cube["count"].dims]
    shape = cube["count"].shape
    found = found or hierarchies(cube)
    roots = [found[d].root for d in dims]
    along = next((d for d in control if d in dims), None)
    if along is None:
        return np.zeros(tuple(i.size for i in index), dtype=np.int64), np.array(
            [np.ravel_multi_index(tuple(roots), shape)], dtype=np.int64
        )
    axis = dims.index(along)
    h = found[along]
    ancestor = np.arange(len(h.codes))
    for _ in range(int(h.depth.max())):  # climb every code to ``depth`` (codes above it stay)
        ancestor = np.where(h.depth[ancestor] > depth, h.parent[ancestor], ancestor)
    codes, leaf_group = np.unique(ancestor[index[axis]], return_inverse=True)
    at = [np.full(codes.size, r, dtype=np.int64) for r in roots]
    at[axis] = codes
    totals = np.ravel_multi_index(tuple(at), shape).astype(np.int64)
    sizes = [i.size for i in index]
    group = np.broadcast_to(leaf_group.reshape([-1 if k == axis else 1 for k in range(len(dims))]), sizes).astype(
        np.int64
    )
    return group, totals


def held_sets(hold: Sequence[Sequence[str]], dims: Sequence[str]) -> list[tuple[str, ...]]:
    """The margin tables a cube with ``dims`` publishes first under ``hold``: non-empty subsets of each group's breakdowns it has, smallest first.

    >>> held_sets([["GEO", "SEX"]], ["SEX", "AGE", "GEO"])
    [('GEO',), ('SEX',), ('GEO', 'SEX')]
    """
    found = {
        tuple(sorted(sub))
        for group in hold
        for r in range(1, len(group) + 1)
        for sub in itertools.combinations(sorted(set(group) & set(dims)), r)
    }
    return sorted(found, key=lambda s: (len(s), s))

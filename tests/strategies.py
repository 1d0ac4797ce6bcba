"""Hypothesis strategies for small random cubes that follow the cube convention.

A cube (see cubeguard.measures.select) is an ``xarray.Dataset`` with one dimension per breakdown
whose index coordinate holds every code (total and subtotals included, in pre-order), with
``f"{dim}.parent"`` and ``f"{dim}.depth"`` coordinates, and data variables ``count`` (int64) and
``key_sum`` (uint64). :func:`cubes` draws random hierarchies and random interior counts and sums
them up every hierarchy, so all margins are consistent; :func:`cube_pairs` adds a protected cube
whose every cell got independent small noise (like a post-tabular method, hence not additive).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from hypothesis import strategies as st

DIM_NAMES = ("GEO.M", "SEX", "AGE.L", "EDU.H")


@dataclass(frozen=True)
class Tree:
    """A code hierarchy in pre-order: codes, parent positions (-1 for the total) and depths."""

    codes: tuple[str, ...]
    parent: tuple[int, ...]
    depth: tuple[int, ...]

    @property
    def leaves(self) -> list[int]:
        """Positions of codes without children."""
        has_child = {p for p in self.parent if p >= 0}
        return [i for i in range(len(self.codes)) if i not in has_child]

    def aggregation(self) -> np.ndarray:
        """Matrix ``A[code, leaf] = 1`` when the leaf lies under (or is) the code."""
        leaves = self.leaves
        a = np.zeros((len(self.codes), len(leaves)), dtype=np.int64)
        for j, leaf in enumerate(leaves):
            node = leaf
            while node >= 0:
                a[node, j] = 1
                node = self.parent[node]
        return a


@st.composite
def trees(draw: st.DrawFn, prefix: str = "C", max_children: int = 3, max_depth: int = 2) -> Tree:
    """A random hierarchy: a total with 1..max_children children, recursively, up to max_depth."""
    codes, parent, depth = [f"{prefix}_T"], [-1], [0]

    def grow(node: int, level: int) -> None:
        lo = 1 if level == 0 else 0
        n = draw(st.integers(lo, max_children)) if level < max_depth else 0
        for _ in range(n):
            codes.append(f"{prefix}{len(codes)}")
            parent.append(node)
            depth.append(level + 1)
            grow(len(codes) - 1, level + 1)

    grow(0, 0)
    return Tree(tuple(codes), tuple(parent), tuple(depth))


def build_cube(dims: dict[str, Tree], leaf_counts: np.ndarray, leaf_keys: np.ndarray | None = None) -> xr.Dataset:
    """A cube from interior (leaf) counts, summed up every hierarchy."""
    count = leaf_counts.astype(np.int64)
    keys = (leaf_keys if leaf_keys is not None else np.zeros(leaf_counts.shape)).astype(np.uint64)
    for axis, tree in enumerate(dims.values()):
        agg = tree.aggregation()
        count = np.moveaxis(np.tensordot(agg, count, axes=(1, axis)), 0, axis)
        keys = np.moveaxis(np.tensordot(agg.astype(np.uint64), keys, axes=(1, axis)), 0, axis)
    coords: dict[str, tuple[str, np.ndarray]] = {}
    for name, tree in dims.items():
        coords[name] = (name, np.array(tree.codes, dtype=object))
        coords[f"{name}.parent"] = (
            name,
            np.array([tree.codes[p] if p >= 0 else "" for p in tree.parent], dtype=object),
        )
        coords[f"{name}.depth"] = (name, np.array(tree.depth, dtype=np.int64))
    names = list(dims)
    return xr.Dataset(
        {"count": (names, count.astype(np.int64)), "key_sum": (names, keys.astype(np.uint64))}, coords=coords
    )


@st.composite
def cubes(draw: st.DrawFn, max_dims: int = 3, max_count: int = 12) -> xr.Dataset:
    """A small random cube with random hierarchies and consistent margins (about half the cells 0)."""
    n_dims = draw(st.integers(1, max_dims))
    dims = {name: draw(trees(prefix=name.split(".")[0][:1] + str(k))) for k, name in enumerate(DIM_NAMES[:n_dims])}
    shape = tuple(len(t.leaves) for t in dims.values())
    size = int(np.prod(shape))
    values = draw(
        st.lists(
            st.one_of(st.just(0), st.integers(0, max_count)),
            min_size=size,
            max_size=size,
        )
    )
    keys = draw(st.lists(st.integers(0, 2**64 - 1), min_size=size, max_size=size))
    return build_cube(
        dims, np.array(values, dtype=np.int64).reshape(shape), np.array(keys, dtype=np.uint64).reshape(shape)
    )


@st.composite
def cube_pairs(draw: st.DrawFn, max_noise: int = 3, **kwargs: object) -> tuple[xr.Dataset, xr.Dataset]:
    """An original cube and a protected copy: independent noise in ``[-max_noise, max_noise]`` per cell, kept >= 0."""
    original = draw(cubes(**kwargs))  # type: ignore[arg-type]
    size = original["count"].size
    noise = np.array(draw(st.lists(st.integers(-max_noise, max_noise), min_size=size, max_size=size)), dtype=np.int64)
    protected = original.copy(deep=True)
    protected["count"].values = np.maximum(original["count"].values + noise.reshape(original["count"].shape), 0)
    return original, protected


def flat_tree(total: str, *children: str) -> Tree:
    """A one-level hierarchy: ``total`` with ``children`` (for hand-made test cubes)."""
    codes = (total, *children)
    return Tree(codes, (-1,) + (0,) * len(children), (0,) + (1,) * len(children))


def two_level_tree(prefix: str, groups: int, per_group: int) -> Tree:
    """A total, ``groups`` subtotals and ``per_group`` leaves under each, in pre-order."""
    codes, parent, depth = [f"{prefix}_T"], [-1], [0]
    for g in range(groups):
        codes.append(f"{prefix}{g}")
        parent.append(0)
        depth.append(1)
        top = len(codes) - 1
        codes += [f"{prefix}{g}_{k}" for k in range(per_group)]
        parent += [top] * per_group
        depth += [2] * per_group
    return Tree(tuple(codes), tuple(parent), tuple(depth))


def override(cube: xr.Dataset, counts: np.ndarray) -> xr.Dataset:
    """A copy of ``cube`` whose ``count`` (every cell, totals included) is ``counts``."""
    out = cube.copy(deep=True)
    out["count"].values = np.asarray(counts, dtype=np.int64)
    return out

"""Hand-built cubes for tests and benchmarks: code hierarchies and cubes summed up every hierarchy.

A cube (see :mod:`cubeguard.cubes.tree`) is an ``xarray.Dataset`` with one dimension per
breakdown whose index coordinate holds every code (total and subtotals included, in pre-order),
with ``f"{dim}.parent"`` and ``f"{dim}.depth"`` coordinates, and data variables ``count`` (int64)
and ``key_sum`` (uint64). The Hypothesis strategies that draw such cubes are in the tests
(``tests/strategies.py``); benchmarks build their tables with these helpers, not from ``tests/``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr


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

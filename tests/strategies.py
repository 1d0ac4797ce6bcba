"""Hypothesis strategies for small random cubes that follow the cube convention.

A cube (see cubeguard.cubes.tree) is an ``xarray.Dataset`` with one dimension per breakdown
whose index coordinate holds every code (total and subtotals included, in pre-order), with
``f"{dim}.parent"`` and ``f"{dim}.depth"`` coordinates, and data variables ``count`` (int64) and
``key_sum`` (uint64). :func:`cubes` draws random hierarchies and random interior counts and sums
them up every hierarchy, so all margins are consistent; :func:`cube_pairs` adds a protected cube
whose every cell got independent small noise (like a post-tabular method, hence not additive).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from hypothesis import strategies as st

from cubeguard.testing.cubes import Tree, build_cube, flat_tree, override, two_level_tree

__all__ = ["Tree", "build_cube", "cube_pairs", "cubes", "flat_tree", "override", "trees", "two_level_tree"]

DIM_NAMES = ("GEO.M", "SEX", "AGE.L", "EDU.H")


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

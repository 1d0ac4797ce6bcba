"""The one margin kernel: a cube's totals and subtotals summed from its interior over leaf ranges.

``cells.summed`` / ``summed_real`` (the methods that publish margins as sums of their interior) and
the RAPID fallback of controlled rounding sum with :mod:`cubeguard.cubes.margins` over
``DimHierarchy.leaf_ranges``. Checked here against the definition (a code is the sum of the leaves
below it), against the direct left-to-right float sum (what the 0/1 aggregation matrix gave, to
the bit), against the old RAPID loop, and on hierarchies whose leaves are not consecutive.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.cubes.tree import DimHierarchy, hierarchies
from cubeguard.errors import InternalError
from cubeguard.methods.cells import summed, summed_real
from cubeguard.methods.controlled_rounding.partition import rapid
from cubeguard.testing.cubes import Tree, build_cube, two_level_tree

NAMES = ("A", "B", "C")


@st.composite
def preorder_trees(draw: st.DrawFn, prefix: str, max_codes: int = 40) -> Tree:
    """A hierarchy in pre-order: depth 1-3, 1-5 children per inner code, some branches stopping early."""
    depth = draw(st.integers(1, 3))
    codes, parent, depths = [f"{prefix}T"], [-1], [0]

    def grow(node: int, level: int) -> None:
        for _ in range(draw(st.integers(1, 5))):
            if len(codes) >= max_codes:
                return
            codes.append(f"{prefix}{len(codes)}")
            parent.append(node)
            depths.append(level + 1)
            if level + 1 < depth and (level == 0 or draw(st.booleans())):
                grow(len(codes) - 1, level + 1)

    grow(0, 0)
    return Tree(tuple(codes), tuple(parent), tuple(depths))


@st.composite
def cube_and_interior(draw: st.DrawFn, dtype: type = np.int64) -> tuple[xr.Dataset, np.ndarray, list[Tree]]:
    """A cube of 1-3 dimensions (its coordinates) and a random interior of ``dtype``."""
    trees = [draw(preorder_trees(name)) for name in NAMES[: draw(st.integers(1, 3))]]
    shape = tuple(len(t.leaves) for t in trees)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype is np.int64:
        inner = rng.integers(-(10**12), 10**12, size=shape, dtype=np.int64)
    else:
        inner = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 6, size=shape)
    cube = build_cube(dict(zip(NAMES, trees, strict=False)), np.zeros(shape, dtype=np.int64))
    return cube, inner, trees


def _naive(inner: np.ndarray, trees: list[Tree]) -> np.ndarray:
    out = inner
    for axis, tree in enumerate(trees):
        out = np.moveaxis(np.tensordot(tree.aggregation().astype(inner.dtype), out, axes=(1, axis)), 0, axis)
    return out


def _direct(inner: np.ndarray, trees: list[Tree]) -> np.ndarray:
    """Each code's leaves added left to right from zero (``cumsum`` is sequential), one axis after the other."""
    out = inner
    for axis, tree in enumerate(trees):
        below = tree.aggregation().astype(bool)
        parts = [np.cumsum(np.compress(row, out, axis=axis), axis=axis).take([-1], axis=axis) for row in below]
        out = np.concatenate(parts, axis=axis)
    return out


@settings(max_examples=150, deadline=None)
@given(drawn=cube_and_interior())
def test_summed_is_each_code_the_sum_of_the_leaves_below_it(drawn: tuple[xr.Dataset, np.ndarray, list[Tree]]) -> None:
    cube, inner, trees = drawn
    got = summed(cube, inner)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, _naive(inner, trees))


@settings(max_examples=100, deadline=None)
@given(drawn=cube_and_interior(dtype=np.float64))
def test_summed_real_is_close_to_the_definition_and_the_direct_sum_to_the_bit(
    drawn: tuple[xr.Dataset, np.ndarray, list[Tree]],
) -> None:
    cube, inner, trees = drawn
    got = summed_real(cube, inner)
    np.testing.assert_allclose(got, _naive(inner, trees), rtol=1e-9, atol=1e-9)
    assert np.array_equal(got, _direct(inner, trees))  # the published floats of before: no prefix differences


def test_a_cube_large_enough_for_every_core_sums_the_same() -> None:
    trees = [two_level_tree(name, 3, 14) for name in NAMES]  # 46 codes, 42 leaves: every axis above 2**16 cells out
    cube = build_cube(dict(zip(NAMES, trees, strict=True)), np.zeros((42, 42, 42), dtype=np.int64))
    rng = np.random.default_rng(7)
    inner = rng.integers(0, 10**9, size=(42, 42, 42), dtype=np.int64)
    np.testing.assert_array_equal(summed(cube, inner), _naive(inner, trees))
    real = rng.standard_normal((42, 42, 42)) * 1e4
    assert np.array_equal(summed_real(cube, real), _direct(real, trees))


def _hier(tree: Tree, dim: str = "D") -> DimHierarchy:
    return DimHierarchy(dim, tree.codes, np.array(tree.parent, dtype=np.int64), np.array(tree.depth, dtype=np.int64))


def _rapid_loop(counts: np.ndarray, hier: list[DimHierarchy], base: int) -> np.ndarray:
    """RAPID as it was: every cell rounded, then each parent, deepest first, the sum of its children."""
    residual = counts % base
    out = np.where(2 * residual >= base, counts - residual + base, counts - residual).astype(np.int64)
    for axis, h in enumerate(hier):
        for p in sorted(np.flatnonzero(~h.is_leaf).tolist(), key=lambda q: -int(h.depth[q])):
            children = np.flatnonzero(h.parent == p)
            index: list[slice | int] = [slice(None)] * counts.ndim
            index[axis] = p
            out[tuple(index)] = np.take(out, children, axis=axis).sum(axis=axis)
    return out


@settings(max_examples=100, deadline=None)
@given(
    trees=st.lists(preorder_trees("R", max_codes=25), min_size=1, max_size=3),
    base=st.integers(1, 10),
    seed=st.integers(0, 2**32 - 1),
)
def test_rapid_is_the_rounded_interior_summed_as_before(trees: list[Tree], base: int, seed: int) -> None:
    hier = [_hier(t, f"D{k}") for k, t in enumerate(trees)]
    counts = np.random.default_rng(seed).integers(0, 40, size=tuple(len(t.codes) for t in trees), dtype=np.int64)
    np.testing.assert_array_equal(rapid(counts, hier, base), _rapid_loop(counts, hier, base))


def test_leaf_ranges_are_runs_of_the_leaves() -> None:
    tree = Tree(("T", "A", "a1", "a2", "B", "b1"), (-1, 0, 1, 1, 0, 4), (0, 1, 2, 2, 1, 2))
    lo, hi = _hier(tree).leaf_ranges
    assert lo.tolist() == [0, 0, 0, 1, 2, 2]
    assert hi.tolist() == [3, 2, 1, 2, 3, 3]


NOT_PREORDER = Tree(("T", "A", "B", "a1", "b1", "a2"), (-1, 0, 0, 1, 2, 1), (0, 1, 1, 2, 2, 2))


def test_a_hierarchy_whose_leaves_are_not_consecutive_raises() -> None:
    with pytest.raises(
        InternalError, match=r"dimension 'D' is not in pre-order: the leaves below 'A' are not consecutive"
    ):
        _ = _hier(NOT_PREORDER).leaf_ranges
    cube = build_cube({"D": NOT_PREORDER}, np.arange(3, dtype=np.int64))
    with pytest.raises(InternalError, match="not in pre-order"):
        summed(cube, np.arange(3, dtype=np.int64))
    with pytest.raises(InternalError, match="not in pre-order"):
        rapid(cube["count"].values, list(hierarchies(cube).values()), 3)


@settings(max_examples=100, deadline=None)
@given(tree=preorder_trees("P", max_codes=12), order=st.randoms(use_true_random=False))
def test_shuffled_codes_raise_exactly_when_some_code_s_leaves_are_split(tree: Tree, order: object) -> None:
    perm = list(range(1, len(tree.codes)))
    order.shuffle(perm)  # type: ignore[attr-defined]
    perm = [0, *perm]
    where = {old: new for new, old in enumerate(perm)}
    shuffled = Tree(
        tuple(tree.codes[i] for i in perm),
        tuple(where[tree.parent[i]] if tree.parent[i] >= 0 else -1 for i in perm),
        tuple(tree.depth[i] for i in perm),
    )
    below = shuffled.aggregation().astype(bool)
    split = any(np.ptp(np.flatnonzero(row)) + 1 != row.sum() for row in below)
    n = len(shuffled.leaves)
    cube = build_cube({"D": shuffled}, np.zeros(n, dtype=np.int64))
    inner = np.arange(1, n + 1, dtype=np.int64) ** 2
    if split:
        with pytest.raises(InternalError, match="not in pre-order"):
            summed(cube, inner)
    else:
        np.testing.assert_array_equal(summed(cube, inner), _naive(inner, [shuffled]))

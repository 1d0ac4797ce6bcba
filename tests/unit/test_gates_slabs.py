"""Cubes read slab by slab for the gates: same facts at any slab size, lazily, and input errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.config.models import GateSpec
from cubeguard.gates import evaluate_cube
from cubeguard.gates.slabs import GateInputError, slab_rows
from cubeguard.measures.risk import small_cells_unchanged
from tests.strategies import build_cube, cube_pairs, flat_tree, override

ALL = GateSpec(forbidden_values=[1, 2], max_small_cells_unchanged=0.5, require_additivity=True)


def _pair():
    dims = {"GEO": flat_tree("G", "G1", "G2", "G3"), "SEX": flat_tree("S", "S1", "S2")}
    original = build_cube(dims, np.arange(6).reshape(3, 2))
    return original, override(original, original["count"].values + 1)


def _facts(result) -> tuple:
    return (
        result.forbidden.cells,
        result.forbidden.values.tolist(),
        result.forbidden.counts.tolist(),
        result.small_cells,
        result.additivity.checked,
        result.additivity.violations,
        result.additivity.max_gap,
        [
            (g.dim, g.parent, g.non_additive, g.new_non_additive, g.parent_total, g.children_total)
            for g in result.additivity.groups
        ],
        result.checks,
    )


@settings(max_examples=30, deadline=None)
@given(pair=cube_pairs(max_dims=3), slab_cells=st.integers(1, 40))
def test_slabs_and_lazy_cubes_give_the_same_facts(pair, slab_cells: int) -> None:
    original, protected = pair
    whole = evaluate_cube(original, protected, {}, ALL)
    lazy = {d: 1 for d in protected["count"].dims[:1]}
    slabbed = evaluate_cube(original.chunk(lazy), protected.chunk(lazy), {}, ALL, slab_cells=slab_cells)
    assert _facts(whole) == _facts(slabbed)
    o, p = original["count"].values, protected["count"].values
    assert int(whole.forbidden.counts.sum()) == o.size
    assert whole.forbidden.cells == int(np.isin(p, [1, 2]).sum())
    share = small_cells_unchanged(o.ravel(), p.ravel(), (1, 2))
    assert np.isnan(share) if np.isnan(whole.small_cells.share) else whole.small_cells.share == share


def test_large_and_negative_values_are_tallied() -> None:
    original, _ = _pair()
    counts = original["count"].values.copy()
    counts[0, 0], counts[1, 1] = 10**7, -3
    result = evaluate_cube(original, override(original, counts), {}, GateSpec(forbidden_values=[-3, 10**7]))
    assert result.forbidden.cells == 2 and result.forbidden.values[0] == -3 and result.forbidden.values[-1] == 10**7


def test_slabs_hold_whole_stored_chunks() -> None:
    original, _ = _pair()
    assert slab_rows(original["count"], 6) == 2
    assert slab_rows(original.chunk({"GEO": 3})["count"], 6) == 3


def test_different_cells_are_refused_with_the_dimension_named() -> None:
    original, protected = _pair()
    other = protected.assign_coords(SEX=["S", "S1", "X"])
    with pytest.raises(GateInputError, match=r"different codes along \['SEX'\]"):
        evaluate_cube(original, other, {}, ALL)


def test_different_dimensions_are_refused() -> None:
    original, _ = _pair()
    other = build_cube({"GEO": flat_tree("G", "G1", "G2", "G3")}, np.arange(3))
    with pytest.raises(GateInputError, match=r"original dims \['GEO', 'SEX'\] differ from protected dims \['GEO'\]"):
        evaluate_cube(original, other, {}, ALL)


def test_a_cube_without_count_is_refused() -> None:
    original, protected = _pair()
    with pytest.raises(GateInputError, match="the original cube '\\?' has no 'count' variable"):
        evaluate_cube(original.drop_vars("count"), protected, {}, ALL)


def test_a_protected_cube_in_another_dimension_order_is_aligned() -> None:
    original, protected = _pair()
    flipped = protected.transpose("SEX", "GEO")
    assert _facts(evaluate_cube(original, flipped, {}, ALL)) == _facts(evaluate_cube(original, protected, {}, ALL))

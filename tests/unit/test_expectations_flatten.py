"""Flat tables of cubes: columns, order, chunking, laziness and input errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings

from expectations.flatten import FlattenError, flatten, iter_flat
from tests.strategies import build_cube, cube_pairs, flat_tree, override


def _pair():
    dims = {"GEO": flat_tree("G", "G1", "G2", "G3"), "SEX": flat_tree("S", "S1", "S2")}
    original = build_cube(dims, np.arange(6).reshape(3, 2))
    return original, override(original, original["count"].values + 1)


def test_columns_codes_parents_and_values_in_c_order() -> None:
    original, protected = _pair()
    frame = flatten(protected, original)
    assert list(frame.columns) == ["GEO", "SEX", "GEO.parent", "SEX.parent", "published", "original"]
    assert len(frame) == 12
    assert list(frame["GEO"].cat.categories) == ["G", "G1", "G2", "G3"]
    assert frame["GEO"].tolist()[:3] == ["G", "G", "G"] and frame["SEX"].tolist()[:3] == ["S", "S1", "S2"]
    assert frame["GEO.parent"].tolist()[::3] == ["", "G", "G", "G"]
    np.testing.assert_array_equal(frame["published"], protected["count"].values.ravel())
    np.testing.assert_array_equal(frame["original"], original["count"].values.ravel())
    assert frame["published"].dtype == np.int64


def test_protected_alone_has_no_original_column() -> None:
    _, protected = _pair()
    assert "original" not in flatten(protected).columns


@settings(max_examples=25, deadline=None)
@given(pair=cube_pairs(max_dims=3))
def test_slabs_and_lazy_cubes_give_the_same_table(pair) -> None:
    original, protected = pair
    whole = flatten(protected, original)
    lazy = {d: 1 for d in protected["count"].dims[:1]}
    slabbed = flatten(protected.chunk(lazy), original.chunk(lazy), chunk_cells=3)
    pd.testing.assert_frame_equal(whole, slabbed)
    streamed = pd.concat(list(iter_flat(protected, original, chunk_cells=5)), ignore_index=True)
    pd.testing.assert_frame_equal(whole, streamed)


def test_different_cells_are_refused_with_the_dimension_named() -> None:
    original, protected = _pair()
    other = protected.assign_coords(SEX=["S", "S1", "X"])
    with pytest.raises(FlattenError, match=r"different codes along \['SEX'\]"):
        flatten(other, original)


def test_a_cube_without_count_is_refused() -> None:
    original, _ = _pair()
    with pytest.raises(FlattenError, match="has no 'count' variable"):
        flatten(original.drop_vars("count"))


def test_a_dimension_named_like_a_value_column_is_refused() -> None:
    cube = build_cube({"published": flat_tree("T", "A", "B")}, np.array([1, 2]))
    with pytest.raises(FlattenError, match="clash with the flat table's columns"):
        flatten(cube)

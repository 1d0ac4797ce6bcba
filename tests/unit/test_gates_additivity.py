"""The additivity check of the core gates (no Great Expectations run needed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.cubes.tree import InvalidCubeError
from cubeguard.gates.additivity import check_additivity
from cubeguard.gates.slabs import GateInputError
from tests.strategies import build_cube, cubes, flat_tree, override


def _with_children(cube) -> int:
    """Cells with children along at least one dimension."""
    inner = [np.isin(cube[d].values, cube[f"{d}.parent"].values) for d in cube["count"].dims]
    grid = np.zeros(cube["count"].shape, dtype=bool)
    for k, mask in enumerate(inner):
        grid |= mask.reshape([-1 if i == k else 1 for i in range(len(inner))])
    return int(grid.sum())


@settings(max_examples=40, deadline=None)
@given(cube=cubes(max_dims=3), slab_cells=st.integers(1, 64))
def test_tabulated_cubes_are_additive_in_any_slab_size(cube, slab_cells: int) -> None:
    lazy = cube.chunk({cube["count"].dims[0]: 1})
    for found in (check_additivity(cube), check_additivity(lazy, slab_cells=slab_cells)):
        assert found.violations == 0 and found.max_gap == 0 and found.examples == ()
        assert found.checked == _with_children(cube)
        assert found.additive


def test_a_broken_subtotal_is_found_and_named() -> None:
    dims = {"GEO": flat_tree("G", "G1", "G2"), "SEX": flat_tree("S", "S1", "S2")}
    cube = build_cube(dims, np.array([[1, 2], [3, 4]]))
    counts = cube["count"].values.copy()
    counts[1, 0] += 5  # G1 x total sex: breaks G1 = S1 + S2 along SEX and G = G1 + G2 along GEO
    found = check_additivity(override(cube, counts))
    assert found.violations == 2 and found.max_gap == 5
    assert "GEO=G1, SEX=S: 8 != 3 = sum of 2 children along SEX" in found.examples
    assert any(e.startswith("GEO=G, SEX=S:") and e.endswith("along GEO") for e in found.examples)
    groups = {(g.dim, g.parent): g for g in found.groups}
    assert (groups["SEX", "S"].non_additive, groups["GEO", "G"].non_additive) == (1, 1)
    assert groups["GEO", "G"].parent_total - groups["GEO", "G"].children_total == -5


def test_a_cell_off_along_two_dimensions_counts_once() -> None:
    dims = {"GEO": flat_tree("G", "G1", "G2"), "SEX": flat_tree("S", "S1", "S2")}
    cube = build_cube(dims, np.array([[1, 2], [3, 4]]))
    counts = cube["count"].values.copy()
    counts[0, 0] += 1  # the grand total, off along both dimensions
    found = check_additivity(override(cube, counts))
    assert found.violations == 1 and sum(g.non_additive for g in found.groups) == 2
    assert sum(g.new_non_additive for g in found.groups) == 1


def test_examples_are_capped_at_five() -> None:
    dims = {"GEO": flat_tree("G", *[f"G{i}" for i in range(8)])}
    cube = build_cube(dims, np.arange(8))
    counts = cube["count"].values.copy()
    counts[0] += 1
    wide = build_cube({**dims, "SEX": flat_tree("S", "S1", "S2")}, np.ones((8, 2), dtype=np.int64))
    wide_counts = wide["count"].values + 1  # every cell one up: every total off
    assert len(check_additivity(override(cube, counts)).examples) == 1
    found = check_additivity(override(wide, wide_counts))
    assert len(found.examples) == 5 and found.violations == _with_children(wide)


def test_missing_counts_are_refused() -> None:
    cube = build_cube({"GEO": flat_tree("G", "G1", "G2")}, np.array([1, 2]))
    cube["count"] = cube["count"].astype(float).where(cube["GEO"] != "G1")
    with pytest.raises(GateInputError, match="'count' has missing values"):
        check_additivity(cube)


def test_a_cube_without_a_total_is_refused() -> None:
    cube = build_cube({"GEO": flat_tree("G", "G1", "G2")}, np.array([1, 2]))
    cube = cube.assign_coords({"GEO.parent": ("GEO", ["", "", "G"])})
    with pytest.raises(InvalidCubeError, match="needs exactly one total"):
        check_additivity(cube)

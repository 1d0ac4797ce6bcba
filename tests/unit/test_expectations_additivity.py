"""The additivity check on flat tables (no Great Expectations run needed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expectations.additivity import check_additivity
from expectations.flatten import flatten
from tests.strategies import build_cube, cubes, flat_tree, override


def _with_children(cube) -> int:
    """Cells with children along at least one dimension."""
    inner = [np.isin(cube[d].values, cube[f"{d}.parent"].values) for d in cube["count"].dims]
    grid = np.zeros(cube["count"].shape, dtype=bool)
    for k, mask in enumerate(inner):
        grid |= mask.reshape([-1 if i == k else 1 for i in range(len(inner))])
    return int(grid.sum())


@settings(max_examples=40, deadline=None)
@given(cube=cubes(max_dims=3), seed=st.integers(0, 2**32 - 1))
def test_tabulated_cubes_are_additive_in_any_row_order(cube, seed: int) -> None:
    frame = flatten(cube)
    shuffled = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    for table in (frame, shuffled):
        found = check_additivity(table)
        assert found.violations == 0 and found.max_gap == 0 and found.examples == ()
        assert found.checked == _with_children(cube)


def test_a_broken_subtotal_is_found_and_named() -> None:
    dims = {"GEO": flat_tree("G", "G1", "G2"), "SEX": flat_tree("S", "S1", "S2")}
    cube = build_cube(dims, np.array([[1, 2], [3, 4]]))
    counts = cube["count"].values.copy()
    counts[1, 0] += 5  # G1 x total sex: breaks G1 = S1 + S2 along SEX and G = G1 + G2 along GEO
    found = check_additivity(flatten(override(cube, counts)))
    assert found.violations == 2 and found.max_gap == 5
    assert "GEO=G1, SEX=S: 8 != 3 = sum of 2 children along SEX" in found.examples
    assert any(e.startswith("GEO=G, SEX=S:") and e.endswith("along GEO") for e in found.examples)


def test_a_table_that_is_not_a_full_cube_is_refused() -> None:
    cube = build_cube({"GEO": flat_tree("G", "G1", "G2")}, np.array([1, 2]))
    with pytest.raises(ValueError, match=r"not a full cube: 1 cell\(s\) missing, 0 repeated"):
        check_additivity(flatten(cube).iloc[1:])


def test_missing_values_are_refused() -> None:
    frame = flatten(build_cube({"GEO": flat_tree("G", "G1", "G2")}, np.array([1, 2])))
    frame["published"] = frame["published"].astype(float).where(frame.index != 0)
    with pytest.raises(ValueError, match="'published' has missing values"):
        check_additivity(frame)

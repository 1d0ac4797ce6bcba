"""Selections of cells: interior, margins, table dimension, and cube-convention checks."""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.cubes.tree import InvalidCubeError, hierarchies
from cubeguard.measures import select
from cubeguard.measures.distance import absolute_distance
from cubeguard.measures.errors import MeasureConfigError
from tests.strategies import Tree, build_cube, flat_tree

# A (T: a1, a2) x B (T: b1, b2, b3); interior [[3, 0, 1], [2, 5, 0]]. Summed up:
#         T  b1 b2 b3
#   T    11   5  5  1
#   a1    4   3  0  1
#   a2    7   2  5  0
CUBE = build_cube(
    {"A": flat_tree("T", "a1", "a2"), "B": flat_tree("T", "b1", "b2", "b3")}, np.array([[3, 0, 1], [2, 5, 0]])
)


def test_cube_sums_up_every_margin() -> None:
    assert CUBE["count"].values.tolist() == [[11, 5, 5, 1], [4, 3, 0, 1], [7, 2, 5, 0]]


def test_interior_keeps_leaf_codes_on_every_dimension() -> None:
    inner = select.interior(CUBE)["count"]
    assert inner.values.tolist() == [[3, 0, 1], [2, 5, 0]]
    assert list(inner.coords["B"].values) == ["b1", "b2", "b3"]


def test_margin_has_leaves_on_its_dims_and_the_total_elsewhere() -> None:
    assert select.margin(CUBE, ["B"])["count"].values.tolist() == [5, 5, 1]
    assert select.margin(CUBE, ["A"])["count"].dims == ("A",)
    assert select.margin(CUBE, ["A"])["count"].values.tolist() == [4, 7]


def test_margin_of_a_deeper_hierarchy_skips_subtotals() -> None:
    # G: T -> (g1 -> (g11, g12), g2); leaves are g11, g12, g2 (positions 2, 3, 4)
    geo = Tree(("T", "g1", "g11", "g12", "g2"), (-1, 0, 1, 1, 0), (0, 1, 2, 2, 1))
    cube = build_cube({"G": geo}, np.array([1, 2, 4]))
    assert cube["count"].values.tolist() == [7, 3, 1, 2, 4]
    assert select.interior(cube)["count"].values.tolist() == [1, 2, 4]


def test_table_dimension_counts_dimensions_not_at_the_total() -> None:
    assert select.table_dimension(CUBE).values.tolist() == [[0, 1, 1, 1], [1, 2, 2, 2], [1, 2, 2, 2]]


def test_scope_label() -> None:
    assert select.scope_label("interior") == "interior"
    assert select.scope_label(("GEO.M", "SEX")) == "GEO.M*SEX"


def test_missing_hierarchy_coordinates_are_all_reported() -> None:
    bad = CUBE.drop_vars(["A.parent", "B.depth"])
    with pytest.raises(
        InvalidCubeError, match=r"'A' lacks coordinate\(s\) 'A.parent'.*'B' lacks coordinate\(s\) 'B.depth'"
    ):
        select.interior(bad)


def test_two_totals_are_rejected() -> None:
    bad = CUBE.assign_coords({"A.parent": ("A", np.array(["", "", "T"], dtype=object))})
    with pytest.raises(InvalidCubeError, match="needs exactly one total"):
        hierarchies(bad)


def test_unknown_parent_is_rejected() -> None:
    bad = CUBE.assign_coords({"B.parent": ("B", np.array(["", "T", "X", "T"], dtype=object))})
    with pytest.raises(InvalidCubeError, match=r"parent codes that are not codes of it: \['X'\]"):
        hierarchies(bad)


def test_unknown_margin_dimension_is_rejected() -> None:
    with pytest.raises(MeasureConfigError, match=r"margin: unknown dimension\(s\) \['C'\]; known: A, B"):
        select.margin(CUBE, ["C"])


def test_a_code_listed_twice_is_rejected() -> None:
    bad = CUBE.assign_coords(B=np.array(["T", "b1", "b1", "b3"], dtype=object))
    with pytest.raises(InvalidCubeError, match="dimension 'B' lists a code twice"):
        hierarchies(bad)


def test_depth_must_follow_the_parents() -> None:
    bad = CUBE.assign_coords({"A.depth": ("A", np.array([0, 1, 2]))})
    with pytest.raises(InvalidCubeError, match="dimension 'A' has a depth that is not its parent's depth plus one"):
        hierarchies(bad)


def test_a_cube_without_count_is_rejected() -> None:
    with pytest.raises(InvalidCubeError, match="the cube has no 'count' variable; pass a cube with one"):
        absolute_distance(CUBE.drop_vars("count"), CUBE)

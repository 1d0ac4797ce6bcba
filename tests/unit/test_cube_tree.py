"""One hierarchy type: a breakdown's ``tree`` is the tree parsed back from its cube.

:attr:`Breakdown.tree` (what tabulation, tables and SAFE hold) and :func:`hierarchies` (what methods,
gates and measures read from a cube's coordinates) must give equal :class:`DimHierarchy` values, so
the two sides of a release agree on parents, depths, leaves and leaf ranges. Checked on every
breakdown of the tiny config (on its tabulated cubes, as written to and read from the store) and of
the EU 2021 programme (loaded without data), and on the leaf ranges the tabulation sums margins by.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cubeguard.config import load_release
from cubeguard.config.load import Release
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.model import labelled
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.cubes.tree import DimHierarchy, InvalidCubeError, hierarchies
from cubeguard.errors import CubeguardError
from cubeguard.pipeline.tabulation import tabulate_release, write_tabulation
from cubeguard.testing.tiny import TINY_CONFIG, tiny_microdata

EU = Path(__file__).resolve().parents[2] / "configs" / "eu2021.yaml"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Release:
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "data").mkdir()
    tiny_microdata(n_households=400).to_parquet(folder / "data" / "persons.parquet")
    (folder / "tiny.yaml").write_text(TINY_CONFIG)
    return load_release(folder / "tiny.yaml")


@pytest.fixture(scope="module")
def eu() -> Release:
    return load_release(EU)


def _parsed(b: Breakdown) -> DimHierarchy:
    """The tree read back from a one-dimensional cube with ``b``'s coordinates, as tabulation writes them."""
    cube = labelled([b], {"count": np.zeros(len(b.codes), dtype=np.int64)}, {})
    return hierarchies(cube)[b.id]


def test_the_tabulated_tiny_cubes_parse_to_their_breakdowns_trees(tiny: Release) -> None:
    out = tiny.config.output
    write_tabulation(tiny, tabulate_release(tiny), out.original_store)
    ids = list_cubes(out.original_store)
    assert sorted(ids) == sorted(c.id for c in tiny.config.hypercubes)
    for cube_id in ids:
        cube = open_cube(out.original_store, cube_id)
        spec = tiny.cube(cube_id)
        expected = {bid: tiny.breakdowns[bid].tree for bid in spec.breakdowns}
        assert hierarchies(cube) == expected, cube_id


@pytest.mark.parametrize("which", ["tiny", "eu"])
def test_every_breakdown_tree_equals_the_tree_parsed_from_its_coordinates(
    which: str, request: pytest.FixtureRequest
) -> None:
    release: Release = request.getfixturevalue(which)
    assert len(release.breakdowns) >= (5 if which == "tiny" else 30)
    for bid, b in release.breakdowns.items():
        tree = b.tree
        assert tree == _parsed(b), bid
        assert tree.dim == bid and list(tree.codes) == b.codes
        assert [tree.codes[p] if p >= 0 else "" for p in tree.parent] == b.parents, bid
        assert tree.depth.tolist() == b.depths, bid


@pytest.mark.parametrize("which", ["tiny", "eu"])
def test_the_trees_leaves_and_leaf_ranges_are_the_breakdowns_bottom_codes_and_ranges(
    which: str, request: pytest.FixtureRequest
) -> None:
    release: Release = request.getfixturevalue(which)
    for bid, b in release.breakdowns.items():
        lo, hi = b.tree.leaf_ranges
        np.testing.assert_array_equal(b.tree.leaves, b.bottom, err_msg=bid)
        np.testing.assert_array_equal(lo, b.lo, err_msg=bid)
        np.testing.assert_array_equal(hi, b.hi, err_msg=bid)


def test_the_tree_is_built_once_and_cannot_be_changed_by_a_caller(tiny: Release) -> None:
    b = tiny.breakdowns["AGE.M"]
    assert b.tree is b.tree
    with pytest.raises(ValueError, match="read-only"):
        b.tree.parent[1] = 0
    with pytest.raises(ValueError, match="read-only"):
        b.tree.depth[1] = 0


def test_trees_differing_in_one_parent_depth_or_code_are_not_equal(tiny: Release) -> None:
    tree = tiny.breakdowns["AGE.M"].tree  # T, Y_LT15, Y0-4, Y5-14, Y15-64, Y_GE65
    parent, depth = tree.parent.copy(), tree.depth.copy()
    parent[4] = 1  # Y15-64 under Y_LT15
    depth[4] = 2
    assert tree == DimHierarchy(tree.dim, tree.codes, tree.parent.copy(), tree.depth.copy())
    assert tree != DimHierarchy(tree.dim, tree.codes, parent, tree.depth)
    assert tree != DimHierarchy(tree.dim, tree.codes, tree.parent, depth)
    assert tree != DimHierarchy(tree.dim, (*tree.codes[:-1], "Y65+"), tree.parent, tree.depth)
    assert tree != DimHierarchy("AGE.L", tree.codes, tree.parent, tree.depth)
    assert tree != "AGE.M"


def test_a_cube_without_its_tree_coordinates_is_a_users_mistake_from_cubes(tiny: Release) -> None:
    b = tiny.breakdowns["SEX"]
    cube = labelled([b], {"count": np.zeros(len(b.codes), dtype=np.int64)}, {}).drop_vars("SEX.depth")
    with pytest.raises(InvalidCubeError, match=r"'SEX' lacks coordinate\(s\) 'SEX.depth'"):
        hierarchies(cube)
    assert issubclass(InvalidCubeError, CubeguardError)
    assert InvalidCubeError.__module__ == "cubeguard.cubes.tree"

"""Conventional rounding (Handbook on SDC v2, 5.5): the Handbook's example, invariants, the release step, errors."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.ckm.consistency import check_consistency
from cubeguard.config import load_release
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.conventional_rounding import METHOD, ConventionalRoundingStep, kernel, round_cube, round_to_base
from cubeguard.publish.manifest import public_step
from cubeguard.sweep import SweepGridError, grid_from_mapping
from tests.conftest import TINY_CONFIG, config_problems, protect_tiny
from tests.strategies import build_cube, cubes, flat_tree

CELL_KEY = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"

# Handbook on SDC v2, 5.5, Tables 5.18 and 5.19 as printed: rows Area A, B, C, Total; columns
# Male, Female, Total.
TABLE_5_18 = [[1, 0, 1], [3, 3, 6], [12, 20, 32], [16, 23, 39]]
TABLE_5_19 = [[0, 0, 0], [5, 5, 5], [10, 20, 35], [15, 25, 40]]
# Table 5.19 prints 35 for Area C's total of 32, but 30 is the nearest multiple of 5 (|32 - 30| = 2,
# |32 - 35| = 3), as the Handbook's own rule and every other cell of the table say.
ERRATUM = {(2, 2): 30}


def _printed_order(cube: xr.Dataset) -> np.ndarray:
    """A cube's counts as the Handbook prints them: inner rows and columns first, totals last."""
    return cube["count"].sel(AREA=["A", "B", "C", "Total"], SEX=["Male", "Female", "Total"]).values


def _table_5_18() -> xr.Dataset:
    dims = {"AREA": flat_tree("Total", "A", "B", "C"), "SEX": flat_tree("Total", "Male", "Female")}
    return build_cube(dims, np.array([[1, 0], [3, 3], [12, 20]]))


def _reference(counts: np.ndarray, base: int) -> np.ndarray:
    """Nearest multiple of ``base``, halves up, in Python integers (no numpy, no floats)."""
    return np.array([(int(c) + base // 2) // base * base for c in counts.ravel()], dtype=np.int64).reshape(counts.shape)


def test_handbook_table_5_18_rounds_to_table_5_19() -> None:
    original = _table_5_18()
    np.testing.assert_array_equal(_printed_order(original), TABLE_5_18)  # the transcription adds up
    rounded = METHOD.prepare(ConventionalRoundingStep(method="conventional_rounding", base=5))(original)
    expected = np.array(TABLE_5_19)
    for cell, value in ERRATUM.items():
        expected[cell] = value
    np.testing.assert_array_equal(_printed_order(rounded), expected)
    np.testing.assert_array_equal(rounded["noise"].values, rounded["count"].values - original["count"].values)
    # margins are rounded on their own, so the table is not additive (Area B: 5 + 5 is not 5)
    assert not check_additivity(rounded).additive
    assert check_additivity(original).additive


def test_an_exact_half_is_rounded_up() -> None:
    counts = np.array([1, 2, 3, 5, 6, 7, 15, 25], dtype=np.int64)
    np.testing.assert_array_equal(round_to_base(counts, 2), [2, 2, 4, 6, 6, 8, 16, 26])
    np.testing.assert_array_equal(round_to_base(counts, 10), [0, 0, 0, 10, 10, 10, 20, 30])


def test_the_kernel_examples_run() -> None:
    outcome = doctest.testmod(kernel)
    assert outcome.attempted >= 2 and outcome.failed == 0


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(0, 100) | st.integers(0, 2**62), min_size=1, max_size=50).map(
        lambda v: np.array(v, dtype=np.int64)
    ),
    base=st.integers(1, 12) | st.integers(1, 1_000_000_000),
)
def test_the_kernel_is_exact_integer_rounding(counts: np.ndarray, base: int) -> None:
    rounded = round_to_base(counts, base)
    assert rounded.dtype == np.int64
    np.testing.assert_array_equal(rounded, _reference(counts, base))


@settings(max_examples=100, deadline=None)
@given(cube=cubes(max_dims=3, max_count=40), base=st.integers(1, 12))
def test_invariants_of_a_rounded_cube(cube: xr.Dataset, base: int) -> None:
    original = cube["count"].values
    rounded = round_cube(cube, base)
    published = rounded["count"].values
    assert rounded["count"].dims == cube["count"].dims and published.dtype == original.dtype
    assert np.all(published % base == 0)  # every published value a multiple of the base
    assert np.all(2 * np.abs(published - original) <= base)  # at most half a base away
    assert np.all(published[original == 0] == 0)  # zeros stay zero
    np.testing.assert_array_equal(rounded["noise"].values, published - original)
    again = round_cube(rounded, base)  # idempotent, and the noise stays published - original
    np.testing.assert_array_equal(again["count"].values, published)
    np.testing.assert_array_equal(again["noise"].values, rounded["noise"].values)


@settings(max_examples=60, deadline=None)
@given(first=cubes(max_dims=2, max_count=40), second=cubes(max_dims=3, max_count=40), base=st.integers(2, 12))
def test_a_cell_is_rounded_by_its_own_count_alone(first: xr.Dataset, second: xr.Dataset, base: int) -> None:
    """Whatever cube a cell sits in, equal counts are published equal (Handbook on SDC v2, 5.5)."""
    originals = np.concatenate([first["count"].values.ravel(), second["count"].values.ravel()])
    published = np.concatenate(
        [round_cube(first, base)["count"].values.ravel(), round_cube(second, base)["count"].values.ravel()]
    )
    for value in np.unique(originals):
        assert len(set(published[originals == value].tolist())) == 1


def test_a_lazy_cube_is_rounded_without_computing_early() -> None:
    cube = _table_5_18().chunk({"AREA": 1})

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the rounding step computed the cube early")

    with dask.config.set(scheduler=refuse):
        rounded = round_cube(cube, 5)
    assert rounded["count"].chunks is not None
    np.testing.assert_array_equal(rounded["count"].values, round_cube(cube.load(), 5)["count"].values)


def test_a_release_rounds_every_cube_through_the_config(tmp_path: Path) -> None:
    original, protected, steps = protect_tiny(tmp_path, "  - {method: conventional_rounding, base: 5}\n")
    assert public_step(steps[0]) == {
        "method": "conventional_rounding", "name": "conventional_rounding", "cubes": "all", "parameters": {"base": 5},
    }  # fmt: skip
    assert set(protected) == {"c1", "c2", "hh"}
    for cid, cube in protected.items():
        before = original[cid]["count"].values
        np.testing.assert_array_equal(cube["count"].values, _reference(before, 5))
        np.testing.assert_array_equal(cube["noise"].values, cube["count"].values - before)
        assert cube.attrs["steps"] == ["conventional_rounding"]
    consistency = check_consistency(protected)  # c1 and c2 share 12 cells: published the same
    assert consistency.pairs == 1 and consistency.shared_cells == 12 and consistency.ok


def test_base_one_publishes_the_cube_bit_for_bit(tmp_path: Path) -> None:
    original, protected, _ = protect_tiny(tmp_path, "  - {method: conventional_rounding, base: 1}\n")
    for cid, cube in protected.items():
        np.testing.assert_array_equal(cube["count"].values, original[cid]["count"].values)
        assert cube["count"].dtype == original[cid]["count"].dtype and int(np.abs(cube["noise"]).max()) == 0


def test_a_sweep_varies_the_base() -> None:
    grid = grid_from_mapping({"method": "conventional_rounding", "vary": {"base": [1, 3, 5]}})
    assert [(s.name, s.step.base) for s in grid.sets] == [("base=1", 1), ("base=3", 3), ("base=5", 5)]
    with pytest.raises(
        SweepGridError, match=re.escape("vary.base[0] (grid): input should be greater than or equal to 1")
    ):
        grid_from_mapping({"method": "conventional_rounding", "vary": {"base": [0]}})


@pytest.mark.parametrize(
    ("steps", "methods"),
    [
        (CELL_KEY + "  - {method: conventional_rounding}\n", [("cell_key", None), ("conventional_rounding", 3)]),
        ("  - {method: conventional_rounding, base: 5, cubes: [c1]}\n  - {method: cell_key, D: 5, V: 3, cubes: [c2]}\n",
         [("conventional_rounding", 5), ("cell_key", None)]),
    ],
)  # fmt: skip
def test_rounding_may_follow_other_steps_and_share_the_release_with_them_on_other_cubes(
    tmp_path: Path, steps: str, methods: list[tuple[str, int | None]]
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(TINY_CONFIG.replace(CELL_KEY, steps))
    loaded = load_release(path).config.steps
    assert [(s.method, getattr(s, "base", None)) for s in loaded] == methods  # 3 is the default base


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ("  - {method: conventional_rounding, base: 2.5}\n",
         r"steps\[0\]\.base \(c\.yaml line \d+\): input should be a valid integer"),
        ("  - {method: conventional_rounding, cubes: [c3]}\n",
         r"steps\[0\]\.cubes\[0\] \(c\.yaml line \d+\): unknown hypercube 'c3'"),
        ("  - {method: conventional_rounding, base: 5}\n" + CELL_KEY,
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c1' \(and 2 more\) is protected again by steps\[1\] "
         r"\(cell_key\) after this step, so its counts would no longer all be multiples of 5; make this step "
         r"the last of each cube it protects, or restrict 'cubes'"),
        ("  - {method: conventional_rounding, cubes: [c2, hh]}\n  - {method: conventional_rounding, name: r5, base: 5}\n",
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c2' \(and 1 more\) is protected again by steps\[1\] \(r5\)"),
    ],
)  # fmt: skip
def test_each_mistake_gives_a_located_config_error(tmp_path: Path, steps: str, expected: str) -> None:
    found = config_problems(tmp_path, steps)
    assert len(found) == 1 and re.match(expected, found[0]), found

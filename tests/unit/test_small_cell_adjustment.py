"""Small cell adjustment (Hundepool et al. 2024, Handbook on SDC v2, 5.5): invariants, unbiasedness, the release step, errors."""

from __future__ import annotations

import doctest
import json
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.config import load_release
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.cells import interior, leaf_index, summed
from cubeguard.methods.small_cell_adjustment import (
    adjust_cube,
    adjust_small_cells,
    kernel,
)
from cubeguard.publish.manifest import public_step
from tests.conftest import CELL_KEY_STEP, TINY_CONFIG, config_problems, protect_tiny
from tests.strategies import build_cube, cubes, flat_tree

# Two-sided z-tests at alpha = 1e-6: |z| > 4.892 happens by chance once in a million seeds.
Z_CRIT = 4.892


def _inner(cube: xr.Dataset, name: str = "count") -> np.ndarray:
    return np.asarray(interior(cube[name].values, leaf_index(cube)))


def _keyed(cube: xr.Dataset) -> xr.Dataset:
    """The cube as tabulation leaves it: record-key sums on the 2^64 scale, so it has cell keys."""
    return cube.assign_attrs(key_scale="2^64")


def test_the_kernel_examples_run() -> None:
    outcome = doctest.testmod(kernel)
    assert outcome.attempted >= 1 and outcome.failed == 0


def test_a_count_goes_up_exactly_when_its_uniform_is_below_count_over_base() -> None:
    counts = np.array([1, 1, 2, 2, 4, 4, 0, 5, 9], dtype=np.int64)
    u = np.array([0.19, 0.2, 0.39, 0.4, 0.79, 0.8, 0.0, 0.0, 0.99])
    np.testing.assert_array_equal(adjust_small_cells(counts, u, 5), [5, 0, 5, 0, 5, 0, 0, 5, 9])


@settings(max_examples=100, deadline=None)
@given(cube=cubes(max_dims=3, max_count=12), base=st.integers(2, 8), seed=st.integers(0, 2**32))
def test_invariants_of_an_adjusted_cube(cube: xr.Dataset, base: int, seed: int) -> None:
    adjusted = adjust_cube(cube, base, seed)
    before, after = _inner(cube), _inner(adjusted)
    small = (before > 0) & (before < base)
    assert np.all(np.isin(after[small], [0, base]))  # small cells go to 0 or the base
    np.testing.assert_array_equal(after[~small], before[~small])  # zeros and other cells unchanged
    np.testing.assert_array_equal(adjusted["count"].values, summed(cube, after))  # margins: sums of the interior
    assert check_additivity(adjusted).additive
    assert adjusted["count"].dtype == np.int64
    np.testing.assert_array_equal(adjusted["noise"].values, adjusted["count"].values - cube["count"].values)
    again = adjust_cube(cube, base, seed)  # a seeded run is deterministic
    np.testing.assert_array_equal(again["count"].values, adjusted["count"].values)


def test_the_adjustment_is_unbiased() -> None:
    """Each small count goes up with probability count / base, so the mean change is 0."""
    base, n = 5, 300
    counts = np.random.default_rng(1).integers(1, base, (n, n))
    tree = flat_tree("T", *(f"x{i}" for i in range(n)))
    cube = build_cube({"A": tree, "B": tree}, counts)
    change = (_inner(adjust_cube(cube, base, 20240501)) - counts).astype(np.float64)
    # The change of a count c is base - c with probability c / base and -c otherwise: mean 0,
    # variance c (base - c). A z-test on the sum, two-sided at alpha = 1e-6.
    z = change.sum() / np.sqrt((counts * (base - counts)).sum())
    assert abs(z) < Z_CRIT, z
    for c in range(1, base):  # and each count goes up with probability c / base (binomial z-test)
        up = change[counts == c] > 0
        p = c / base
        z_c = (up.sum() - up.size * p) / np.sqrt(up.size * p * (1 - p))
        assert abs(z_c) < Z_CRIT, (c, z_c)


@settings(max_examples=50, deadline=None)
@given(
    cells=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2**64 - 1)), min_size=2, max_size=12),
    others=st.lists(st.integers(0, 6), min_size=12, max_size=12),
    base=st.integers(2, 7),
)
def test_with_cell_keys_a_cell_is_adjusted_the_same_in_every_cube(
    cells: list[tuple[int, int]], others: list[int], base: int
) -> None:
    n = len(cells)
    counts = np.array([c for c, _ in cells], dtype=np.int64)
    keys = np.array([k for _, k in cells], dtype=np.uint64)
    first = _keyed(build_cube({"A": flat_tree("T", *(f"a{i}" for i in range(n)))}, counts, keys))
    # the same cells, reversed, in the first row of a two-dimensional cube with other cells beside them
    rows, cols = flat_tree("R", "r0", "r1"), flat_tree("C", *(f"c{i}" for i in range(n)))
    second_counts = np.stack([counts[::-1], np.array(others[:n], dtype=np.int64)])
    second_keys = np.stack([keys[::-1], np.arange(n, dtype=np.uint64) * np.uint64(2**60)])
    second = _keyed(build_cube({"R": rows, "C": cols}, second_counts, second_keys))
    a = _inner(adjust_cube(first, base, None))
    b = _inner(adjust_cube(second, base, None))
    np.testing.assert_array_equal(a, b[0, ::-1])


def test_cell_keys_decide_the_draw() -> None:
    counts = np.full(2000, 1, dtype=np.int64)
    keys = np.random.default_rng(3).integers(0, 2**64 - 1, 2000, dtype=np.uint64)
    cube = _keyed(build_cube({"A": flat_tree("T", *(f"a{i}" for i in range(2000)))}, counts, keys))
    u = keys.astype(np.float64) / 2.0**64
    np.testing.assert_array_equal(_inner(adjust_cube(cube, 3, None)), np.where(u < 1 / 3, 3, 0))


@pytest.mark.parametrize("base", [3, 40])
def test_a_release_adjusts_every_cube_through_the_config(tmp_path: Path, base: int) -> None:
    original, protected, steps = protect_tiny(tmp_path, f"  - {{method: small_cell_adjustment, base: {base}}}\n")
    assert public_step(steps[0]) == {
        "method": "small_cell_adjustment", "name": "small_cell_adjustment", "cubes": "all", "parameters": {"base": base},
    }  # fmt: skip
    assert set(protected) == {"c1", "c2", "hh"}
    adjusted = 0
    for cid, cube in protected.items():
        before, after = _inner(original[cid]), _inner(cube)
        small = (before > 0) & (before < base)
        adjusted += int(small.sum())
        assert np.all(np.isin(after[small], [0, base])), cid
        np.testing.assert_array_equal(after[~small], before[~small])
        published = cube["count"].values
        assert not ((published > 0) & (published < base)).any()  # no published small count, margins included
        assert check_additivity(cube).additive
        np.testing.assert_array_equal(cube["noise"].values, published - original[cid]["count"].values)
        assert cube.attrs["steps"] == ["small_cell_adjustment"]
    assert (adjusted > 0) == (base == 40)  # the tiny release (800 households) has inner counts below 40, none below 3


def test_a_seed_given_by_reference_stays_out_of_the_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CG_SCA_SEED", "987654321")
    runs = [
        protect_tiny(tmp_path / run, "  - {method: small_cell_adjustment, base: 40, seed: {env: CG_SCA_SEED}}\n")
        for run in ("one", "two")
    ]
    shown = public_step(runs[0][2][0])
    assert shown["parameters"] == {"base": 40}
    assert "987654321" not in json.dumps(shown) and "CG_SCA_SEED" not in json.dumps(shown)
    for cid, cube in runs[0][1].items():  # a seeded release is deterministic
        np.testing.assert_array_equal(cube["count"].values, runs[1][1][cid]["count"].values)
        assert not ((cube["count"].values > 0) & (cube["count"].values < 40)).any()


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ("  - {method: small_cell_adjustment}\n" + CELL_KEY_STEP,
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c1' \(and 2 more\) is protected again by steps\[1\] "
         r"\(cell_key\) after this step, so its counts would no longer add up or be free of counts from 1 to 2; "
         r"make this step the last of each cube it protects, or restrict 'cubes'"),
    ],
)  # fmt: skip
def test_each_mistake_gives_a_located_config_error(tmp_path: Path, steps: str, expected: str) -> None:
    found = config_problems(tmp_path, steps)
    assert len(found) == 1 and re.match(expected, found[0]), found


def test_the_adjustment_may_follow_another_step(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(TINY_CONFIG.replace(CELL_KEY_STEP, CELL_KEY_STEP + "  - {method: small_cell_adjustment}\n"))
    assert [s.method for s in load_release(path).config.steps] == ["cell_key", "small_cell_adjustment"]

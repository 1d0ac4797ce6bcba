"""Semi-controlled random rounding (Shlomo 2009, 3.2.1): exact controlled totals, zero bias, the release step, errors."""

from __future__ import annotations

import doctest
import math
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.cells import interior, leaf_index
from cubeguard.methods.semi_controlled_rounding import (
    SemiControlledRoundingStep,
    control_groups,
    kernel,
    round_cube,
    semi_controlled_round,
)
from cubeguard.publish.manifest import public_step
from tests.conftest import config_problems, protect_tiny
from tests.strategies import build_cube, cubes, flat_tree

CELL_KEY = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"
Z_1E6 = 4.89  # two-sided normal quantile for a false-positive rate of 1e-6 per test


def step(base: int = 3, control: list[str] | None = None, depth: int = 1) -> SemiControlledRoundingStep:
    return SemiControlledRoundingStep(
        method="semi_controlled_rounding", base=base, control=control or [], control_depth=depth
    )


def keyed(cube: xr.Dataset) -> xr.Dataset:
    """A test cube whose key sums read as binary record keys (as a tabulated cube says in its attributes)."""
    return cube.assign_attrs(key_scale="2^64")


def test_the_kernel_example_runs() -> None:
    outcome = doctest.testmod(kernel)
    assert outcome.attempted >= 1 and outcome.failed == 0


@settings(max_examples=150, deadline=None)
@given(
    counts=st.lists(st.integers(0, 30), min_size=1, max_size=60).map(lambda v: np.array(v, dtype=np.int64)),
    base=st.integers(1, 7),
    groups=st.integers(1, 4),
    seed=st.integers(0, 2**32),
)
def test_each_residual_class_rounds_its_expected_number_up_and_each_group_total_is_rounded(
    counts: np.ndarray, base: int, groups: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, groups, counts.size)
    rounded = semi_controlled_round(counts, base, rng.random(counts.size), group, rng.random(groups))
    low = counts - counts % base
    assert np.all((rounded == low) | (rounded == low + base))
    for g in range(groups):
        mine = group == g
        total = int(counts[mine].sum())
        assert int(rounded[mine].sum()) in (total - total % base, total - total % base + base)
        for r in range(1, base):
            cells = mine & (counts % base == r)
            expected = cells.sum() * r / base
            assert int((rounded[cells] > counts[cells]).sum()) in (math.floor(expected), math.ceil(expected))


def test_the_systematic_sample_takes_each_class_with_probability_its_fraction() -> None:
    """Over a grid of 6,000 starts the extra up-round of each class is taken for rest / base of them, exactly."""
    counts = np.array([1] * 4 + [2] * 5 + [3] * 2 + [4] * 7, dtype=np.int64)  # base 5: E = 0.8, 2.0, 1.2, 5.6
    base, starts = 5, np.arange(6000) / 6000
    up = np.array(
        [semi_controlled_round(counts, base, np.arange(18) / 18, np.zeros(18, np.int64), np.array([u])) > counts
         for u in starts]
    )  # fmt: skip
    per_class = {r: up[:, counts == r].sum(axis=1) for r in (1, 2, 3, 4)}
    expected = {1: 0.8, 2: 2.0, 3: 1.2, 4: 5.6}
    for r, k in per_class.items():
        assert abs(k.mean() - expected[r]) < 1e-9  # zero bias per residual class
        assert set(k.tolist()) <= {math.floor(expected[r]), math.ceil(expected[r])}


@settings(max_examples=80, deadline=None)
@given(cube=cubes(max_dims=3, max_count=30), base=st.integers(2, 6), seed=st.none() | st.integers(0, 2**32))
def test_a_rounded_cube_is_additive_and_its_total_is_adjacent(cube: xr.Dataset, base: int, seed: int | None) -> None:
    rounded = round_cube(keyed(cube), step(base), seed)
    assert check_additivity(rounded).additive
    published, original = rounded["count"].values, cube["count"].values
    assert np.all(published % base == 0)
    grand = original.flat[0]  # the first code of every dimension is its total
    assert published.flat[0] in (grand - grand % base, grand - grand % base + base)
    np.testing.assert_array_equal(rounded["noise"].values, published - original)


def _areas_cube(seed: int = 3) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    geo = flat_tree("T", "A", "B")
    geo = type(geo)(("T", "A", "A1", "A2", "B", "B1", "B2", "B3"), (-1, 0, 1, 1, 0, 4, 4, 4), (0, 1, 2, 2, 1, 2, 2, 2))
    sex = flat_tree("T", "M", "F")
    leaves = rng.integers(0, 9, (5, 2))
    return keyed(build_cube({"GEO": geo, "SEX": sex}, leaves, rng.integers(0, 2**64, (5, 2), dtype=np.uint64)))


def test_each_area_total_is_its_own_control() -> None:
    cube = _areas_cube()
    group, totals = control_groups(cube, ["GEO"], 1, leaf_index(cube))
    assert group[:, 0].tolist() == [0, 0, 1, 1, 1] and totals.tolist() == [1 * 3, 4 * 3]  # GEO A and B, SEX total
    for seed in range(50):
        rounded = round_cube(cube, step(3, ["GEO"]), seed)
        for area in ("A", "B"):
            before = int(cube["count"].sel(GEO=area, SEX="T"))
            assert int(rounded["count"].sel(GEO=area, SEX="T")) in (before - before % 3, before - before % 3 + 3)
        assert check_additivity(rounded).additive


def test_every_cell_is_unbiased_over_many_seeds() -> None:
    """Mean published interior over 3,000 seeds: within 4.89 standard errors of the original (rate 1e-6 each)."""
    cube = _areas_cube(8)
    index = leaf_index(cube)
    before = interior(cube["count"].values, index)
    runs = np.array([interior(round_cube(cube, step(3, ["GEO"]), s)["count"].values, index) for s in range(3000)])
    sd = runs.std(axis=0, ddof=1)
    assert np.all(np.abs(runs.mean(axis=0) - before) < Z_1E6 * np.where(sd > 0, sd, 1e-12) / math.sqrt(3000))


def test_a_release_rounds_semi_controlled_to_each_region(tmp_path: Path) -> None:
    line = "  - {method: semi_controlled_rounding, control: [GEO.2, GEO.1], control_depth: 1}\n"
    original, protected, steps = protect_tiny(tmp_path, line)
    assert public_step(steps[0])["parameters"] == {"base": 3, "control": ["GEO.2", "GEO.1"], "control_depth": 1}
    for cid, cube in protected.items():
        assert check_additivity(cube).additive and np.all(cube["count"].values % 3 == 0)
        for region in ("A", "B"):
            if "GEO.2" in cube.dims:
                first = {d: cube[d].values[0] for d in cube["count"].dims if d != "GEO.2"}
                before = int(original[cid]["count"].sel(**first, **{"GEO.2": region}))
                after = int(cube["count"].sel(**first, **{"GEO.2": region}))
                assert after in (before - before % 3, before - before % 3 + 3)


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ("  - {method: semi_controlled_rounding, control: [GEO.9]}\n",
         r"steps\[0\]\.control\[0\] \(c\.yaml line \d+\): unknown breakdown 'GEO\.9'"),
        ("  - {method: semi_controlled_rounding}\n" + CELL_KEY,
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c1' \(and 2 more\) is protected again by steps\[1\] "
         r"\(cell_key\) after this step, so its counts would no longer all be multiples of 3 and add up"),
    ],
)  # fmt: skip
def test_each_mistake_gives_a_located_config_error(tmp_path: Path, steps: str, expected: str) -> None:
    found = config_problems(tmp_path, steps)
    assert len(found) == 1 and re.match(expected, found[0]), found

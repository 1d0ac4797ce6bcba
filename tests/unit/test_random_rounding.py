"""Unbiased random rounding (Shlomo 2009, 3.2.1): invariants, unbiasedness, consistency, the release step, errors."""

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

from cubeguard.ckm.consistency import check_consistency
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.cells import interior, leaf_index, uniforms
from cubeguard.methods.random_rounding import kernel, random_round, round_cube
from cubeguard.publish.manifest import public_step
from tests.conftest import config_problems, protect_tiny
from tests.strategies import build_cube, cubes, flat_tree

CELL_KEY = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"
Z_1E6 = 4.89  # two-sided normal quantile for a false-positive rate of 1e-6 per test


def keyed(cube: xr.Dataset) -> xr.Dataset:
    """A test cube whose key sums read as binary record keys (as a tabulated cube says in its attributes)."""
    return cube.assign_attrs(key_scale="2^64")


def test_the_kernel_examples_run() -> None:
    outcome = doctest.testmod(kernel)
    assert outcome.attempted >= 1 and outcome.failed == 0


@settings(max_examples=100, deadline=None)
@given(cube=cubes(max_dims=3, max_count=40), base=st.integers(1, 7), seed=st.none() | st.integers(0, 2**32))
def test_every_cell_goes_to_an_adjacent_multiple_and_noise_is_the_change(
    cube: xr.Dataset, base: int, seed: int | None
) -> None:
    original = cube["count"].values
    rounded = round_cube(keyed(cube), base, "independent", seed)
    published = rounded["count"].values
    low = original - original % base
    assert np.all((published == low) | (published == low + base))
    assert np.all(published[original % base == 0] == original[original % base == 0])  # multiples stay
    np.testing.assert_array_equal(rounded["noise"].values, published - original)


@settings(max_examples=100, deadline=None)
@given(cube=cubes(max_dims=3, max_count=40), base=st.integers(2, 7), seed=st.none() | st.integers(0, 2**32))
def test_summed_margins_publish_an_additive_cube_of_multiples(cube: xr.Dataset, base: int, seed: int | None) -> None:
    rounded = round_cube(keyed(cube), base, "summed", seed)
    assert check_additivity(rounded).additive
    assert np.all(rounded["count"].values % base == 0)
    np.testing.assert_array_equal(rounded["noise"].values, rounded["count"].values - cube["count"].values)


@pytest.mark.parametrize("source", ["seeded stream", "cell keys"])
def test_each_residual_goes_up_with_probability_residual_over_base(source: str) -> None:
    """Binomial test per residual: the share rounded up is r / b (false-positive rate 1e-6 per residual)."""
    n, base = 60_000, 5
    rng = np.random.default_rng(20261126)
    counts = rng.integers(0, 50, n)
    if source == "seeded stream":
        u = np.random.default_rng(7).random(n)
    else:  # cell keys of random record-key sums, as the cube derives them
        dims = {
            "A": flat_tree("T", *[f"a{i}" for i in range(240)]),
            "B": flat_tree("T", *[f"b{i}" for i in range(250)]),
        }
        cube = build_cube(dims, counts.reshape(240, 250), rng.integers(0, 2**64, n, dtype=np.uint64).reshape(240, 250))
        u = interior(uniforms(keyed(cube), None), leaf_index(cube)).ravel()
    up = random_round(counts, base, u) > counts
    for r in range(1, base):
        cells = counts % base == r
        p = r / base
        z = (up[cells].mean() - p) / math.sqrt(p * (1 - p) / cells.sum())
        assert abs(z) < Z_1E6, (r, up[cells].mean())
    assert not up[counts % base == 0].any()


def test_the_expected_change_is_zero_over_many_seeds() -> None:
    """Mean change of one small table over 4,000 seeds: within 4.89 standard errors of 0 (rate 1e-6)."""
    counts = np.array([1, 2, 4, 7, 11, 0, 5, 8], dtype=np.int64)
    changes = np.array([random_round(counts, 3, np.random.default_rng(s).random(8)) - counts for s in range(4000)])
    mean, sd = changes.mean(axis=0), changes.std(axis=0, ddof=1)
    safe = np.where(sd > 0, sd, 1.0)
    assert np.all(np.abs(mean) < Z_1E6 * safe / math.sqrt(4000))


def test_a_seeded_rounding_is_deterministic_and_seeds_differ() -> None:
    cube = build_cube({"A": flat_tree("T", *[f"a{i}" for i in range(300)])}, np.arange(300) % 7)
    first = round_cube(cube, 3, "independent", 11)["count"].values
    np.testing.assert_array_equal(first, round_cube(cube, 3, "independent", 11)["count"].values)
    assert not np.array_equal(first, round_cube(cube, 3, "independent", 12)["count"].values)


def test_a_release_rounds_every_cube_and_shared_cells_agree(tmp_path: Path) -> None:
    original, protected, steps = protect_tiny(tmp_path, "  - {method: random_rounding, base: 3}\n")
    assert public_step(steps[0]) == {
        "method": "random_rounding", "name": "random_rounding", "cubes": "all",
        "parameters": {"base": 3, "margins": "independent"},
    }  # fmt: skip
    for cid, cube in protected.items():
        before = original[cid]["count"].values
        assert np.all(cube["count"].values % 3 == 0) and np.all(np.abs(cube["count"].values - before) < 3)
        np.testing.assert_array_equal(cube["noise"].values, cube["count"].values - before)
    consistency = check_consistency(protected)  # c1 and c2 share 12 cells: the same records, the same key
    assert consistency.pairs == 1 and consistency.shared_cells == 12 and consistency.ok


def test_the_seed_is_secret_and_may_come_by_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CG_RR_SEED", "40213")
    _, protected, steps = protect_tiny(
        tmp_path, "  - {method: random_rounding, margins: summed, seed: {env: CG_RR_SEED}}\n"
    )
    assert "40213" not in repr(steps[0]) and "seed" not in str(public_step(steps[0]))
    assert all(check_additivity(cube).additive for cube in protected.values())


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ("  - {method: random_rounding, margins: summed}\n" + CELL_KEY,
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c1' \(and 2 more\) is protected again by steps\[1\] "
         r"\(cell_key\) after this step, so its counts would no longer all be multiples of 3 and add up"),
    ],
)  # fmt: skip
def test_each_mistake_gives_a_located_config_error(tmp_path: Path, steps: str, expected: str) -> None:
    found = config_problems(tmp_path, steps)
    assert len(found) == 1 and re.match(expected, found[0]), found

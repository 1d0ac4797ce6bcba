"""Barnardisation (Hundepool et al. 2024, Handbook on SDC v2, 5.3): invariants, unbiasedness, the release step, errors."""

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
from cubeguard.methods.barnardisation import barnardise, barnardise_cube, kernel
from cubeguard.methods.cells import interior, leaf_index, summed
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


def test_the_uniform_picks_minus_one_zero_or_plus_one_and_a_one_may_become_zero() -> None:
    counts = np.array([1, 1, 1, 7, 7, 7, 0, 0], dtype=np.int64)
    u = np.array([0.099, 0.1, 0.9, 0.0, 0.5, 0.9, 0.0, 0.95])  # p = 0.2: -1 below 0.1, +1 from 0.9
    np.testing.assert_array_equal(barnardise(counts, u, 0.2), [0, 1, 2, 6, 7, 8, 0, 0])


@settings(max_examples=100, deadline=None)
@given(
    cube=cubes(max_dims=3, max_count=6),
    p=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**32),
)
def test_invariants_of_a_barnardised_cube(cube: xr.Dataset, p: float, seed: int) -> None:
    perturbed = barnardise_cube(cube, p, seed)
    before, after = _inner(cube), _inner(perturbed)
    assert np.all(np.abs(after - before) <= 1)  # n - 1, n or n + 1
    assert np.all(after >= 0)  # never below 0
    np.testing.assert_array_equal(after[before == 0], 0)  # zeros are not adjusted
    np.testing.assert_array_equal(perturbed["count"].values, summed(cube, after))  # margins: sums of the interior
    assert check_additivity(perturbed).additive
    assert perturbed["count"].dtype == np.int64
    np.testing.assert_array_equal(perturbed["noise"].values, perturbed["count"].values - cube["count"].values)
    again = barnardise_cube(cube, p, seed)  # a seeded run is deterministic
    np.testing.assert_array_equal(again["count"].values, perturbed["count"].values)


@pytest.mark.parametrize("p", [0.05, 0.5])
def test_barnardisation_is_unbiased_and_changes_a_share_p_of_the_cells(p: float) -> None:
    n = 300
    counts = np.random.default_rng(2).integers(1, 20, (n, n))
    tree = flat_tree("T", *(f"x{i}" for i in range(n)))
    cube = build_cube({"A": tree, "B": tree}, counts)
    change = (_inner(barnardise_cube(cube, p, 20240501)) - counts).astype(np.float64)
    # Each change is -1, 0, +1 with probabilities p/2, 1 - p, p/2: mean 0, variance p. z-tests on the
    # sum and on the number of changed cells (binomial n^2, p), two-sided at alpha = 1e-6.
    z_mean = change.sum() / np.sqrt(change.size * p)
    assert abs(z_mean) < Z_CRIT, z_mean
    changed = np.count_nonzero(change)
    z_share = (changed - change.size * p) / np.sqrt(change.size * p * (1 - p))
    assert abs(z_share) < Z_CRIT, z_share


@settings(max_examples=50, deadline=None)
@given(
    cells=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2**64 - 1)), min_size=2, max_size=12),
    others=st.lists(st.integers(0, 4), min_size=12, max_size=12),
    p=st.floats(0.05, 0.95),
)
def test_with_cell_keys_a_cell_is_perturbed_the_same_in_every_cube(
    cells: list[tuple[int, int]], others: list[int], p: float
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
    a = _inner(barnardise_cube(first, p, None))
    b = _inner(barnardise_cube(second, p, None))
    np.testing.assert_array_equal(a, b[0, ::-1])


def test_cell_keys_decide_the_draw() -> None:
    counts = np.full(2000, 5, dtype=np.int64)
    keys = np.random.default_rng(3).integers(0, 2**64 - 1, 2000, dtype=np.uint64)
    cube = _keyed(build_cube({"A": flat_tree("T", *(f"a{i}" for i in range(2000)))}, counts, keys))
    u = keys.astype(np.float64) / 2.0**64
    expected = 5 + (u >= 0.85).astype(np.int64) - (u < 0.15).astype(np.int64)
    np.testing.assert_array_equal(_inner(barnardise_cube(cube, 0.3, None)), expected)


def test_a_release_with_p_by_reference_perturbs_every_cube_and_shows_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CG_BARN_P", "0.375")
    original, protected, steps = protect_tiny(tmp_path, "  - {method: barnardisation, p: {env: CG_BARN_P}}\n")
    shown = public_step(steps[0])
    assert shown == {"method": "barnardisation", "name": "barnardisation", "cubes": "all", "parameters": {}}
    assert "CG_BARN_P" not in json.dumps(shown) and "0.375" not in json.dumps(shown)
    assert "0.375" not in repr(steps[0])
    assert set(protected) == {"c1", "c2", "hh"}
    changed = 0
    for cid, cube in protected.items():
        before, after = _inner(original[cid]), _inner(cube)
        assert np.all(np.abs(after - before) <= 1) and np.all(after >= 0), cid
        np.testing.assert_array_equal(after[before == 0], 0)
        changed += int(np.count_nonzero(after - before))
        assert check_additivity(cube).additive
        np.testing.assert_array_equal(cube["noise"].values, cube["count"].values - original[cid]["count"].values)
        assert cube.attrs["steps"] == ["barnardisation"]
    assert sum(np.count_nonzero(_inner(c)) for c in original.values()) == 33
    assert changed > 0  # 33 non-zero inner cells at p = 0.375: all unchanged has probability 0.625**33 < 2e-7


@pytest.mark.parametrize(
    ("steps", "env", "expected"),
    [
        ("  - {method: barnardisation, p: {env: CG_BARN_P}}\n", "1.5",  # checked once resolved, value not shown
         r"steps\[0\]\.p \(c\.yaml line \d+\): input should be less than 1; change the value$"),
        ("  - {method: barnardisation, p: 0.1}\n" + CELL_KEY_STEP, None,
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c1' \(and 2 more\) is protected again by steps\[1\] "
         r"\(cell_key\) after this step, so its counts would no longer add up; make this step the last of each "
         r"cube it protects, or restrict 'cubes'"),
        ("  - {method: barnardisation, p: 0.1, cubes: [c1]}\n  - {method: barnardisation, name: b2, p: 0.2}\n", None,
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c1' \(and 0 more\) is protected again by steps\[1\] \(b2\)"),
    ],
)  # fmt: skip
def test_each_mistake_gives_a_located_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: str, env: str | None, expected: str
) -> None:
    if env is not None:
        monkeypatch.setenv("CG_BARN_P", env)
    found = config_problems(tmp_path, steps)
    assert len(found) == 1 and re.match(expected, found[0]), found


def test_barnardisation_may_follow_another_step_and_share_the_release(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    steps = CELL_KEY_STEP + "  - {method: barnardisation, p: 0.1, cubes: [c1]}\n  - {method: identity, cubes: [c2]}\n"
    path.write_text(TINY_CONFIG.replace(CELL_KEY_STEP, steps))
    assert [s.method for s in load_release(path).config.steps] == ["cell_key", "barnardisation", "identity"]

"""Published bounds of the rounding-like methods: they hold on protected cubes and are as narrow as each rule allows.

Conventional, random, semi-controlled and controlled rounding, small cell adjustment (Handbook on
SDC v2, 5.5, 5.5.1; Shlomo 2009, 3.2.1) and Barnardisation (5.3). Each bound is checked on cubes
protected by the method's real ``prepare``, and against the set of originals its kernel can send
to each published count.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cubeguard.errors import CubeguardError
from cubeguard.methods.barnardisation import METHOD as BARNARD
from cubeguard.methods.barnardisation import BarnardisationStep, barnardise
from cubeguard.methods.bounds import interior_mask
from cubeguard.methods.controlled_rounding import METHOD as CONTROLLED
from cubeguard.methods.controlled_rounding import ControlledRoundingStep
from cubeguard.methods.conventional_rounding import METHOD as CONVENTIONAL
from cubeguard.methods.conventional_rounding import ConventionalRoundingStep, round_to_base
from cubeguard.methods.random_rounding import METHOD as RANDOM
from cubeguard.methods.random_rounding import RandomRoundingStep, random_round
from cubeguard.methods.semi_controlled_rounding import METHOD as SEMI
from cubeguard.methods.semi_controlled_rounding import SemiControlledRoundingStep
from cubeguard.methods.small_cell_adjustment import METHOD as SMALL
from cubeguard.methods.small_cell_adjustment import SmallCellAdjustmentStep, adjust_small_cells
from tests.bounds_helpers import assert_tight, large_cube, protect, support
from tests.strategies import cubes

SEEDS = st.none() | st.integers(0, 2**32)
EDGES = np.array([0.0, 0.999999])  # draws that send every count each way its kernel allows


def one(n: int) -> np.ndarray:
    return np.array([n], dtype=np.int64)


# --- hold on protected cubes -----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(cube=cubes(max_dims=3, max_count=40), base=st.integers(1, 8))
def test_conventional_rounding_bounds_hold(cube: xr.Dataset, base: int) -> None:
    protect(CONVENTIONAL, ConventionalRoundingStep(method="conventional_rounding", base=base), cube)


@settings(max_examples=60, deadline=None)
@given(
    cube=cubes(max_dims=3, max_count=40),
    base=st.integers(1, 7),
    margins=st.sampled_from(["independent", "summed"]),
    seed=SEEDS,
)
def test_random_rounding_bounds_hold(cube: xr.Dataset, base: int, margins: str, seed: int | None) -> None:
    step = RandomRoundingStep(method="random_rounding", base=base, margins=margins, seed=seed)  # type: ignore[arg-type]
    found = protect(RANDOM, step, cube)
    if margins == "summed":
        assert np.all(np.isinf(found.hi[~found.interior]))


@settings(max_examples=60, deadline=None)
@given(
    cube=cubes(max_dims=3, max_count=40),
    base=st.integers(1, 7),
    control=st.sampled_from([[], ["GEO.M"], ["SEX", "GEO.M"]]),
    depth=st.integers(0, 2),
    seed=SEEDS,
)
def test_semi_controlled_rounding_bounds_hold(
    cube: xr.Dataset, base: int, control: list[str], depth: int, seed: int | None
) -> None:
    step = SemiControlledRoundingStep(
        method="semi_controlled_rounding", base=base, control=control, control_depth=depth, seed=seed
    )
    protect(SEMI, step, cube)


@settings(max_examples=40, deadline=None)
@given(
    cube=cubes(max_dims=3, max_count=30),
    base=st.integers(2, 5),
    steps=st.integers(1, 3),
    fallback=st.sampled_from(["none", "rapid"]),
)
def test_controlled_rounding_bounds_hold(cube: xr.Dataset, base: int, steps: int, fallback: str) -> None:
    step = ControlledRoundingStep(
        method="controlled_rounding",
        base=base,
        steps=steps,
        fallback=fallback,
        time_limit_s=20.0,  # type: ignore[arg-type]
    )
    try:
        found = protect(CONTROLLED, step, cube)
    except CubeguardError:  # no rounding within the steps (fallback none): nothing is published
        assume(False)
        return
    if fallback == "none":
        assert np.all(np.isfinite(found.hi))


def test_controlled_rounding_bounds_hold_with_held_margins_and_blocks() -> None:
    """Held margin tables (rounded first, the grand total to its nearest multiple) and a partitioned cube stay within K b - 1."""
    cube = large_cube(3, groups=4, per_group=5, width=12)
    for kw in ({"hold": [["GEO.M"]]}, {"partition_above_cells": 50, "block_cells": 40, "steps": 2}):
        protect(CONTROLLED, ControlledRoundingStep.model_validate({"method": "controlled_rounding"} | kw), cube)


@settings(max_examples=60, deadline=None)
@given(cube=cubes(max_dims=3, max_count=12), base=st.integers(2, 6), seed=SEEDS)
def test_small_cell_adjustment_bounds_hold(cube: xr.Dataset, base: int, seed: int | None) -> None:
    protect(SMALL, SmallCellAdjustmentStep(method="small_cell_adjustment", base=base, seed=seed), cube)


@settings(max_examples=60, deadline=None)
@given(cube=cubes(max_dims=3, max_count=12), p=st.floats(0.05, 0.95), seed=SEEDS)
def test_barnardisation_bounds_hold(cube: xr.Dataset, p: float, seed: int | None) -> None:
    protect(BARNARD, BarnardisationStep(method="barnardisation", p=p, seed=seed), cube)


# --- as narrow as each rule allows -----------------------------------------------------------


@pytest.mark.parametrize("base", [1, 2, 3, 4, 5, 10])
def test_conventional_rounding_bounds_are_the_counts_that_round_to_each_value(base: int) -> None:
    """Base 5: ``p - 2 .. p + 2``; base 4: ``p - 2 .. p + 1`` (halves go up); base 1: exact."""
    found = support(lambda n: round_to_base(one(n), base).tolist(), range(0, 200))
    bounds = CONVENTIONAL.bounds(ConventionalRoundingStep(method="conventional_rounding", base=base))  # type: ignore[misc]
    assert_tight(bounds, found, range(0, 150))
    lo, hi = bounds(np.array([20 * base]), np.array([True]))
    assert (hi - lo).tolist() == [base - 1]


@pytest.mark.parametrize("margins", ["independent", "summed"])
@pytest.mark.parametrize("base", [1, 2, 3, 5])
def test_random_rounding_bounds_are_the_adjacent_multiples_reach(base: int, margins: str) -> None:
    """A published ``p >= b`` comes from ``p - b + 1 .. p + b - 1``: width ``2b - 2``, zeros not kept."""
    found = support(lambda n: random_round(np.full(2, n), base, EDGES).tolist(), range(0, 200))
    step = RandomRoundingStep(method="random_rounding", base=base, margins=margins)  # type: ignore[arg-type]
    bounds = RANDOM.bounds(step)  # type: ignore[misc]
    assert_tight(bounds, found, range(0, 150))
    lo, hi = bounds(np.array([10 * base, 10 * base]), np.array([True, False]))
    assert (hi - lo)[0] == 2 * base - 2
    assert np.isinf(hi[1]) == (margins == "summed")


def test_random_and_semi_controlled_rounding_reach_both_ends_on_a_cube() -> None:
    """Some inner cell lies ``b - 1`` below, some ``b - 1`` above its published value: the bound cannot be narrower."""
    base, cube = 5, large_cube(11)
    for method, step in (
        (RANDOM, RandomRoundingStep(method="random_rounding", base=base, seed=4)),
        (SEMI, SemiControlledRoundingStep(method="semi_controlled_rounding", base=base, control=["GEO.M"], seed=4)),
    ):
        found = protect(method, step, cube)
        inner = found.interior & (found.published >= base)
        assert np.any(found.original[inner] == found.lo[inner])
        assert np.any(found.original[inner] == found.hi[inner])
        np.testing.assert_array_equal((found.hi - found.lo)[inner], 2 * base - 2)


@pytest.mark.parametrize("steps", [1, 2, 3])
def test_controlled_rounding_bounds_are_k_bases_less_one(steps: int) -> None:
    base = 3
    bounds = CONTROLLED.bounds(ControlledRoundingStep(method="controlled_rounding", base=base, steps=steps))  # type: ignore[misc]
    lo, hi = bounds(np.array([0, 30, 30]), np.array([True, True, False]))
    assert lo.tolist() == [0, 30 - steps * base + 1, 30 - steps * base + 1]
    assert hi.tolist() == [steps * base - 1, 30 + steps * base - 1, 30 + steps * base - 1]


def test_zero_restricted_controlled_rounding_reaches_both_ends_on_a_cube() -> None:
    """With ``steps: 1`` some cell, a total or not, is ``b - 1`` below and some ``b - 1`` above its published value."""
    found = protect(
        CONTROLLED, ControlledRoundingStep(method="controlled_rounding", base=3), large_cube(5, 12, 3, 4, 8)
    )
    assert np.any(found.original == found.lo) and np.any(found.original == found.hi)
    assert np.all(found.hi[found.published >= 3] - found.lo[found.published >= 3] == 4)


def test_small_cell_adjustment_bounds_are_what_the_adjustment_reaches() -> None:
    """An inner 0 comes from ``0 .. b - 1``, ``b`` from ``1 .. b``, other counts are exact; ``1 .. b - 1`` never appear."""
    base = 4
    found = support(lambda n: adjust_small_cells(np.full(2, n), EDGES, base).tolist(), range(0, 60))
    bounds = SMALL.bounds(SmallCellAdjustmentStep(method="small_cell_adjustment", base=base))  # type: ignore[misc]
    assert_tight(bounds, found, range(0, 50))
    lo, hi = bounds(np.array([0, 4, 7, 7]), np.array([True, True, True, False]))
    assert lo.tolist() == [0, 1, 7, 0] and hi.tolist() == [3, 4, 7, np.inf]
    assert not set(found) & {1, 2, 3}
    lo, hi = bounds(np.array([1, 2, 3]), np.ones(3, dtype=bool))  # never published: nothing learnt
    assert lo.tolist() == [0, 0, 0] and np.all(np.isinf(hi))


def test_barnardisation_bounds_are_one_either_side_and_zeros_kept() -> None:
    found = support(lambda n: barnardise(np.full(3, n), np.array([0.0, 0.5, 0.999]), 0.5).tolist(), range(0, 60))
    bounds = BARNARD.bounds(BarnardisationStep(method="barnardisation", p=0.1))  # type: ignore[misc]
    assert_tight(bounds, found, range(0, 50))
    lo, hi = bounds(np.array([0, 1, 9, 9]), np.array([True, True, True, False]))
    assert lo.tolist() == [0, 1, 8, 0] and hi.tolist() == [1, 2, 10, np.inf]


def test_the_interior_mask_is_the_leaf_cells() -> None:
    cube = large_cube(1, groups=2, per_group=3, width=4)
    mask = interior_mask(cube)
    assert mask.shape == cube["count"].shape and mask.sum() == 6 * 4
    assert not mask[0].any() and not mask[:, 0].any()  # the totals come first in pre-order

"""Whether a zero-restricted controlled rounding exists (CP-SAT), and what the release step does with the answer."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cubeguard.cubes.tree import DimHierarchy, hierarchies
from cubeguard.errors import CubeguardError
from cubeguard.methods.controlled_rounding import REPORT_ATTR, ControlledRoundingStep, existence, method, round_cube
from cubeguard.methods.controlled_rounding.existence import zero_restricted
from cubeguard.methods.controlled_rounding.kernel import Solution, additivity_rows, controlled_round
from tests.strategies import build_cube, cubes, two_level_tree


def _table(cube: xr.Dataset) -> tuple[np.ndarray, list[DimHierarchy]]:
    found = hierarchies(cube)
    return cube["count"].values.astype(np.int64), [found[str(d)] for d in cube["count"].dims]


def _census(seed: int) -> xr.Dataset:
    """Three two-level hierarchies of census-like counts (2 x 3 leaves each): none has a zero-restricted rounding here."""
    trees = {f"V{k}": two_level_tree(f"v{k}", 2, 3) for k in range(3)}
    rng = np.random.default_rng(seed)
    return build_cube(trees, rng.poisson(rng.gamma(0.5, 6.0, (6, 6, 6)))).assign_attrs(cube_id="c5")


def _step(**kwargs: object) -> ControlledRoundingStep:
    return ControlledRoundingStep(method="controlled_rounding", base=3, **kwargs)  # type: ignore[arg-type]


def test_the_examples_run() -> None:
    outcome = doctest.testmod(existence)
    assert outcome.attempted >= 2 and outcome.failed == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(cube=cubes(max_dims=3, max_count=12).filter(lambda c: 8 <= c["count"].size <= 300), base=st.integers(2, 4))
def test_the_answer_agrees_with_highs_and_a_found_rounding_is_valid(cube: xr.Dataset, base: int) -> None:
    counts, hier = _table(cube)
    found = zero_restricted(counts, hier, base, 30.0)
    highs = controlled_round(counts, hier, base, 1, "first_feasible", 30.0)
    assert found.answer == ("exists" if highs.published is not None else "none"), highs.status
    if found.published is not None:
        published = found.published.reshape(counts.shape)
        assert not np.any(additivity_rows(hier) @ published.ravel())
        assert np.all(published % base == 0) and np.all(np.abs(published - counts) < base)


def test_a_held_cell_off_the_base_leaves_no_rounding() -> None:
    counts, hier = _table(_census(1))
    fixed = np.full(counts.shape, -1)
    fixed[(0,) * 3] = 3 * 100 + 1  # the grand total held off the base
    assert zero_restricted(counts, hier, 3, 10.0, fixed).answer == "none"


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(method, "EXISTENCE_CELLS", (0, 10**6))  # ask CP-SAT for the small test tables too


@pytest.mark.usefixtures("checked")
def test_one_step_is_refused_with_proof_when_no_zero_restricted_rounding_exists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cube = _census(0)
    with monkeypatch.context() as patched:
        patched.setattr(method, "controlled_round", lambda *_, **__: pytest.fail("HiGHS was asked"))
        with pytest.raises(CubeguardError) as info:
            round_cube(cube, _step(steps=1))
    assert str(info.value) == (
        "cube 'c5' has no controlled rounding to base 3 with every cell within 1 step(s) of its count; raise "
        "'steps' of step 'controlled_rounding' (e.g. to 2)"
    )
    out = json.loads(round_cube(cube, _step(steps=2)).attrs[REPORT_ATTR])
    assert out["zero_restricted"] == "none" and out["steps_used"] == 2 and out["status"] == "optimal"


@pytest.mark.usefixtures("checked")
def test_the_zero_restricted_rounding_found_is_published_when_highs_finds_none(monkeypatch: pytest.MonkeyPatch) -> None:
    cube = _census(0).isel(V2=0, drop=True).assign_attrs(cube_id="c2")  # two dimensions: always a rounding
    counts, hier = _table(cube)

    def no_solution(*_: object, **__: object) -> Solution:
        return Solution(None, "no_solution", None, None, None, counts.size, 0, 0, 0.0, 0.0)

    monkeypatch.setattr(method, "controlled_round", no_solution)
    out = round_cube(cube, _step(steps=2, stop="first_feasible"))
    report = json.loads(out.attrs[REPORT_ATTR])
    assert report["zero_restricted"] == "exists" and report["status"] == "first_feasible" and report["steps_used"] == 1
    published = out["count"].values
    assert not np.any(additivity_rows(hier) @ published.ravel())
    assert np.all(published % 3 == 0) and np.all(np.abs(published - counts) < 3)
    assert report["objective"] == int(np.abs(published - counts).sum())


def test_small_tables_are_left_to_highs() -> None:
    out = json.loads(round_cube(_census(0), _step(steps=2)).attrs[REPORT_ATTR])
    assert out["zero_restricted"] is None and out["steps_used"] == 2

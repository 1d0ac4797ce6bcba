"""Invariant stochastic perturbation (Shlomo 2009, 3.2.2): invariant matrices, exact moves and totals, IPF, the step, errors."""

from __future__ import annotations

import doctest
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.errors import CubeguardError
from cubeguard.gates.additivity import check_additivity
from cubeguard.methods.cells import interior, leaf_index
from cubeguard.methods.stochastic_perturbation import (
    METHOD,
    REPORT_ATTR,
    Perturbation,
    StochasticPerturbationStep,
    base_matrix,
    hold,
    invariant_matrix,
    ipf,
    kernel,
    matrix,
    method,
    perturb,
    restore,
    transition_counts,
)
from cubeguard.publish.manifest import public_step
from tests.conftest import config_problems, protect_tiny
from tests.strategies import build_cube, flat_tree, two_level_tree

Z_1E6 = 4.89  # two-sided normal quantile for a false-positive rate of 1e-6 per test
STEP = "  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, control: [GEO.2, GEO.1]}\n"


def step(**kw: object) -> StochasticPerturbationStep:
    return StochasticPerturbationStep.model_validate(
        {"method": "stochastic_perturbation", "diagonal": 0.6, "band": 2} | kw
    )


def keyed(cube: xr.Dataset) -> xr.Dataset:
    return cube.assign_attrs(key_scale="2^64")


@pytest.mark.parametrize("module", [matrix, kernel, restore, hold])
def test_the_examples_run(module: object) -> None:
    outcome = doctest.testmod(module)
    assert outcome.attempted >= 1 and outcome.failed == 0


@settings(max_examples=200, deadline=None)
@given(
    t=st.lists(st.integers(0, 5000), min_size=2, max_size=16).map(lambda v: np.array(v, dtype=np.int64)),
    diagonal=st.floats(0.05, 0.95),
    band=st.integers(1, 6),
)
def test_the_invariant_matrix_is_stochastic_and_keeps_the_distribution(
    t: np.ndarray, diagonal: float, band: int
) -> None:
    p = base_matrix(t.size, diagonal, band)
    assert np.all(p >= 0) and np.allclose(p.sum(axis=1), 1.0, atol=1e-12)
    r = invariant_matrix(p, t.astype(np.float64))
    assert np.all(r >= -1e-15) and np.allclose(r.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(t @ r, t, rtol=1e-12, atol=1e-12 * max(1, t.sum()))


@settings(max_examples=200, deadline=None)
@given(
    t=st.lists(st.integers(0, 300), min_size=2, max_size=12).map(lambda v: np.array(v, dtype=np.int64)),
    diagonal=st.floats(0.05, 0.95),
    band=st.integers(1, 4),
    u=st.floats(0.0, 1.0, exclude_max=True),
)
def test_the_move_counts_are_floors_or_ceilings_with_both_margins_exact(
    t: np.ndarray, diagonal: float, band: int, u: float
) -> None:
    r = invariant_matrix(base_matrix(t.size, diagonal, band), t.astype(np.float64))
    moves = transition_counts(t, r, u)
    expected = t[:, None] * r
    assert np.all(moves >= np.floor(expected - 1e-9)) and np.all(moves <= np.ceil(expected + 1e-9))
    np.testing.assert_array_equal(moves.sum(axis=1), t)
    np.testing.assert_array_equal(moves.sum(axis=0), t)


def test_the_move_counts_are_unbiased() -> None:
    """Mean move counts over 3,000 group draws: within 4.89 standard errors of t R (rate 1e-6 per entry)."""
    t = np.array([7, 3, 0, 2, 5, 1], dtype=np.int64)
    r = invariant_matrix(base_matrix(t.size, 0.4, 2), t.astype(np.float64))
    runs = np.array([transition_counts(t, r, u) for u in np.random.default_rng(9).random(3000)], dtype=np.float64)
    expected, sd = t[:, None] * r, runs.std(axis=0, ddof=1)
    fractional = (expected % 1 > 1e-6) & (expected % 1 < 1 - 1e-6)
    assert fractional.sum() >= 10 and np.all(sd[fractional] > 0)
    assert np.all(np.abs(runs.mean(axis=0) - expected) <= Z_1E6 * np.maximum(sd, 1e-12) / math.sqrt(3000) + 1e-9)


@settings(max_examples=120, deadline=None)
@given(
    values=st.lists(st.integers(0, 14), min_size=1, max_size=200).map(lambda v: np.array(v, dtype=np.int64)),
    groups=st.integers(1, 3),
    cap=st.integers(2, 10),
    zeros=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_each_group_moves_exactly_the_designed_counts(
    values: np.ndarray, groups: int, cap: int, zeros: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    group, u, group_u = rng.integers(0, groups, values.size), rng.random(values.size), rng.random(groups)
    spec = Perturbation(0 if zeros else 1, cap, 0.5, 2)
    out = perturb(values, u, group, group_u, spec)
    outside = (values < spec.low) | (values > spec.cap)
    np.testing.assert_array_equal(out[outside], values[outside])
    for g in range(groups):
        mine = (group == g) & ~outside
        t = np.bincount(values[mine] - spec.low, minlength=spec.states)
        r = invariant_matrix(base_matrix(spec.states, 0.5, 2), t.astype(np.float64))
        design = transition_counts(t, r, group_u[g])
        realised = np.zeros_like(design)
        np.add.at(realised, (values[mine] - spec.low, out[mine] - spec.low), 1)
        np.testing.assert_array_equal(realised, design)
        assert out[group == g].sum() == values[group == g].sum()  # the group's total is exact


def test_each_cell_moves_with_the_invariant_probability() -> None:
    """Each of 12 ones becomes a two with probability R[1, 2] over 4,000 draws (4.89 sd; rate 1e-6 per cell)."""
    values = np.array([1] * 12 + [2] * 6 + [3] * 4, dtype=np.int64)
    spec = Perturbation(1, 3, 0.6, 1)
    t = np.bincount(values - 1)
    share = invariant_matrix(base_matrix(3, 0.6, 1), t.astype(np.float64))[0, 1]
    rng = np.random.default_rng(11)
    group = np.zeros(values.size, np.int64)
    runs = np.array(
        [perturb(values, rng.random(values.size), group, rng.random(1), spec)[:12] == 2 for _ in range(4000)]
    )
    sd = math.sqrt(share * (1 - share) / 4000)
    assert 0 < share < 1 and np.all(np.abs(runs.mean(axis=0) - share) < Z_1E6 * sd)


def test_ipf_fits_every_margin_table_and_keeps_zeros() -> None:
    rng = np.random.default_rng(5)
    start = rng.integers(0, 6, (4, 3, 5)).astype(np.float64)
    start[0, 0, :] = 0
    truth = start + rng.integers(0, 3, start.shape) * (start > 0)
    tables = [restore.table_over(truth, [0, 1]), restore.table_over(truth, [2])]
    fit = ipf(start.ravel(), tables, 1e-9, 500)
    assert fit.converged and fit.max_gap <= 1e-9
    np.testing.assert_allclose(fit.fitted.reshape(start.shape).sum(axis=2), truth.sum(axis=2), atol=1e-8)
    np.testing.assert_allclose(fit.fitted.reshape(start.shape).sum(axis=(0, 1)), truth.sum(axis=(0, 1)), atol=1e-8)
    np.testing.assert_array_equal(fit.fitted[start.ravel() == 0], 0)


def _areas_cube(seed: int = 3) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    geo = two_level_tree("G", 2, 6)
    dims = {"GEO": geo, "AGE": two_level_tree("A", 3, 4), "SEX": flat_tree("S", "M", "F")}
    shape = (12, 12, 2)
    counts = rng.poisson(rng.gamma(0.6, 6.0, shape))
    return keyed(build_cube(dims, counts, rng.integers(0, 2**64, shape, dtype=np.uint64)))


def test_a_perturbed_cube_is_additive_and_keeps_each_area_total_and_distribution() -> None:
    cube = _areas_cube()
    out = METHOD.prepare(step(control=["GEO"]))(cube)
    assert check_additivity(out).additive
    index = leaf_index(cube)
    before, after = interior(cube["count"].values, index), interior(out["count"].values, index)
    for area in ("G0", "G1"):
        assert int(out["count"].sel(GEO=area, AGE="A_T", SEX="S")) == int(
            cube["count"].sel(GEO=area, AGE="A_T", SEX="S")
        )
    np.testing.assert_array_equal(np.bincount(after.ravel(), minlength=200), np.bincount(before.ravel(), minlength=200))
    small = (before >= 1) & (before <= 2)
    assert np.count_nonzero(after[small] != before[small]) > 0
    np.testing.assert_array_equal(after[before > 10], before[before > 10])
    np.testing.assert_array_equal(out["noise"].values, out["count"].values - cube["count"].values)
    assert json.loads(out.attrs[REPORT_ATTR]) == {"groups": 2, "fitted_tables": 0}


def test_the_same_keys_give_the_same_release() -> None:
    cube = _areas_cube(4)
    a, b = (METHOD.prepare(step(control=["GEO"]))(cube) for _ in range(2))
    np.testing.assert_array_equal(a["count"].values, b["count"].values)
    seeded = METHOD.prepare(step(control=["GEO"], seed=7))(cube)
    assert not np.array_equal(seeded["count"].values, a["count"].values)


@pytest.mark.parametrize("rounding", ["controlled", "interior", "every_cell"])
def test_fitting_brings_back_the_named_margins_that_hold_no_perturbed_count(rounding: str) -> None:
    """The fitted tables are perturbed first (see the intruder test below); these have no count of 1 to 10, so stay."""
    cube = _areas_cube(6)
    out = METHOD.prepare(step(control=["GEO"], fit=[["AGE"], ["GEO", "SEX"], ["EDU"]], rounding=rounding))(cube)
    report = json.loads(out.attrs[REPORT_ATTR])
    assert report["fitted_tables"] == 2 and report["ipf_converged"] and report["rounding"] == rounding  # no EDU here
    original, published = cube["count"], out["count"]
    assert original.sel(GEO="G_T", SEX="S").min() > 10 and original.sel(AGE="A_T").min() > 10  # none in 1..cap
    by_age = (published.sel(GEO="G_T", SEX="S") - original.sel(GEO="G_T", SEX="S")).values
    by_area = (published.sel(AGE="A_T") - original.sel(AGE="A_T")).values
    for area in ("G0", "G1"):  # the control totals are fitted too (nearest rounding of the interior drifts)
        kept = int(published.sel(GEO=area, AGE="A_T", SEX="S")) == int(original.sel(GEO=area, AGE="A_T", SEX="S"))
        assert kept or rounding == "interior"
    if rounding == "interior":  # nearest-integer rounding of 24 cells per age: the fit drifts back
        assert np.abs(by_age).max() <= 12 and np.abs(by_age).max() > 0
    else:
        assert not by_age.any() and not by_area.any()
    if rounding != "every_cell":  # every_cell rounds each total on its own: close to additive, not exactly
        assert check_additivity(out).additive


def test_controlled_integers_keep_every_fitted_margin_or_say_none_exists() -> None:
    rng = np.random.default_rng(2)
    start = rng.integers(1, 9, (5, 4, 3)).astype(np.float64)
    truth = start + rng.integers(-1, 2, start.shape)
    tables = [restore.table_over(truth, [0]), restore.table_over(truth, [1, 2])]
    fitted = ipf(start.ravel(), tables, 1e-10, 1000).fitted
    out = restore.controlled_integers(fitted, tables)
    assert out is not None and np.all(np.abs(out - fitted) < 1)
    for table in tables:
        np.testing.assert_array_equal(table.sums(out.astype(np.float64)), table.target)
    # Halves on the even cells of a 2 x 2 x 2 table: every one-way margin cell is 1, but no 0/1 choice gives that.
    even = np.zeros((2, 2, 2))
    even[0, 0, 0] = even[0, 1, 1] = even[1, 0, 1] = even[1, 1, 0] = 0.5
    assert restore.controlled_integers(even.ravel(), [restore.table_over(even, [a]) for a in range(3)]) is None


def test_a_fit_that_cannot_be_kept_exact_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(method, "controlled_integers", lambda fitted, tables, limit: None)
    with pytest.raises(
        CubeguardError,
        match=r"cube '\?': HiGHS found no rounding of the fitted cells that keeps every cell of the 2 margin tables of "
        r"'fit' of step 'stochastic_perturbation' and the control totals exact \(none exists, or none within 600 s\); "
        r"fit fewer tables, or set 'rounding' to 'interior'$",
    ):
        METHOD.prepare(step(fit=[["AGE"], ["SEX"]]))(_areas_cube())


GROUP = ["GEO", "SEX", "AGE"]


def _programme(seed: int) -> dict[str, xr.Dataset]:
    """Cubes of one population over GEO x SEX x AGE x EDU and some of its margins, with consistent cell keys."""
    rng = np.random.default_rng(seed)
    trees = {
        "GEO": two_level_tree("G", 2, 4), "SEX": flat_tree("S", "M", "F"), "AGE": two_level_tree("A", 2, 3),
        "EDU": flat_tree("E", "e1", "e2", "e3"),
    }  # fmt: skip
    counts = rng.poisson(rng.gamma(0.6, 5.0, (8, 2, 6, 3)))
    keys = rng.integers(0, 2**64, counts.shape, dtype=np.uint64)
    out = {}
    for name in ("GSAE", "GSA", "GSE", "GS", "AE", "A"):
        dims = [d for d in trees if d[0] in name]
        axes = tuple(k for k, d in enumerate(trees) if d not in dims)
        cube = build_cube({d: trees[d] for d in dims}, counts.sum(axis=axes), keys.sum(axis=axes, dtype=np.uint64))
        out[name] = keyed(cube).assign_attrs(cube_id=name, population="persons", variables={d: d for d in dims})
    return out


def _covered_pairs_agree(out: dict[str, xr.Dataset]) -> tuple[int, int]:
    """(shared cells of pairs whose shared variables all lie in GROUP, how many of them differ)."""
    from itertools import combinations

    from cubeguard.ckm.consistency import check_consistency

    shared = differing = 0
    for (a, x), (b, y) in combinations(sorted(out.items()), 2):
        if set(x["count"].dims) & set(y["count"].dims) <= set(GROUP):
            report = check_consistency({a: x, b: y})
            shared, differing = shared + report.shared_cells, differing + report.mismatches
    return shared, differing


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("edu", [["EDU"], ["EDU", "SEX"]])  # outside the group, or sharing SEX with it
def test_held_margins_publish_a_shared_cell_the_same_in_every_cube(seed: int, edu: list[str]) -> None:
    cubes = _programme(seed)
    chosen = step(control=["GEO"], hold=[GROUP], fit=[edu, ["SEX", "AGE"]])
    out = {cid: METHOD.prepare(chosen)(cube) for cid, cube in cubes.items()}
    shared, differing = _covered_pairs_agree(out)
    assert shared > 100 and differing == 0
    for cid, cube in out.items():
        assert check_additivity(cube).additive, cid
        if "GEO" in cube.dims:  # the control totals are the original ones
            areas = {d: cube[d].values[0] for d in cube["count"].dims if d != "GEO"}
            for area in ("G0", "G1"):
                assert int(cube["count"].sel(GEO=area, **areas)) == int(cubes[cid]["count"].sel(GEO=area, **areas))
    full = json.loads(out["GSAE"].attrs[REPORT_ATTR])
    assert full["held_tables"] == 7 and full["fitted_tables"] == 2  # GEO x SEX x AGE, and the EDU table
    edu = (out["GSAE"]["count"] - cubes["GSAE"]["count"]).sel(GEO="G_T", SEX="S", AGE="A_T")
    assert not edu.values.any()  # the EDU table is perturbed too, but its counts are all above 10


def test_without_hold_some_shared_cell_differs_between_cubes() -> None:
    differing = 0
    for seed in range(4):
        cubes = _programme(seed)
        out = {cid: METHOD.prepare(step(control=["GEO"]))(cube) for cid, cube in cubes.items()}
        differing += _covered_pairs_agree(out)[1]
    assert differing > 0  # so the test above is not met by chance


def test_a_held_margin_without_a_rounding_names_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(method, "controlled_integers", lambda fitted, tables, limit: None)
    with pytest.raises(CubeguardError) as info:
        METHOD.prepare(step(hold=[["SEX", "AGE"]]))(_areas_cube().assign_attrs(cube_id="c9"))
    assert str(info.value) == (
        "cube 'c9': HiGHS found no rounding of the perturbed margin table over AGE x SEX named in 'hold' of step "
        "'stochastic_perturbation' that keeps its own held margins and control totals exact (none exists, or none "
        "within 600 s), so other cubes could publish it differently; hold fewer breakdowns"
    )


def test_a_fitted_margin_without_a_rounding_names_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(method, "controlled_integers", lambda fitted, tables, limit: None)
    with pytest.raises(CubeguardError) as info:  # GEO is perturbed first (no rounding needed), then GEO x AGE
        METHOD.prepare(step(control=["GEO"], fit=[["GEO", "SEX"], ["GEO", "AGE"]]))(
            _areas_cube().assign_attrs(cube_id="c9")
        )
    assert str(info.value) == (
        "cube 'c9': HiGHS found no rounding of the perturbed margin table over AGE x GEO named in 'fit' of step "
        "'stochastic_perturbation' that keeps its own margins and the control totals exact (none exists, or none "
        "within 600 s), so it cannot be published perturbed; fit fewer or smaller tables"
    )


def _sparse_cube(seed: int) -> xr.Dataset:
    """GEO (2 regions of 4 areas) x SEX x AGE (6) x EDU (4), 0.45 persons a cell: its GEO x SEX x AGE margin is small."""
    rng = np.random.default_rng(seed)
    dims = {
        "GEO": two_level_tree("G", 2, 4), "SEX": flat_tree("S", "M", "F"), "AGE": two_level_tree("A", 2, 3),
        "EDU": flat_tree("E", "e1", "e2", "e3", "e4"),
    }  # fmt: skip
    counts = rng.poisson(0.45, (8, 2, 6, 4))
    return keyed(build_cube(dims, counts, rng.integers(0, 2**64, counts.shape, dtype=np.uint64)))


def _published_margin(cube: xr.Dataset) -> np.ndarray:
    """What an intruder reads: the GEO x SEX x AGE cells of ``cube`` at the EDU total."""
    index = leaf_index(cube)
    return cube["count"].sel(EDU="E").values[np.ix_(*index[:3])]


def _old_fit(cube: xr.Dataset) -> np.ndarray:
    """The interior as ``fit`` published it before: perturbed, fitted to the original margin, rounded to keep it exact."""
    index = leaf_index(cube)
    original = interior(cube["count"].values, index).astype(np.float64)
    moved = interior(METHOD.prepare(step(control=["GEO"]))(cube)["count"].values, index).astype(np.float64)
    tables = [restore.table_over(original, [0, 1, 2])]  # its cells nest in the regions: the controls are kept
    out = restore.controlled_integers(ipf(moved.ravel(), tables, 1e-9, 100).fitted, tables)
    assert out is not None
    return out.reshape(original.shape).sum(axis=3)


def _kept_by_pram(margin: np.ndarray, low: int, high: int) -> float:
    """Expected number of cells of ``margin`` in ``low .. high`` the invariant PRAM of each region leaves alone."""
    kept = 0.0
    for region in (margin[:4], margin[4:]):  # the control groups: GEO's regions
        t = np.bincount(region[(region >= 1) & (region <= 10)].ravel() - 1, minlength=10).astype(np.float64)
        r = invariant_matrix(base_matrix(10, 0.6, 2), t)
        kept += float(sum(t[v - 1] * r[v - 1, v - 1] for v in range(low, high + 1)))
    return kept


def test_a_fitted_margin_publishes_its_small_cells_no_more_often_than_pram_keeps_them() -> None:
    """Intruder test: how many of the 1s and 2s of a fitted GEO x SEX x AGE margin the published cube shows unchanged.

    Before, ``fit`` fitted the cube to the original margin: 100 % of them (checked here on that path).
    Now the margin is perturbed first, as a held table is: each small cell stays with the invariant
    matrix's R[v, v] (diagonal 0.6, band 2; about 0.5 here), as an interior cell does. Over 20 cubes
    (about 1,100 small margin cells; fixed cell keys) the share kept must not exceed the PRAM's
    expected share by more than 4.75 binomial standard errors: a one-sided false-positive rate of
    1e-6 if cells stayed independently; the moves are fixed per value and region, which only
    lowers the variance.
    """
    fitted = step(control=["GEO"], fit=[["GEO", "SEX", "AGE"]])
    small = kept = kept_before = 0
    expected = 0.0
    for seed in range(20):
        cube = _sparse_cube(seed)
        original = _published_margin(cube)
        out = METHOD.prepare(fitted)(cube)
        is_small = (original >= 1) & (original <= 2)
        small += int(is_small.sum())
        kept += int((_published_margin(out)[is_small] == original[is_small]).sum())
        kept_before += int((_old_fit(cube)[is_small] == original[is_small]).sum())
        expected += _kept_by_pram(original, 1, 2)
        assert check_additivity(out).additive
        regions = (out["count"] - cube["count"]).sel(GEO=["G0", "G1"], SEX="S", AGE="A_T", EDU="E")
        assert not regions.values.any()  # the control totals stay exact
    share, bound = kept / small, expected / small
    assert small > 1000 and kept_before == small  # the old path published every small margin cell as it was
    assert share <= bound + 4.75 * math.sqrt(bound * (1 - bound) / small), (share, bound)
    assert share < 0.6


def test_a_fitted_margin_is_perturbed_the_same_way_every_time() -> None:
    cube = _sparse_cube(99)
    a, b = (METHOD.prepare(step(control=["GEO"], fit=[["GEO", "SEX", "AGE"]]))(cube) for _ in range(2))
    np.testing.assert_array_equal(a["count"].values, b["count"].values)
    assert not np.array_equal(_published_margin(a), _published_margin(cube))


def test_two_fitted_tables_that_share_a_margin_are_fitted_to_one_perturbed_copy_of_it() -> None:
    """GEO x SEX and GEO x AGE share GEO: it is perturbed once, both are fitted to it, so the cube can keep both."""
    cube = _sparse_cube(0)
    out = METHOD.prepare(step(control=["GEO"], fit=[["GEO", "SEX"], ["GEO", "AGE"]]))(cube)
    report = json.loads(out.attrs[REPORT_ATTR])
    assert report["fitted_tables"] == 2 and report["ipf_converged"] and check_additivity(out).additive
    assert (out["count"] != cube["count"]).sel(SEX="S", EDU="E").any()  # GEO x AGE's small cells perturbed


@pytest.mark.parametrize(
    "steps",
    [
        "  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, control: [GEO.2, GEO.1], fit: [[GEO.2]]}\n",
        "  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, hold: [[GEO.2, SEX]], fit: [[SEX, AGE.M]]}\n",
    ],
)  # areas below the control depth are perturbed within them; a table sharing SEX with a group is fitted to it
def test_fitted_tables_that_can_be_perturbed_are_accepted(tmp_path: Path, steps: str) -> None:
    assert config_problems(tmp_path, steps) == []


def test_a_release_perturbs_every_cube_and_shows_no_secret(tmp_path: Path) -> None:
    original, protected, steps = protect_tiny(tmp_path, STEP)
    shown = public_step(steps[0])["parameters"]
    assert shown == {
        "cap": 10, "perturb_zeros": False, "control": ["GEO.2", "GEO.1"], "control_depth": 1, "fit": [], "hold": [],
        "rounding": "controlled",
    }  # fmt: skip
    assert "0.6" not in json.dumps(shown) and "0.6" not in repr(steps[0])
    for cid, cube in protected.items():
        assert check_additivity(cube).additive, cid
        grand = (0,) * cube["count"].ndim
        assert cube["count"].values[grand] == original[cid]["count"].values[grand]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ("  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, cap: 1}\n",
         r"steps\[0\] \(c\.yaml line \d+\): .*cap 1 leaves one value to perturb"),
        ("  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, fit: [[AGE.9]]}\n",
         r"steps\[0\]\.fit\[0\]\[0\] \(c\.yaml line \d+\): unknown breakdown 'AGE\.9'"),
        ("  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, control: [GEO.9]}\n",
         r"steps\[0\]\.control\[0\] \(c\.yaml line \d+\): unknown breakdown 'GEO\.9'"),
        ("  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, hold: [[SEX, GEO.9]]}\n",
         r"steps\[0\]\.hold\[0\]\[1\] \(c\.yaml line \d+\): unknown breakdown 'GEO\.9'"),
        ("  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, hold: [[SEX]], rounding: interior}\n",
         r"steps\[0\]\.rounding \(c\.yaml line \d+\): rounding 'interior' does not keep the margin cells of 'hold' "
         r"at the values other cubes publish; set 'rounding' to 'controlled', or drop 'hold'$"),
        ("  - {method: stochastic_perturbation, diagonal: 0.6, band: 2, control: [GEO.2, GEO.1], fit: [[SEX], [GEO.1]]}\n",
         r"steps\[0\]\.fit\[1\] \(c\.yaml line \d+\): fit table \['GEO\.1'\] is a control table: each of its cells is "
         r"a control total \(control_depth 1\), which this method publishes at its original count, so it cannot be "
         r"perturbed; drop the table \(the control totals are kept already\), or set 'control_depth' below 1$"),
        ("  - {method: stochastic_perturbation, diagonal: 0.6, band: 2}\n  - {method: cell_key, D: 5, V: 3, js: 2}\n",
         r"steps\[0\]\.cubes \(c\.yaml line \d+\): cube 'c1' \(and 2 more\) is protected again by steps\[1\] "
         r"\(cell_key\) after this step, so its counts would no longer keep the distribution of values"),
    ],
)  # fmt: skip
def test_each_mistake_gives_a_located_config_error(tmp_path: Path, steps: str, expected: str) -> None:
    found = config_problems(tmp_path, steps)
    assert len(found) == 1 and re.match(expected, found[0]), found


def test_the_method_is_registered_with_its_model() -> None:
    assert METHOD.name == "stochastic_perturbation" and METHOD.model is StochasticPerturbationStep
    assert METHOD.additive(step()) and not METHOD.additive(step(fit=[["AGE"]], rounding="every_cell"))
    assert METHOD.additive(step(fit=[["AGE"]])) and METHOD.additive(step(fit=[["AGE"]], rounding="interior"))


def test_the_measures_show_how_far_each_fit_got(tmp_path: Path) -> None:
    import pandas as pd

    from cubeguard.config import load_release
    from cubeguard.pipeline.measure import measure_release

    fitted = STEP.replace(
        "control: [GEO.2, GEO.1]}", "control: [GEO.2, GEO.1], fit: [[SEX]], hold: [[GEO.2, AGE.M]], cubes: [c1]}"
    )
    protect_tiny(tmp_path, fitted + "  - {method: identity, cubes: [c2, hh]}\n")
    measures = pd.read_parquet(measure_release(load_release(tmp_path / "c.yaml")))
    facts = [f"perturbation_{k}@cube" for k in ("groups", "fitted_tables", "held_tables", "ipf_cycles", "ipf_max_gap")]
    row = measures.loc["c1", facts]
    assert (
        row["perturbation_fitted_tables@cube"] == 2 and row["perturbation_ipf_max_gap@cube"] <= 1e-6
    )  # SEX, GEO x AGE
    assert row["perturbation_held_tables@cube"] == 3  # GEO.2, AGE.M, and GEO.2 x AGE.M
    assert row["perturbation_groups@cube"] == 2 and row["perturbation_ipf_cycles@cube"] in range(101)  # regions A, B
    assert measures.loc[["c2", "hh"], facts].isna().all().all()  # not perturbed: no value


def test_a_cube_without_its_perturbation_report_is_a_bug_not_a_silent_gap() -> None:
    from cubeguard.errors import InternalError
    from cubeguard.methods.stochastic_perturbation import METHOD, REPORT_ATTR

    assert METHOD.facts is not None
    assert METHOD.facts({REPORT_ATTR: '{"groups": 2, "ipf_cycles": 7, "other": 1}'}) == {
        "perturbation_groups": 2.0,
        "perturbation_ipf_cycles": 7.0,
    }
    with pytest.raises(InternalError, match="lacks its stochastic perturbation report"):
        METHOD.facts({})

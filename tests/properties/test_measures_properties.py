"""Properties of the measures on random cubes (tests/strategies.py) that the papers promise."""

from __future__ import annotations

import math
import warnings

import numpy as np
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from cubeguard.cubes.tree import hierarchies
from cubeguard.measures import association, disclosive, distance, entropy, risk, select, tests_stat
from cubeguard.measures._ranks import average_ranks
from cubeguard.measures.deviations import deviation_by_dimension, deviation_by_size
from cubeguard.measures.table import MeasureSpec, measure_cube
from tests.strategies import cube_pairs, cubes

SCOPES = ("cube", "interior")
DISTANCES = (
    distance.absolute_distance,
    distance.average_absolute_distance,
    distance.relative_absolute_distance_sum,
    distance.hellinger_distance,
    distance.hellinger_distance_counts,
    distance.max_absolute_deviation,
)


def margins(cube: xr.Dataset) -> list[tuple[str, ...]]:
    dims = [str(d) for d in cube["count"].dims]
    return [(d,) for d in dims] + ([tuple(dims[:2])] if len(dims) > 1 else [])


@settings(deadline=None)
@given(cubes())
def test_distances_are_zero_for_identical_cubes(cube: xr.Dataset) -> None:
    for scope in (*SCOPES, *margins(cube)):
        c = select.select(cube, scope)["count"]
        for fn in DISTANCES:
            assert fn(c, c) == 0.0, (fn.__name__, scope)
        rad = distance.relative_absolute_distance(c, c)
        assert rad == 0.0 or (math.isnan(rad) and not c.values.any())


@settings(deadline=None)
@given(cubes())
def test_identity_protection_is_measured_exactly(cube: xr.Dataset) -> None:
    # the noise-free path: nothing changes, so distances are 0 and every risk stays as it was
    spec = MeasureSpec(scopes=("interior", "cube", *margins(cube)))
    out = measure_cube(cube, cube, spec)
    for key, value in out.items():
        name = key.split("@")[0]
        if name in {"absolute_distance", "average_absolute_distance", "rad_sum", "hellinger", "max_abs_deviation"}:
            assert value == 0.0, key
    for key in [k for k in out if k.startswith("entropy_risk_original")]:
        r, r_sharp = out[key], out[key.replace("original", "protected")]
        assert r_sharp == r or (math.isnan(r) and math.isnan(r_sharp))
    assert out["disclosive_original@cube"] == out["disclosive_protected@cube"] == out["disclosive_true@cube"]


@settings(deadline=None)
@given(cube_pairs())
def test_hellinger_lies_in_unit_interval_and_rad_is_non_negative(pair: tuple[xr.Dataset, xr.Dataset]) -> None:
    o, p = pair
    for scope in (*SCOPES, *margins(o)):
        a, b = select.select(o, scope)["count"], select.select(p, scope)["count"]
        assert 0.0 <= distance.hellinger_distance(a, b) <= 1.0
        assert distance.relative_absolute_distance_sum(a, b) >= 0.0
        rad = distance.relative_absolute_distance(a, b)
        assert rad >= 0.0 or math.isnan(rad)


@settings(deadline=None)
@given(cube_pairs())
def test_entropy_risk_of_protected_table_is_not_above_the_original(pair: tuple[xr.Dataset, xr.Dataset]) -> None:
    # Handbook on SDC v2, 5.9: "The disclosure risk of a perturbed table is expected to be lower
    # than that of the original table. r# satisfies this requirement."
    o, p = pair
    for scope in ("interior", *margins(o)):
        a, b = select.select(o, scope)["count"], select.select(p, scope)["count"]
        if a.values.sum() == 0:
            continue
        r, r_sharp = risk.entropy_risk(a), risk.entropy_risk_protected(a, b)
        assert 0.0 <= r_sharp <= r + 1e-12 <= 1.0 + 1e-12


@settings(deadline=None)
@given(st.lists(st.lists(st.integers(0, 50), min_size=3, max_size=3), min_size=2, max_size=6))
def test_cramers_v_lies_in_unit_interval(rows: list[list[int]]) -> None:
    v = association.cramers_v(np.array(rows))
    assert math.isnan(v) or 0.0 <= v <= 1.0


@settings(deadline=None)
@given(cube_pairs(max_dims=2))
def test_cramers_v_of_two_way_margins(pair: tuple[xr.Dataset, xr.Dataset]) -> None:
    o, p = pair
    if o["count"].ndim == 2:
        change = association.cramers_v_change(select.interior(o), select.interior(p))
        for v in change:
            assert math.isnan(v) or 0.0 <= v <= 1.0


@settings(deadline=None)
@given(st.lists(st.one_of(st.integers(0, 20), st.integers(60_000, 70_000)), min_size=1, max_size=60))
def test_histogram_ranks_equal_rankdata(values: list[int]) -> None:
    assert np.allclose(average_ranks(np.array(values)), stats.rankdata(values))


@settings(deadline=None)
@given(cube_pairs())
def test_spearman_lies_in_minus_one_one(pair: tuple[xr.Dataset, xr.Dataset]) -> None:
    o, p = pair
    s = association.spearman_rank_correlation(o, p)
    assert math.isnan(s) or -1.0 <= s <= 1.0
    with warnings.catch_warnings():
        # scipy warns that a constant side has no correlation; ours returns nan silently
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        ref = stats.spearmanr(o["count"].values.ravel(), p["count"].values.ravel()).statistic
    assert math.isnan(s) == math.isnan(ref)
    assert math.isnan(s) or math.isclose(s, ref, abs_tol=1e-9)


@settings(deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=30, max_size=200), st.integers(0, 10**6))
def test_fast_wilcoxon_equals_scipy_approx(noise: list[int], seed: int) -> None:
    o = np.random.default_rng(seed).poisson(4, len(noise))
    p = o + np.array(noise)
    d = p - o
    if not d.any():
        return
    ours = tests_stat.wilcoxon_signed_rank(o, p, scipy_below=0)
    ref = stats.wilcoxon(d[d != 0], method="approx")
    assert math.isclose(ours.statistic, float(ref.statistic))
    assert math.isclose(ours.p_value, float(ref.pvalue), rel_tol=1e-9, abs_tol=1e-12)


@settings(deadline=None)
@given(cubes(max_dims=3))
def test_median_entropy_is_between_zero_and_log_of_cells(cube: xr.Dataset) -> None:
    inner = select.interior(cube)["count"]
    group = [str(inner.dims[0])]
    h = entropy.median_entropy(inner, group)
    cells = inner.size // inner.sizes[group[0]]
    assert math.isnan(h) or 0.0 <= h <= math.log(cells) + 1e-12


@settings(deadline=None)
@given(cube_pairs())
def test_hoehne_tables_count_the_same_cells(pair: tuple[xr.Dataset, xr.Dataset]) -> None:
    # Höhne (2011): the cell totals of Table 3 and Table 4a agree (cells with original count >= 1)
    o, p = pair
    t3 = deviation_by_dimension(o, p)
    t4 = deviation_by_size(o, p)
    n = int((o["count"].values > 0).sum())
    assert int(t3.loc["all", "cells"].sum()) == n
    assert int(t4.cells["cells"].sum()) == n
    assert (t4.cumulative.iloc[:, -1] == 100.0).all()


@settings(deadline=None)
@given(cubes(), st.integers(0, 3))
def test_identical_cubes_have_only_true_disclosures(cube: xr.Dataset, k: int) -> None:
    dc = disclosive.disclosive_cells(cube, cube, coalition=k)
    assert dc.original == dc.protected == dc.both
    sw = disclosive.swap_success(cube, cube, coalition=k)
    assert sw.real == sw.apparent
    assert (math.isnan(sw.removed_share) and sw.real == 0) or sw.removed_share == 0.0
    assert (math.isnan(sw.false_share) and sw.apparent == 0) or sw.false_share == 0.0


@settings(deadline=None)
@given(cubes(), st.integers(0, 2))
def test_disclosive_cells_match_a_cell_by_cell_check(cube: xr.Dataset, k: int) -> None:
    # brute force over every cell and every ancestor along every dimension; both strategies of
    # the fast code (slab by slab, level by level) must agree with it
    da = cube["count"]
    hier = hierarchies(da)
    values = da.values
    expected = np.zeros(values.shape, dtype=bool)
    for idx in np.ndindex(values.shape):
        for axis, h in enumerate(hier.values()):
            node, sole_chain = idx[axis], True
            while h.parent[node] >= 0:
                parent = int(h.parent[node])
                sole_chain &= bool(h.n_children[parent] == 1)
                if not sole_chain:
                    m = values[(*idx[:axis], parent, *idx[axis + 1 :])]
                    expected[idx] |= bool(m > k and m - k <= values[idx])
                node = parent
    assert (disclosive.directly_disclosive(da, coalition=k).values == expected).all()
    for along in (disclosive._along_slabs, disclosive._along_levels):
        out = np.zeros(values.shape, dtype=bool)
        for axis, h in enumerate(hier.values()):
            along(values, out, axis, h, k)
        assert (out == expected).all(), along.__name__

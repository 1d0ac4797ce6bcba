"""The means attack (cubeguard.attack.means): exact sums give counts back, perturbed ones do not, never a false certainty.

A hand-made cube of areas x single years of age, its counts perturbed within +-D (cell key-like
bounds): with the exact sums of age the means attack recovers every small cell that feasibility
leaves open (the issue-34 leak, ``n = m / age``); with the sums perturbed as configs/demo.yaml
perturbs them (cell key method for magnitudes, type mean) it recovers nothing with certainty.
Hypothesis checks that the counts' interval always holds the original, for any values, sums and
bounds that hold, and that :func:`noise_bound` bounds what the magnitude perturbation really does.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.attack import ATTACKS, AttackFacts, CubeView, Limits, attack_release
from cubeguard.attack.cells import SumView
from cubeguard.attack.means import count_interval, narrow, noise_bound
from cubeguard.attack.run import AttackReport
from cubeguard.attack.system import solve, start
from cubeguard.ckm.magnitude import (
    FlexParams,
    MagnitudeParams,
    NumPTable,
    SimpleParams,
    perturb_magnitudes,
    read_num_ptable,
    tabulate_magnitudes,
)
from cubeguard.ckm.magnitude.params import MagnitudeType

DEMO_PTABLE = Path(__file__).resolve().parents[2] / "configs" / "ptables" / "demo_age_num.csv"
DEMO = MagnitudeParams(type="mean", mult=FlexParams(fp=1000, p_small=0.3, p_large=0.05, epsilon=(1,), q=3))
AREAS = ["a", "b", "c", "d"]
AGES = list(range(1, 13))  # single years from 1: a cell of age 0 sums to 0 whatever its count


def _records(rng: np.random.Generator, n: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``n`` persons: an area (index) and an age."""
    return rng.integers(0, len(AREAS), n), rng.choice(AGES, n)


def _members(area: npt.NDArray[np.int64], age: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each person's four flat cells in the (1 + areas) x (1 + ages) cube: itself and its margins."""
    width = 1 + len(AGES)
    a, y = 1 + area, 1 + (age - AGES[0])
    return np.stack([a * width + y, a * width, y, np.zeros_like(a)], axis=1)


def _cube(original: npt.NDArray[np.int64]) -> xr.Dataset:
    codes = {"GEO": ["T", *AREAS], "AGE": ["T", *(f"Y{a}" for a in AGES)]}
    coords: dict[str, object] = {}
    for d, c in codes.items():
        coords[d] = c
        coords[f"{d}.parent"] = (d, [""] + ["T"] * (len(c) - 1))
    return xr.Dataset(
        {"count": (["GEO", "AGE"], original)},
        coords=coords,
        attrs={"cube_id": "c", "population": "total", "variables": {"GEO": "GEO", "AGE": "AGE"}},
    )


def _age_ranges(shape: tuple[int, ...]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each cell's ages: its single year, or every age on the total."""
    low = np.array([AGES[0], *AGES], dtype=float)
    high = np.array([AGES[-1], *AGES], dtype=float)
    return np.broadcast_to(low, shape).copy(), np.broadcast_to(high, shape).copy()


def plus_minus(d: int):  # type: ignore[no-untyped-def]
    def bounds(published: np.ndarray, interior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.maximum(published - d, 0).astype(float), (published + d).astype(float)

    return bounds


def _release(seed: int, d: int, perturb_sums: bool) -> tuple[CubeView, AttackReport]:
    """A cube of 100 persons, counts within +-``d``, sums exact or perturbed as the demo's; attacked."""
    rng = np.random.default_rng(seed)
    area, age = _records(rng, 100)
    members = _members(area, age)
    shape = (1 + len(AREAS), 1 + len(AGES))
    cells = tabulate_magnitudes(members, shape[0] * shape[1], age, rng.random(age.size))
    original = cells.counts.reshape(shape).astype(np.int64)
    noise = rng.integers(-d, d + 1, original.shape)
    published = np.where(original > 0, np.maximum(original + noise, 0), 0)
    view = CubeView.of(_cube(published), _cube(original))
    low, high = _age_ranges(shape)
    exact = cells.sums.reshape(shape)
    if perturb_sums:
        table = read_num_ptable(DEMO_PTABLE)
        shown = np.round(perturb_magnitudes(cells, DEMO, table).perturbed).reshape(shape)
        delta = noise_bound(DEMO, float(np.abs(table.v).max()), 1.0, shown, low, high, (AGES[0], AGES[-1]))
        assert (np.abs(shown - exact) <= delta).all()  # the bound holds on this cube
    else:
        shown, delta = exact, np.zeros(shape)
    view = replace(view, sums=(SumView("age", shown, exact, low, high, delta),))
    return view, attack_release([view], {"c": plus_minus(d)}, Limits(lp_seconds=5.0))


def _facts(report: AttackReport, attack: str) -> AttackFacts:
    return next(f for f in report.published if f.attack == attack)


def test_exact_sums_of_single_years_give_back_the_counts_feasibility_leaves_open() -> None:
    """The issue-34 leak: with exact sums ``n = m / age`` in every cell; the +-2 counts alone pin few."""
    _, report = _release(seed=1, d=2, perturb_sums=False)
    means, feasibility = _facts(report, "means"), _facts(report, "feasibility")
    assert means.targets > 20  # the cube holds 1s and 2s
    assert means.certain == means.targets
    assert feasibility.certain < means.targets / 2
    assert report.recovered("c") == means.targets and report.broken == []
    assert "means" in ATTACKS


def test_the_demo_magnitude_perturbation_leaves_nothing_certain() -> None:
    """Sums perturbed as configs/demo.yaml perturbs them, counts within +-5 (its D): nothing recovered."""
    for seed in range(3):
        _, report = _release(seed=seed, d=5, perturb_sums=True)
        means = _facts(report, "means")
        assert means.targets > 20
        assert means.certain == 0, seed
        assert report.broken == []  # the self-test, on exact counts and sums, finds every small cell


def test_only_cubes_with_sums_are_attacked_and_their_self_test_uses_the_exact_sums() -> None:
    view, _ = _release(seed=2, d=2, perturb_sums=True)
    plain = replace(view, cube="plain", sums=())
    report = attack_release([view, plain], {"c": plus_minus(2), "plain": plus_minus(2)}, Limits(lp_seconds=1.0))
    cubes = {(f.cube, f.unprotected) for f in report.facts if f.attack == "means"}
    assert cubes == {("c", False), ("c", True)}
    unprotected = view.unprotected()
    assert unprotected.sums[0].published is view.sums[0].original
    assert (unprotected.sums[0].delta == 0).all() and unprotected.published is view.original


def test_a_sum_of_zero_allows_an_empty_cell_and_a_non_zero_sum_needs_a_record() -> None:
    """Values in ``[0, 5]``: a sum of 0 may be any count; in ``[1, 5]``: only 0; a sum of 3 +- 1 needs 1..4.

    Values of unknown range: a sum of 3 or -3 (+- 1) still needs a record; one that may be 0 says nothing.
    """
    inf = np.inf
    sums = SumView(
        "x",
        published=np.array([0.0, 0.0, 3.0, 3.0, 3.0, -3.0, 1.0]),
        original=None,
        low=np.array([0.0, 1.0, 1.0, 1.0, -inf, -inf, -inf]),
        high=np.array([5.0, 5.0, 5.0, 5.0, inf, inf, inf]),
        delta=np.array([0.0, 0.0, 1.0, inf, 1.0, 1.0, 1.0]),
    )
    lo, hi = count_interval(sums)
    assert lo.tolist() == [0, 0, 1, 0, 1, 1, 0]
    assert hi[1:3].tolist() == [0, 4] and (hi[[0, 3, 4, 5, 6]] > 10**9).all()


# Hypothesis: small random tables with known originals and sums (values of any sign), and the
# magnitude perturbation against its bound.

cube = st.integers(1, 4).flatmap(
    lambda k: st.tuples(
        st.lists(st.integers(0, k - 1), min_size=0, max_size=25),  # each record's code
        st.integers(-6, 6),  # the values' lowest
        st.integers(0, 8),  # their span
        st.integers(0, 2**32 - 1),  # a seed for values, noise and the published counts
        st.just(k),
    )
)


@settings(max_examples=150, deadline=None)
@given(cube, st.floats(0.0, 30.0), st.integers(0, 3), st.booleans())
def test_the_interval_always_holds_the_original_count(
    data: tuple[list[int], int, int, int, int], delta: float, d: int, crossed: bool
) -> None:
    """Any values in ``[low, high]``, any sum within ``delta``, counts within ``d``: never a false certainty."""
    codes, lowest, span, seed, k = data
    rng = np.random.default_rng(seed)
    code = np.array(codes, dtype=np.int64)
    # each code holds values within its own band of the common range (or, not crossed, the whole range)
    bands = np.sort(rng.integers(lowest, lowest + span + 1, (k, 2)), axis=1)
    values = np.array([rng.integers(bands[c, 0], bands[c, 1] + 1) for c in code], dtype=float)
    counts = np.bincount(code, minlength=k)
    sums = np.bincount(code, weights=values, minlength=k)
    original = np.concatenate([[counts.sum()], counts]).astype(np.int64)
    exact = np.concatenate([[sums.sum()], sums])
    shown = exact + rng.uniform(-delta, delta, exact.shape)
    if crossed:
        low = np.concatenate([[bands[:, 0].min()], bands[:, 0]]).astype(float)
        high = np.concatenate([[bands[:, 1].max()], bands[:, 1]]).astype(float)
    else:
        low, high = np.full(k + 1, float(lowest)), np.full(k + 1, float(lowest + span))
    lo, hi = count_interval(SumView("x", shown, exact, low, high, np.full(k + 1, delta)))
    assert (lo <= original).all() and (original <= hi).all()
    published = np.maximum(original + rng.integers(-d, d + 1, original.shape), 0)
    ds = xr.Dataset(
        {"count": (["X"], original)},
        coords={"X": ["T", *map(str, range(k))], "X.parent": ("X", ["", *["T"] * k])},
        attrs={"cube_id": "c", "population": "total", "variables": {"X": "X"}},
    )
    view = CubeView.of(ds.copy(data={"count": published}), ds)
    view = replace(view, sums=(SumView("x", shown, exact, low, high, np.full(k + 1, delta)),))
    state = start([view], {"c": plus_minus(d)})
    narrow(state, 0)
    solve(state, Limits())
    assert (state.lo[0] <= original).all() and (original <= state.hi[0]).all()


SMALL_CELLS = NumPTable(
    i=np.array([0.0, 1, 1, 1, 5, 5, 5, 0, 1, 1, 1]),
    j=np.array([0.0, 0, 1, 3, 3, 5, 8, 0, 0, 1, 2]),
    p=np.array([1.0, 0.3, 0.4, 0.3, 0.3, 0.4, 0.3, 1, 0.3, 0.4, 0.3]),
    v=np.array([0.0, -1, 0, 2, -2, 0, 3, 0, -1, 0, 1]),
    lb=np.array([0.0, 0, 0.3, 0.7, 0, 0.3, 0.7, 0, 0, 0.3, 0.7]),
    ub=np.array([1.0, 0.3, 0.7, 1, 0.3, 0.7, 1, 1, 0.3, 0.7, 1]),
    type=np.array(["all"] * 7 + ["small_cells"] * 4),
)  # fmt: skip
MULTS: list[FlexParams | SimpleParams] = [
    FlexParams(fp=1000, p_small=0.3, p_large=0.05, q=3),
    FlexParams(fp=20, p_small=0.3, p_large=0.05, q=3),
    FlexParams(fp=10, p_small=0.25, p_large=0.1, q=1.5),
    FlexParams(fp=5, p_small=0.4, p_large=0.05, q=1),
    SimpleParams(p=0.1),
    SimpleParams(p=0.5),
]


@st.composite
def magnitude_params(draw: st.DrawFn) -> MagnitudeParams:
    kind: MagnitudeType = draw(st.sampled_from(["top_contr", "mean", "sum", "range"]))
    top_k = draw(st.integers(1, 3)) if kind == "top_contr" else 1
    eps = (1.0, *sorted(draw(st.lists(st.floats(0.0, 1.0), min_size=top_k - 1, max_size=top_k - 1)), reverse=True))
    mult: FlexParams | SimpleParams = draw(st.sampled_from(MULTS)).model_copy(update={"epsilon": eps})
    return MagnitudeParams(type=kind, top_k=top_k, mult=mult, mu_c=draw(st.sampled_from([0.0, 0.5])),
                           same_key=draw(st.booleans()))  # fmt: skip


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 7), st.integers(-200, 400), st.floats(0.0, 1.0, exclude_max=True)),
        min_size=1,
        max_size=60,
    ),
    magnitude_params(),
    st.sampled_from(["demo", "small_cells"]),
    st.sampled_from([1.0, 5.0]),
)
def test_the_noise_bound_holds_for_the_magnitude_perturbation(
    records: list[tuple[int, int, float]], params: MagnitudeParams, table_name: str, unit: float
) -> None:
    """``|published - sum| <= noise_bound`` for every cell: the bound the intruder uses is honest."""
    table = read_num_ptable(DEMO_PTABLE) if table_name == "demo" else SMALL_CELLS
    bottom = np.array([r[0] for r in records], dtype=np.int64)
    values = np.array([r[1] for r in records], dtype=float)
    keys = np.array([r[2] for r in records], dtype=float)
    members = np.stack([bottom, 8 + bottom // 4, np.full(bottom.size, 10)], axis=1).reshape(-1, 3)
    cells = tabulate_magnitudes(members, 11, values, keys)
    published = np.round(perturb_magnitudes(cells, params, table).perturbed / unit) * unit
    published = np.where(cells.counts > 0, published, 0.0)  # an empty cell publishes 0, as the cell key step
    vmax = float(np.abs(table.v).max())
    delta = noise_bound(params, vmax, unit, published, np.full(11, -200.0), np.full(11, 400.0), (-200.0, 400.0))
    assert (np.abs(published - cells.sums) <= delta).all()


@pytest.mark.parametrize("kind", ["mean", "top_contr"])
def test_the_noise_bound_of_a_single_year_grows_with_the_age(kind: str) -> None:
    """Demo parameters, types mean and top_contr (one component): ``10 max(1, 0.3 age)`` plus half the unit."""
    params = DEMO.model_copy(update={"type": kind})
    ages = np.array([1.0, 3.0, 50.0])
    delta = noise_bound(params, 10.0, 1.0, np.zeros(3), ages, ages, (0.0, 99.0))
    np.testing.assert_allclose(delta, [10.5, 10.5, 150.5], rtol=1e-6)

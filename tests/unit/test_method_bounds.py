"""Published bounds of identity, the cell key method and stochastic perturbation: they hold, and are as narrow as allowed.

The cell key method (Handbook on SDC v2, 5.4) bounds every cell by its p-table's support; invariant
stochastic perturbation (Shlomo 2009, 3.2.2) moves inner counts by up to twice its band. The
rounding-like methods are in ``test_method_bounds_rounding.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cubeguard.ckm.lookup import lookup_noise
from cubeguard.ckm.origins import origin_tables
from cubeguard.ckm.ptable import PTable
from cubeguard.ckm.ptable_io import write_ptable
from cubeguard.ckm.ptable_modify import modify_cnt_ptable
from cubeguard.errors import CubeguardError
from cubeguard.methods.cell_key import METHOD as CELL_KEY
from cubeguard.methods.cell_key import CellKeyStep
from cubeguard.methods.cell_key.method import ptable
from cubeguard.methods.identity import METHOD as IDENTITY
from cubeguard.methods.identity import IdentityStep
from cubeguard.methods.registry import CUBE_METHODS
from cubeguard.methods.stochastic_perturbation import METHOD as STOCHASTIC
from cubeguard.methods.stochastic_perturbation import StochasticPerturbationStep
from tests.bounds_helpers import assert_tight, large_cube, protect, support
from tests.ckm_tables import HANDBOOK_TABLE
from tests.strategies import cubes

PARAMS = [
    {"D": 5, "V": 3, "js": 2},
    {"D": 3, "V": 2},
    {"D": 8, "V": 8, "js": 3},
    {"D": 4, "V": 2.5, "pstay": 0.5},
]


def cell_key(**kw: object) -> CellKeyStep:
    return CellKeyStep.model_validate({"method": "cell_key"} | kw)


def stochastic(**kw: object) -> StochasticPerturbationStep:
    return StochasticPerturbationStep.model_validate({"method": "stochastic_perturbation", "diagonal": 0.5} | kw)


def test_every_post_tabular_method_but_none_declares_bounds() -> None:
    assert {name for name, m in CUBE_METHODS.items() if m.bounds is None} == set()


# --- identity ----------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(cube=cubes(max_dims=3, max_count=40))
def test_identity_bounds_are_exact(cube: xr.Dataset) -> None:
    found = protect(IDENTITY, IdentityStep(method="identity"), cube)
    np.testing.assert_array_equal(found.lo, found.original)
    np.testing.assert_array_equal(found.hi, found.original)


# --- cell key method ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(cube=cubes(max_dims=3, max_count=40), params=st.sampled_from(PARAMS))
def test_cell_key_bounds_hold(cube: xr.Dataset, params: dict[str, object]) -> None:
    protect(CELL_KEY, cell_key(**params), cube)


def _cell_key_support(table: PTable, originals: range) -> dict[int, set[int]]:
    """The originals each count is published from, found by looking up every original under every key that selects a row."""
    keys = np.unique(np.r_[0.0, table.p_int_ub])  # a row's first key is the bound before it
    keys = keys[keys < 1.0]
    return support(lambda n: (n + lookup_noise(np.full(keys.size, n), keys, table)).tolist(), originals)


@pytest.mark.parametrize("params", PARAMS)
def test_cell_key_bounds_are_the_ptable_support(params: dict[str, object]) -> None:
    """Least and greatest original of every published count as the lookup itself gives them, margins alike."""
    step = cell_key(**params)
    table = ptable(step)
    bounds = CELL_KEY.bounds(step)  # type: ignore[misc]
    assert_tight(bounds, _cell_key_support(table, range(0, 120)), range(0, 100))
    lo, hi = bounds(np.array([500, 500]), np.array([True, False]))
    assert (hi - lo).tolist() == [2 * table.max_noise] * 2  # far from 0: j - D .. j + D, totals too
    js = int(params.get("js", 0))  # type: ignore[call-overload]
    never = bounds(np.arange(1, js + 1), np.ones(js, dtype=bool))
    assert np.all(never[0] == 0) and np.all(np.isinf(never[1]))  # 1..js are never published: nothing learnt


def test_cell_key_bounds_read_a_ptable_file_and_skip_rows_no_key_selects(tmp_path: Path) -> None:
    """The Handbook's Table 5.16 with a row of probability 0 (i = 2 -> 4) added: no key reaches it, so 4 is not from 2."""
    columns = {f: np.asarray(getattr(HANDBOOK_TABLE, f)) for f in ("i", "j", "p", "v", "p_int_lb", "p_int_ub", "type")}
    at = 5  # after the rows of i = 2
    extra = {"i": 2, "j": 4, "p": 0.0, "v": 2, "p_int_lb": 1.0, "p_int_ub": 1.0, "type": "all"}
    table = PTable(**{f: np.insert(c, at, extra[f]) for f, c in columns.items()})  # type: ignore[arg-type]
    step = cell_key(ptable_file=write_ptable(table, tmp_path / "p.csv"))
    lo_of, hi_of, beyond = origin_tables(ptable(step))
    assert beyond == (1, 1)
    np.testing.assert_array_equal(lo_of, [0, np.nan, 1, 2, 3])  # 1 is never published (blocked)
    np.testing.assert_array_equal(hi_of, [1, np.nan, 3, 4, 5])
    assert_tight(CELL_KEY.bounds(step), _cell_key_support(ptable(step), range(0, 40)), range(0, 30))  # type: ignore[misc]


def test_cell_key_bounds_hold_for_a_modified_ptable(tmp_path: Path) -> None:
    """ptable's "modified" intervals (noises split and shuffled) have the same support."""
    base = ptable(cell_key(**PARAMS[0]))
    modified = modify_cnt_ptable(base, 0.2, rng=np.random.default_rng(3))
    step = cell_key(ptable_file=write_ptable(modified, tmp_path / "m.csv"))
    for got, want in zip(origin_tables(ptable(step))[:2], origin_tables(base)[:2], strict=True):
        np.testing.assert_array_equal(got, want)
    protect(CELL_KEY, step, large_cube(8))


def test_cell_key_reaches_both_ends_on_a_cube() -> None:
    """Some cells are D below, some D above their published value, totals included: the bound cannot be narrower."""
    step = cell_key(**PARAMS[1])
    found = protect(CELL_KEY, step, large_cube(2, high=60))
    big = found.published > 20
    assert np.any(found.original[big] == found.lo[big]) and np.any(found.original[big] == found.hi[big])
    assert np.all(found.hi[big] - found.lo[big] == 6)


# --- stochastic perturbation -------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    cube=cubes(max_dims=3, max_count=14),
    cap=st.integers(2, 12),
    band=st.integers(1, 3),
    diagonal=st.floats(0.1, 0.9),
    zeros=st.booleans(),
    control=st.sampled_from([[], ["GEO.M"]]),
    seed=st.none() | st.integers(0, 2**32),
)
def test_stochastic_perturbation_bounds_hold(
    cube: xr.Dataset, cap: int, band: int, diagonal: float, zeros: bool, control: list[str], seed: int | None
) -> None:
    step = stochastic(cap=cap, band=band, diagonal=diagonal, perturb_zeros=zeros, control=control, seed=seed)
    protect(STOCHASTIC, step, cube)


@settings(max_examples=25, deadline=None)
@given(
    cube=cubes(max_dims=3, max_count=14),
    fit=st.sampled_from([{"fit": [["GEO.M"]]}, {"fit": [["GEO.M", "SEX"]]}, {"hold": [["GEO.M"]]}]),
    rounding=st.sampled_from(["controlled", "interior", "every_cell"]),
)
def test_stochastic_perturbation_bounds_hold_when_fitted(
    cube: xr.Dataset, fit: dict[str, object], rounding: str
) -> None:
    assume(not ("hold" in fit and rounding != "controlled"))  # the config refuses it
    step = stochastic(band=2, rounding=rounding, **fit)
    try:
        found = protect(STOCHASTIC, step, cube)
    except CubeguardError:  # no controlled rounding of the fitted table: nothing is published
        assume(False)
        return
    assert np.all(found.lo[found.interior] == (found.published[found.interior] >= 1))


def test_stochastic_perturbation_moves_up_to_twice_its_band() -> None:
    """The invariant matrix P Q moves a value by ``band`` twice: such moves happen, so a bound of ``band`` would be false."""
    for band in (1, 2):
        step = stochastic(cap=10, band=band, control=["GEO.M"], seed=7)
        found = protect(STOCHASTIC, step, large_cube(6, high=12, groups=6, per_group=10, width=40))
        moved = np.abs(found.published - found.original)[found.interior]
        assert moved.max() == 2 * band
        inner = found.interior & (found.published >= 1 + 2 * band) & (found.published <= 10 - 2 * band)
        np.testing.assert_array_equal((found.hi - found.lo)[inner], 4 * band)
        assert np.any(found.original[inner] == found.lo[inner]) and np.any(found.original[inner] == found.hi[inner])


def test_stochastic_perturbation_bounds_by_value() -> None:
    """Zeros exact unless perturbed; values in 1..cap within 2 band, clipped to the range; above cap exact; totals open."""
    bounds = STOCHASTIC.bounds(stochastic(cap=5, band=1))  # type: ignore[misc]
    lo, hi = bounds(np.array([0, 1, 3, 5, 6, 9, 3]), np.array([True] * 6 + [False]))
    assert lo.tolist() == [0, 1, 1, 3, 6, 9, 0] and hi.tolist() == [0, 3, 5, 5, 6, 9, np.inf]
    lo, hi = STOCHASTIC.bounds(stochastic(cap=5, band=1, perturb_zeros=True))(np.array([0, 1]), np.ones(2, bool))  # type: ignore[misc]
    assert lo.tolist() == [0, 0] and hi.tolist() == [2, 3]

"""Sums in cubes (Hypothesis): the stored inputs are cellKey's, identity gives the sums back, finer cubes agree.

The cube's inputs of the magnitude perturbation (sum, non-zero key sum, extremes, top contributions)
are compared with :func:`cubeguard.ckm.magnitude.tabulate_magnitudes` on the records, the reference
implementation, for every cell; a cell shared by a coarse and a fine cube has the same inputs in both
(consistency by construction); partial tabulators merge into the single pass.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.magnitude import FlexParams, MagnitudeParams, NumPTable, perturb_magnitudes, tabulate_magnitudes
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.spec import PopulationSpec
from cubeguard.cubes.tabulate import CubePlan, Tabulator
from cubeguard.cubes.values import stored_cells
from tests.hierarchies import breakdown_of, classifications, random_microdata

SETTINGS = settings(max_examples=30, deadline=None)
TOP_K = 3
IDENTITY = NumPTable(
    i=np.array([0.0, 1.0, 5.0]), j=np.array([0.0, 1.0, 5.0]), p=np.ones(3), v=np.zeros(3),
    lb=np.zeros(3), ub=np.ones(3), type=np.array(["all"] * 3),
)  # fmt: skip
PARAMS = MagnitudeParams(
    type="top_contr", top_k=TOP_K, mult=FlexParams(fp=500, p_small=0.3, p_large=0.05, epsilon=(1, 0.5, 0.2), q=3)
)


def _frame(bds: list[Breakdown], n: int, seed: int) -> pd.DataFrame:
    frame = random_microdata(bds, n, seed)
    rng = np.random.default_rng(seed + 1)
    frame["v"] = np.where(rng.random(n) < 0.2, 0, rng.integers(-50, 50, n) * rng.integers(1, 4, n))  # ties, zeros
    return frame


def _tabulator(plans: list[list[Breakdown]]) -> Tabulator:
    cubes = [CubePlan(f"x{k}", tuple(bds), "total", (("v", TOP_K),)) for k, bds in enumerate(plans)]
    return Tabulator(cubes, {"total": PopulationSpec()}, KeyScale(), "rkey", None)


def _tabulated(plans: list[list[Breakdown]], frame: pd.DataFrame, batch: int, first: int = 0) -> Tabulator:
    tab = _tabulator(plans)
    tab.first_row = first
    for start in range(0, max(len(frame), 1), batch):
        tab.add_batch(pa.RecordBatch.from_pandas(frame.iloc[start : start + batch], preserve_index=False))
    return tab


def _members(cube: xr.Dataset, bds: list[Breakdown], frame: pd.DataFrame) -> np.ndarray:
    """Each record's flat position in every cell of ``cube`` it belongs to (its bottom cell and margins)."""
    per_dim = []
    for bd in bds:
        codes = [str(c) for c in cube[bd.id].values]
        parents = [str(p) for p in cube[f"{bd.id}.parent"].values]
        c = bd.classification
        bottom = {c.codes[i]: bd.bottom_codes[bd.leaf_bottom[i]] for i in range(len(c.codes)) if bd.leaf_bottom[i] >= 0}
        chains = []
        for leaf in frame[bd.column]:
            j, chain = codes.index(bottom[leaf]), []
            while True:
                chain.append(j)
                if not parents[j]:
                    break
                j = codes.index(parents[j])
            chains.append(chain)
        per_dim.append(chains)
    stride_b = cube.sizes[bds[1].id]
    rows = [[a * stride_b + b for a in ca for b in cb] for ca, cb in zip(*per_dim, strict=True)]
    width = max(len(r) for r in rows)
    return np.array([r + [-1] * (width - len(r)) for r in rows], dtype=np.int64)


@SETTINGS
@given(a=classifications("A"), b=classifications("B"), n=st.integers(1, 300), seed=st.integers(0, 2**31))
def test_stored_inputs_are_cellkeys_and_the_identity_ptable_gives_the_sums_back(a, b, n, seed) -> None:
    bds = [breakdown_of(a, "A", 1), breakdown_of(b, "B")]
    frame = _frame(bds, n, seed)
    cube = _tabulated([bds], frame, batch=37).cube(0, {"cube_id": "x0"})
    got = stored_cells(cube, "v", KeyScale())
    want = tabulate_magnitudes(_members(cube, bds, frame), cube["count"].size, frame.v, frame.rkey)
    for field in ("sums", "counts", "means", "spreads", "keys", "keys_nz"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    np.testing.assert_array_equal(got.top[:, :TOP_K], want.top[:, :TOP_K])
    np.testing.assert_array_equal(perturb_magnitudes(got, PARAMS, IDENTITY).perturbed, cube["sum.v"].values.ravel())


@SETTINGS
@given(a=classifications("A"), b=classifications("B"), n=st.integers(1, 300), seed=st.integers(0, 2**31))
def test_a_cell_has_the_same_inputs_in_a_coarse_and_a_fine_cube(a, b, n, seed) -> None:
    coarse, fine = [breakdown_of(a, "A", 1), breakdown_of(b, "B", 1)], [breakdown_of(a, "A"), breakdown_of(b, "B")]
    frame = _frame(fine, n, seed)
    tab = _tabulated([coarse, fine], frame, batch=50)
    small, large = tab.cube(0, {"cube_id": "x0"}), tab.cube(1, {"cube_id": "x1"})
    renamed = large.rename({f.id: c.id for c, f in zip(coarse, fine, strict=True)})
    shared = renamed.sel({c.id: small[c.id].values for c in coarse})  # the coarse codes are codes of the fine cube
    assert "sum.v" in small.data_vars
    for name in small.data_vars:
        np.testing.assert_array_equal(small[name].values, shared[name].values, err_msg=str(name))


@SETTINGS
@given(
    a=classifications("A"), b=classifications("B"), n=st.integers(2, 300), seed=st.integers(0, 2**31),
    cut=st.floats(0.0, 1.0),
)  # fmt: skip
def test_partial_tabulators_merge_into_the_single_pass(a, b, n, seed, cut) -> None:
    bds = [breakdown_of(a, "A"), breakdown_of(b, "B", 1)]
    frame = _frame(bds, n, seed)
    k = int(cut * n)
    whole = _tabulated([bds], frame, batch=64)
    first = _tabulated([bds], frame.iloc[:k], batch=64)
    first.merge(_tabulated([bds], frame.iloc[k:], batch=29, first=k))
    for name, array in whole.values[(0, "v")].items():
        np.testing.assert_array_equal(first.values[(0, "v")][name], array, err_msg=name)

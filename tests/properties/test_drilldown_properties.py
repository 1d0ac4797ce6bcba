"""The drill-down of a random cube is the cube's own measures on each (breakdown, level) slice."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.measures import distance, risk
from cubeguard.measures.drilldown import level_measures, level_sums
from tests.strategies import cube_pairs


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@settings(deadline=None, max_examples=60)
@given(pair=cube_pairs(max_dims=3), block_cells=st.integers(1, 60))
def test_each_row_is_the_measures_of_its_slice(pair: tuple[xr.Dataset, xr.Dataset], block_cells: int) -> None:
    o, p = pair
    rows = level_measures(level_sums(o, p, block_cells=block_cells))
    for row in rows.itertuples(index=False):
        at = {row.breakdown: np.flatnonzero(o[f"{row.breakdown}.depth"].values == row.level)}
        so, sp = o["count"].isel(at).values, p["count"].isel(at).values
        assert row.cells == so.size and row.changed == int((so != sp).sum())
        assert _same(row.small_cells_unchanged, risk.small_cells_unchanged(so, sp))
        assert _same(row.average_absolute_distance, distance.average_absolute_distance(so, sp))
        assert _same(row.max_abs_deviation, distance.max_absolute_deviation(so, sp))
        assert _same(row.rad, distance.relative_absolute_distance(so, sp))
    assert set(rows.groupby("breakdown")["cells"].sum()) == {o["count"].size}

"""The drill-down by breakdown and level on a hand-worked 2-dimension cube, read whole and block by block."""

from __future__ import annotations

import doctest

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from cubeguard.measures import drilldown
from cubeguard.measures.drilldown import MEASURE_COLUMNS, level_measures, level_sums, pool_levels
from cubeguard.measures.errors import CubeMismatchError, MeasureConfigError
from tests.strategies import Tree, build_cube, flat_tree, override

# GEO: T > (R1 > x, y), (R2 > z); SEX: T > M, F. Interior (x, y, z) x (M, F): 1 2 / 0 5 / 3 1.
GEO = Tree(("T", "R1", "x", "y", "R2", "z"), (-1, 0, 1, 1, 0, 4), (0, 1, 2, 2, 1, 2))
# Published, cell by cell (rows GEO, columns SEX T, M, F); the original is in the comment.
PUBLISHED = [
    [12, 4, 9],  # T   12 4 8  F +1
    [8, 0, 7],  # R1   8 1 7  M 1 -> 0
    [3, 1, 4],  # x    3 1 2  F 2 -> 4
    [5, 0, 5],  # y    5 0 5
    [6, 3, 1],  # R2   4 3 1  T +2
    [4, 3, 1],  # z    4 3 1
]
NAN = float("nan")
# breakdown, level: cells, changed, small unchanged, AAD, max |p - o|, RAD (worked by hand)
EXPECTED = {
    ("GEO", 0): (3, 1, NAN, 1 / 3, 1, (1 / 8) / 3),  # no small cell; 3 positive cells
    ("GEO", 1): (6, 2, 1 / 2, 3 / 6, 2, (1 / 1 + 2 / 4) / 6),  # smalls R1.M (changed), R2.F
    ("GEO", 2): (9, 1, 2 / 3, 2 / 9, 2, (2 / 2) / 8),  # smalls x.M, x.F (changed), z.F; y.M is 0
    ("SEX", 0): (6, 1, NAN, 2 / 6, 2, (2 / 4) / 6),
    ("SEX", 1): (12, 3, 3 / 5, 4 / 12, 2, (1 / 1 + 1 / 8 + 2 / 2) / 11),  # 5 smalls; y.M is 0
}


def _pair() -> tuple[xr.Dataset, xr.Dataset]:
    original = build_cube({"GEO": GEO, "SEX": flat_tree("T", "M", "F")}, np.array([[1, 2], [0, 5], [3, 1]]))
    assert original["count"].values[:, 0].tolist() == [12, 8, 3, 5, 4, 4]  # the comments above
    return original, override(original, np.array(PUBLISHED))


def _as_table(frame: pd.DataFrame) -> dict[tuple[str, int], tuple[float, ...]]:
    m = level_measures(frame)
    return {(b, int(v)): tuple(row) for b, v, *row in m[["breakdown", "level", *MEASURE_COLUMNS]].itertuples(False)}


def test_hand_worked_cube() -> None:
    sums = level_sums(*_pair())
    assert sums[["breakdown", "level", "codes"]].values.tolist() == [
        ["GEO", 0, 1], ["GEO", 1, 2], ["GEO", 2, 3], ["SEX", 0, 1], ["SEX", 1, 2]
    ]  # fmt: skip
    got = _as_table(sums)
    assert got.keys() == EXPECTED.keys()
    for key, want in EXPECTED.items():
        np.testing.assert_allclose(got[key], want, rtol=1e-12, err_msg=str(key))
    # every breakdown's levels cover the cube once: the same cells and the same changed cells
    per = sums.groupby("breakdown")[["cells", "changed"]].sum()
    assert per["cells"].tolist() == [18, 18] and per["changed"].tolist() == [4, 4]


@pytest.mark.parametrize("block_cells", [1, 3, 7, 1_000])
def test_blocks_give_the_whole_cube_result(block_cells: int) -> None:
    whole = level_sums(*_pair())
    pd.testing.assert_frame_equal(level_sums(*_pair(), block_cells=block_cells), whole)


@pytest.mark.parametrize("chunks", [1, 2, 4, 6])
def test_dask_cubes_give_the_same_result(chunks: int) -> None:
    o, p = _pair()
    lazy = [c.chunk({"GEO": chunks, "SEX": 2}) for c in (o, p)]
    pd.testing.assert_frame_equal(level_sums(*lazy, block_cells=3), level_sums(o, p))


def test_a_cube_computed_as_one_chunk_is_computed_once() -> None:
    o, p = _pair()
    calls: list[int] = []

    def derive() -> np.ndarray:
        calls.append(1)
        return np.asarray(o["count"].values)

    whole = da.from_delayed(dask.delayed(derive, pure=False)(), shape=o["count"].shape, dtype=np.int64)
    lazy = xr.Dataset({"count": (o["count"].dims, whole)}, coords=o.coords)
    pd.testing.assert_frame_equal(level_sums(lazy, p, block_cells=1), level_sums(o, p))
    assert len(calls) == 1


def test_pooling_adds_sums_and_keeps_maxima() -> None:
    sums = level_sums(*_pair())
    twice = pool_levels([sums, sums])
    assert (twice["cells"] == 2 * sums["cells"]).all() and (twice["changed"] == 2 * sums["changed"]).all()
    assert (twice["max_abs_deviation"] == sums["max_abs_deviation"]).all()
    pd.testing.assert_frame_equal(
        level_measures(twice)[["rad", "small_cells_unchanged"]], level_measures(sums)[["rad", "small_cells_unchanged"]]
    )


def test_given_depths_replace_the_cube_coordinates() -> None:
    o, p = _pair()
    flat = np.array([0, 1, 1, 1, 1, 1])  # R1, x, y, R2, z as one level
    got = level_sums(o, p, {"GEO": flat})
    geo = got[got["breakdown"] == "GEO"]
    assert geo["codes"].tolist() == [1, 5] and geo["changed"].tolist() == [1, 3]
    sex = [f[f["breakdown"] == "SEX"].reset_index(drop=True) for f in (got, level_sums(o, p))]
    pd.testing.assert_frame_equal(*sex)


def test_small_counts_can_be_chosen() -> None:
    sums = level_sums(*_pair(), small=[3])  # x.T, z.M (and R2.M): all unchanged
    assert sums.set_index(["breakdown", "level"]).loc[("GEO", 2), ["small", "small_unchanged"]].tolist() == [2, 2]


def test_mistakes_are_named() -> None:
    o, p = _pair()
    with pytest.raises(MeasureConfigError, match=r"depths: unknown dimension\(s\) \['AGE'\]; known: GEO, SEX"):
        level_sums(o, p, {"AGE": [0]})
    with pytest.raises(MeasureConfigError, match=r"give one depth per code .* wrong length for \['GEO \(\(2,\) for 6"):
        level_sums(o, p, {"GEO": [0, 1]})
    with pytest.raises(MeasureConfigError, match=r"a depth is negative for \['SEX'\]"):
        level_sums(o, p, {"SEX": [0, -1, 1]})
    with pytest.raises(CubeMismatchError, match="codes differ between original and protected along SEX"):
        level_sums(o, p.assign_coords(SEX=["T", "F", "M"]))
    with pytest.raises(CubeMismatchError, match="needs xarray cubes"):
        level_sums(np.ones(3), np.ones(3))  # type: ignore[arg-type]


def test_doctests() -> None:
    outcome = doctest.testmod(drilldown)
    assert outcome.attempted > 0 and outcome.failed == 0

"""SAFE on random microdata and random controlled tables (Höhne 2011, model 1 and the bounds of model 3).

The checks are made on the rebuilt microdata with code of their own (pandas group-bys and the real
tabulator), not with SAFE's elementary table: no tabulation over any subset of the variables has a
cell of 1 or 2, every controlled cell is within its final bound, and records, ids and keys stay.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.methods.context import TableSet
from cubeguard.methods.safe import SafeStep, apply
from cubeguard.methods.safe.controlled import weights
from tests.hierarchies import breakdown_of, classifications, leaf_codes, tabulate_frame

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def problems(draw: st.DrawFn) -> tuple[pd.DataFrame, TableSet, list[list[str]]]:
    """Skewed microdata over 2-4 random classifications and 1-4 random controlled tables."""
    n_vars = draw(st.integers(2, 4))
    specs = [draw(classifications(f"V{k}")) for k in range(n_vars)]
    full = [breakdown_of(s, f"V{k}") for k, s in enumerate(specs)]
    coarse = [breakdown_of(s, f"V{k}", 1) for k, s in enumerate(specs)]
    n = draw(st.just(0) | st.integers(3, 300))  # 1 or 2 records cannot be protected (a unit test)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    data = {}
    for bd in full:
        leaves = leaf_codes(bd)
        p = rng.dirichlet(np.full(len(leaves), 0.5))
        data[bd.column] = rng.choice(leaves, n, p=p)
    frame = pd.DataFrame(data)
    frame["pid"] = np.arange(n)
    frame["rkey"] = rng.random(n)
    tables = []
    for _ in range(draw(st.integers(1, 4))):
        chosen = draw(st.lists(st.integers(0, n_vars - 1), min_size=1, max_size=n_vars, unique=True))
        tables.append([(coarse if draw(st.booleans()) else full)[v].id for v in sorted(chosen)])
    cubes = tuple((f"t{i}", tuple(t)) for i, t in enumerate(tables))
    return frame, TableSet({bd.id: bd for bd in full + coarse}, cubes), tables


def _published_levels(frame: pd.DataFrame, bds: list[Breakdown]) -> pd.DataFrame:
    """Each column as the finest category the breakdowns publish: its bottom code in every breakdown of it."""
    out = {}
    for column in {bd.column for bd in bds}:
        mine = [bd for bd in bds if bd.column == column]
        codes = mine[0].classification.codes
        level = {
            code: tuple(int(bd.leaf_bottom[i]) for bd in mine)
            for i, code in enumerate(codes)
            if mine[0].classification.leaf_values[i]
        }
        out[column] = frame[column].map(level)
    return pd.DataFrame(out)


@SETTINGS
@given(problem=problems(), seed=st.integers(0, 2**31))
def test_no_tabulation_of_the_output_has_a_1_or_a_2_and_controlled_cells_keep_their_bound(problem, seed) -> None:
    frame, tables, controlled = problem
    step = SafeStep(seed=seed, window=2, time_limit=5.0).with_tables(tables)
    result = apply(frame, step, seed)
    out = result.data
    columns = result.report["variables"]  # every column the release's tables read, and only those
    assert set(columns) == {tables.breakdowns[b].column for table in controlled for b in table}
    published = _published_levels(out, [tables.breakdowns[b] for table in controlled for b in table])
    for k in range(1, len(columns) + 1):
        for subset in itertools.combinations(columns, k):
            counts = published.groupby(list(subset)).size()
            assert not counts.isin([1, 2]).any(), subset
    final = result.report["final_bounds"]
    for table in controlled:
        bds = [tables.breakdowns[b] for b in table]
        before = tabulate_frame(bds, frame, batch=64).cube(0, {"cube_id": "x"})["count"].values.astype(np.int64)
        after = tabulate_frame(bds, out, batch=64).cube(0, {"cube_id": "x"})["count"].values.astype(np.int64)
        dims = sum(
            (np.arange(len(bd.codes)) != 0).reshape([-1 if i == d else 1 for i in range(len(bds))])
            for d, bd in enumerate(bds)
        )
        b = np.where(dims <= 1, final["one"], final["other"])
        w = np.maximum(weights(before.ravel()).reshape(before.shape) - final["correction_step"], 0)
        assert np.all(np.abs(after - before) < w + b)  # strictly, as Höhne (2011) eq. (2) and (3)
    pd.testing.assert_series_equal(out["pid"], frame["pid"])
    pd.testing.assert_series_equal(out["rkey"], frame["rkey"])
    assert result.report["records"] == len(frame)

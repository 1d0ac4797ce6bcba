"""Properties of the synthetic census for arbitrary sizes, seeds, layouts and row groups."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.synth import codes, generate, layout

HOUSEHOLD_COLUMNS = ["hh_kind", "ce_type", "nuts1", "nuts2", "nuts3", "lau", "loc", "har", "sph", "tph", "tsh"]


@settings(max_examples=25, deadline=None)
@given(
    persons=st.integers(1, 4_000),
    seed=st.integers(0, 2**63 - 1),
    geography=st.sampled_from(["national", "two_regions"]),
    row_groups=st.tuples(st.integers(50, 5_000), st.integers(50, 5_000)),
)
def test_generated_census_invariants(persons: int, seed: int, geography: str, row_groups: tuple[int, int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a = generate(persons, seed, Path(tmp) / "a", geography=geography, row_group_size=row_groups[0])  # type: ignore[arg-type]
        b = generate(persons, seed, Path(tmp) / "b", geography=geography, row_group_size=row_groups[1])  # type: ignore[arg-type]
        ta, tb = pq.read_table(a.path), pq.read_table(b.path)
        meta = pq.ParquetFile(a.path).metadata
    assert ta.equals(tb), "row group size must not change the data"
    assert ta.num_rows == persons == a.persons
    assert meta.num_row_groups == -(-persons // row_groups[0])

    df = ta.to_pandas()
    for c in df.columns:
        if df[c].dtype.name == "category":
            df[c] = df[c].astype(str)
    assert (df.pid.to_numpy() == np.arange(1, persons + 1)).all()
    hid = df.hid.to_numpy()
    first = np.r_[True, hid[1:] != hid[:-1]]
    assert (np.diff(hid) >= 0).all() and (df.is_ref.to_numpy() == first).all()
    assert (df.groupby("hid")[HOUSEHOLD_COLUMNS].nunique() == 1).all().all()
    private = df[df.hh_kind == "P"]
    assert (private.groupby("hid").sph.first() == private.groupby("hid").size()).all()
    for name, allowed in codes.CODE_COLUMNS.items():
        assert set(df[name]) <= set(allowed)
    assert set(df.lau) <= set(layout(geography).lau)  # type: ignore[arg-type]
    assert df.age.between(0, 110).all()
    assert not ((df.cas == "1.1") & (df.age < 15)).any()
    assert ((df.cas == "1.1") == ~df.occ.isin(["12.1", "12.2"])).all()
    assert a.persons_in_ce + a.persons_in_households == persons

"""Tabulation invariants over random hierarchies and microdata (Hypothesis)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.ckm.keys import KeyScale
from cubeguard.cubes.spec import PopulationSpec
from cubeguard.cubes.tabulate import CubePlan, Tabulator
from tests.hierarchies import breakdown_of, classifications, random_microdata, tabulate_frame

SETTINGS = settings(max_examples=40, deadline=None)


@SETTINGS
@given(
    a=classifications("A"),
    b=classifications("B"),
    n=st.integers(0, 400),
    seed=st.integers(0, 2**31),
    depth=st.integers(0, 3),
)
def test_every_margin_is_the_sum_of_its_children(a, b, n, seed, depth) -> None:
    bds = [breakdown_of(a, "A", depth), breakdown_of(b, "B")]
    tab = tabulate_frame(bds, random_microdata(bds, n, seed), batch=97)
    cube = tab.cube(0, {"cube_id": "x"})
    for bd in bds:
        counts = cube["count"]
        keys = cube["key_sum"]
        for code, _parent in zip(bd.codes, bd.parents, strict=True):
            kids = [c for c, p in zip(bd.codes, bd.parents, strict=True) if p == code]
            if not kids:
                continue
            np.testing.assert_array_equal(counts.sel({bd.id: code}).values, counts.sel({bd.id: kids}).sum(bd.id).values)
            summed = keys.sel({bd.id: kids}).values.sum(axis=counts.dims.index(bd.id), dtype=np.uint64)
            np.testing.assert_array_equal(keys.sel({bd.id: code}).values, summed)
    assert int(cube["count"].values.flat[0]) == n  # the grand total comes first in pre-order


@SETTINGS
@given(a=classifications("A"), b=classifications("B"), n=st.integers(1, 400), seed=st.integers(0, 2**31))
def test_bottom_cells_equal_a_pandas_groupby(a, b, n, seed) -> None:
    bds = [breakdown_of(a, "A", 1), breakdown_of(b, "B")]
    frame = random_microdata(bds, n, seed)
    tab = tabulate_frame(bds, frame, batch=50)
    counts, _ = tab.bottom(0)
    # Map each leaf code to its bottom code (its ancestor at the breakdown's bottom level).
    mapped = {}
    for bd in bds:
        c = bd.classification
        bottom = bd.bottom_codes
        mapped[bd.column] = frame[bd.column].map(
            {c.codes[i]: bottom[bd.leaf_bottom[i]] for i in range(len(c.codes)) if bd.leaf_bottom[i] >= 0}
        )
    expected = pd.DataFrame(mapped).value_counts()
    got = {
        (bds[0].bottom_codes[i], bds[1].bottom_codes[j]): counts[i, j] for i, j in zip(*np.nonzero(counts), strict=True)
    }
    assert got == {k: v for k, v in expected.items()}


@pytest.mark.slow
@SETTINGS
@given(
    a=classifications("A"),
    b=classifications("B"),
    n=st.integers(1, 400),
    seed=st.integers(0, 2**31),
    batch=st.integers(1, 200),
)
def test_key_sums_do_not_depend_on_record_order_or_chunking(a, b, n, seed, batch) -> None:
    bds = [breakdown_of(a, "A"), breakdown_of(b, "B", 1)]
    frame = random_microdata(bds, n, seed)
    reference = tabulate_frame(bds, frame, batch=n)
    shuffled = frame.sample(frac=1.0, random_state=seed % 1000).reset_index(drop=True)
    other = tabulate_frame(bds, shuffled, batch=batch)
    np.testing.assert_array_equal(reference.key_sums, other.key_sums)
    np.testing.assert_array_equal(reference.counts, other.counts)


@SETTINGS
@given(
    a=classifications("A"),
    b=classifications("B"),
    n=st.integers(0, 400),
    seed=st.integers(0, 2**31),
    parts=st.integers(2, 5),
    unknown=st.integers(0, 5),
)
def test_record_split_pass_equals_cube_pass(a, b, n, seed, parts, unknown) -> None:
    """Splitting records over threads (few cubes) gives exactly what threads owning cubes give,
    populations, unknown codes and key sums modulo 2**64 included."""
    bds = [breakdown_of(a, "A"), breakdown_of(b, "B", 1)]
    frame = random_microdata(bds, n, seed)
    frame.loc[frame.index[:unknown], bds[0].column] = "not-a-code"
    frame["keep"] = np.random.default_rng(seed).integers(0, 2, len(frame)).astype(str)
    plans = [CubePlan("ab", tuple(bds), "total"), CubePlan("b", (bds[1],), "some")]
    pops = {"total": PopulationSpec(), "some": PopulationSpec(where={"keep": ["1"]})}
    batch = pa.RecordBatch.from_pandas(frame, preserve_index=False)
    results = []
    for split in (1, parts):
        tab = Tabulator(plans, pops, KeyScale(), "rkey", None)
        with mock.patch.object(Tabulator, "_record_parts", return_value=split):
            tab.add_batch(batch)
        results.append(tab)
    one, split_tab = results
    np.testing.assert_array_equal(one.counts, split_tab.counts)
    np.testing.assert_array_equal(one.key_sums, split_tab.key_sums)
    np.testing.assert_array_equal(one.bad, split_tab.bad)
    assert one.bad[0] == min(unknown, n)
    assert one.counts[one.offsets[1] :].sum() == (frame["keep"] == "1").sum()


@SETTINGS
@given(
    a=classifications("A"),
    digits=st.integers(1, 8),
    plain=st.lists(st.floats(0, 1, exclude_max=True), max_size=40),
    halves=st.lists(st.integers(0, 2**8 - 1), min_size=1, max_size=20),
)
def test_cubes_and_the_key_store_turn_a_key_into_one_numerator(a, digits, plain, halves) -> None:
    """Cube kernels and KeyScale.to_fixed (the tables' key store) agree, halves included (key x 10^d = k + 1/2)."""
    exact_halves = [(2 * (j % 2**digits) + 1) / 2 ** (digits + 1) for j in halves]  # key x 10^d is a half
    keys = np.array(plain + exact_halves)
    bds = [breakdown_of(a, "A")]
    frame = random_microdata(bds, len(keys), 0).assign(rkey=keys)
    scale = KeyScale("decimal", digits)
    counts, key_sums = tabulate_frame(bds, frame, batch=len(keys), scale=scale).bottom(0)
    assert int(counts.sum()) == len(keys)
    assert key_sums.sum(dtype=np.uint64) == scale.to_fixed(keys).sum(dtype=np.uint64)


def test_a_half_rounds_to_even_in_cubes_and_tables() -> None:
    scale = KeyScale("decimal", 1)
    assert scale.to_fixed([0.25, 0.75]).tolist() == [2, 8]  # 2.5 and 7.5, halves to even

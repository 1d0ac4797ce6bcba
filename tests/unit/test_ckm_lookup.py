"""Noise lookup: the [p_int_lb, p_int_ub) convention of cellKey, the input checks, and the one-pass published counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.lookup import LookupInputError, lookup_noise, lookup_rows, perturb_counts, published_counts
from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from tests.ckm_tables import HANDBOOK_TABLE

TABLE = HANDBOOK_TABLE  # Handbook on SDC v2, Table 5.16 (tests/ckm_tables.py)


def test_handbook_example() -> None:
    # Table 5.17: three records, cell key 0.8, count 3 -> noise +1, published 4.
    assert lookup_noise([3], [0.8], TABLE).tolist() == [1]
    assert perturb_counts([3], [0.8], TABLE).tolist() == [4]


def test_keys_on_a_bound_take_the_next_interval() -> None:
    # cellKey: first row with ck < ub, so a key equal to ub belongs to the next row.
    counts = np.array([1, 1, 2, 2, 3, 3, 3])
    keys = np.array([0.0, 0.5, 0.7999999999999999, 0.8, 0.3, 0.7, 0.6999999999999999])
    assert lookup_noise(counts, keys, TABLE).tolist() == [-1, 1, 0, 1, 0, 1, 0]
    assert lookup_rows(counts, keys, TABLE).tolist() == [1, 2, 3, 4, 6, 7, 6]


def test_large_counts_use_the_last_block_and_zero_stays_zero() -> None:
    counts = np.array([[0, 0], [3, 10**12]])
    keys = np.array([[0.99, 0.1], [0.95, 0.95]])
    assert lookup_noise(counts, keys, TABLE).tolist() == [[0, 0], [1, 1]]
    assert lookup_rows(counts, keys, TABLE).tolist() == [[-1, -1], [7, 7]]
    assert lookup_noise(np.zeros(0, dtype=np.int64), np.zeros(0), TABLE).shape == (0,)


def test_unsigned_counts_are_accepted() -> None:
    assert lookup_noise(np.array([1, 2], dtype=np.uint32), [0.6, 0.9], TABLE).tolist() == [1, 1]


@pytest.mark.parametrize(
    ("counts", "keys", "message"),
    [
        ([1, 2], [0.5], r"counts have shape \(2,\) but cell keys \(1,\)"),
        ([1.0, 2.0], [0.5, 0.5], "counts must be integers, not float64"),
        ([1, -2], [0.5, 0.5], "counts must not be negative"),
        ([1, 2], [0.5, 1.0], r"cell keys must lie in \[0, 1\)"),
        ([1, 2], [-0.1, 0.5], r"cell keys must lie in \[0, 1\)"),
        ([1, 2], [np.nan, 0.5], "and not be NaN"),
    ],
)
def test_bad_inputs_are_rejected(counts: list[float], keys: list[float], message: str) -> None:
    with pytest.raises(LookupInputError, match=message):
        lookup_noise(counts, keys, TABLE)


D5V3 = create_cnt_ptable(PTableParams(D=5, V=3, js=2))  # many rows per count: buckets with a bound inside


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    scale=st.sampled_from([KeyScale(), KeyScale("decimal", 1), KeyScale("decimal", 3), KeyScale("decimal", 18)]),
    handbook=st.booleans(),
)
def test_published_counts_are_counts_plus_the_looked_up_noise(
    seed: int, n: int, scale: KeyScale, handbook: bool
) -> None:
    # One pass from key sums gives what the cell keys, the lookup and the sum give apart, whatever the scale
    # (one-digit decimal keys land on the p-table's bounds)
    table = HANDBOOK_TABLE if handbook else D5V3
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, table.max_i + 3, n) * rng.integers(0, 2, n)  # zeros, and counts past max i
    key_sums = rng.integers(0, 2**64, n, dtype=np.uint64)
    expected = perturb_counts(counts, scale.cell_keys(key_sums), table)
    np.testing.assert_array_equal(published_counts(counts, key_sums, table, scale.compiled()), expected)


@pytest.mark.parametrize(
    ("counts", "key_sums", "message"),
    [
        ([1, 2], [5], r"counts have shape \(2,\) but key sums \(1,\)"),
        ([1.0, 2.0], [5, 5], "counts must be integers, not float64"),
        ([1, -2], [5, 5], "counts must not be negative"),
    ],
)
def test_published_counts_refuse_bad_inputs(counts: list[float], key_sums: list[int], message: str) -> None:
    with pytest.raises(LookupInputError, match=message):
        published_counts(counts, np.asarray(key_sums, dtype=np.uint64), TABLE, KeyScale().compiled())

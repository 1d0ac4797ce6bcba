"""Noise lookup: the [p_int_lb, p_int_ub) convention of cellKey and the input checks."""

from __future__ import annotations

import numpy as np
import pytest

from cubeguard.ckm.lookup import LookupInputError, lookup_noise, lookup_rows, perturb_counts
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

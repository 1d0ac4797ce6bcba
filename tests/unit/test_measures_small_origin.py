"""small_origin_risk: the largest share of small originals behind one published value, by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from cubeguard.ckm.lookup import perturb_counts
from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
from cubeguard.measures.risk import small_cells_unchanged
from cubeguard.measures.small_origin import small_origin_risk
from cubeguard.report.plots import _label_stack


def test_published_threes_hiding_a_one_and_a_two_by_hand() -> None:
    # published 3 <- originals 1, 2, 3 (2 of 3 small); published 0 <- 0; published 5 <- 5
    assert small_origin_risk([1, 0, 2, 5, 3], [3, 0, 3, 5, 3]) == 2 / 3


def test_a_small_count_published_unchanged_is_certain_and_none_is_zero() -> None:
    assert small_origin_risk([1, 4, 4], [1, 4, 4]) == 1.0
    assert math.isnan(small_origin_risk([4, 7], [5, 7]))  # no small count: nothing to hide
    assert math.isnan(small_origin_risk(np.array([], dtype=np.int64), np.array([], dtype=np.int64)))


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=60))
def test_it_is_a_share_and_at_least_the_overall_share_of_small_cells(pairs: list[tuple[int, int]]) -> None:
    o, p = np.array(pairs).T
    value = small_origin_risk(o, p)
    if not np.isin(o, (1, 2)).any():
        assert math.isnan(value)
        return
    assert 0.0 < value <= 1.0
    assert value >= np.isin(o, (1, 2)).mean() - 1e-12  # the largest group share is at least the mean share


def test_stacked_labels_of_parameter_sets_at_one_point() -> None:
    points = pd.DataFrame({"risk": [0.0, 0.0, 0.0, 0.5], "utility": [0.1, 0.1, 0.1, 0.2]})
    assert _label_stack(points) == [0, 1, 2, 0]


def test_the_cell_key_method_with_js_2_gets_a_risk_where_small_cells_unchanged_is_0() -> None:
    table = create_cnt_ptable(PTableParams(D=5, V=3, js=2))
    rng = np.random.default_rng(11)  # the cells' keys; the statement holds for any draw
    original = rng.integers(0, 12, size=5_000)
    published = perturb_counts(original, rng.random(original.size), table)
    assert small_cells_unchanged(original, published) == 0.0  # js = 2: no 1 or 2 is ever published
    assert 0.0 < small_origin_risk(original, published) < 1.0  # but a published 3 may well hide a 1 or 2

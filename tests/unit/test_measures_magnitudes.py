"""Loss measures of published sums and means (Handbook on SDC v2, 5.8), on hand-worked cells."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr

from cubeguard.measures.magnitudes import KEYS, sum_losses
from cubeguard.report.sums_section import sums_section


def test_hand_worked_cells() -> None:
    # n, m, n-hat, m-hat: a moved mean (5 -> 4), an unchanged one, an empty cell, a cell published empty,
    # a zero sum (no relative deviation of the sum nor of the mean)
    n, m = [2, 1, 0, 3, 2], [10.0, 4.0, 0.0, 30.0, 0.0]
    n_hat, m_hat = [3, 1, 0, 0, 2], [12.0, 4.0, 0.0, 27.0, 0.0]
    out = sum_losses(n, m, n_hat, m_hat)
    assert set(out) == set(KEYS)
    assert math.isclose(out["sum_mean_rel_dev"], (0.2 + 0.0 + 0.1) / 3)
    assert math.isclose(out["sum_max_rel_dev"], 0.2)
    assert out["mean_cells"] == 2  # n-hat = 0 and m = 0 cells have no relative deviation of the mean
    assert math.isclose(out["mean_mean_rel_dev"], 0.1)
    assert math.isclose(out["mean_max_rel_dev"], 0.2)
    assert out["mean_moved_share"] == 0.5


def test_exact_sums_and_counts_lose_nothing_and_no_cell_gives_nan() -> None:
    n = np.array([1, 2, 5])
    m = np.array([30.0, 50.0, 100.0])
    assert sum_losses(n, m, n, m)["mean_max_rel_dev"] == 0.0
    empty = sum_losses([0], [0.0], [0], [0.0])
    assert math.isnan(empty["sum_mean_rel_dev"]) and math.isnan(empty["mean_moved_share"])


def test_the_report_section_shows_a_table_and_a_plot_per_cube_and_column() -> None:
    cube = xr.Dataset({"count": ("A", np.array([3, 2, 1])), "sum.age": ("A", np.array([90.0, 50.0, 40.0]))})
    published = cube.assign({"count": ("A", np.array([3, 3, 0])), "sum.age": ("A", np.array([93.0, 51.0, 40.0]))})
    losses = sum_losses(cube["count"], cube["sum.age"], published["count"], published["sum.age"])
    measures = pd.DataFrame({f"{k}@sum.age": [v] for k, v in losses.items()}, index=["c3"])
    html = sums_section(measures, {("c3", "age"): (cube, published)})
    assert "Sums and means" in html and "c3 age" in html
    assert html.count("<img") == 1
    assert sums_section(measures, {}) == ""

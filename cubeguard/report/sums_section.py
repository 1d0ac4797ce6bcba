"""The report's section on published sums and the means m-hat / n-hat a reader forms from them.

Per cube that publishes sums and per column: the measures of :mod:`cubeguard.measures.magnitudes`
(the relative deviation of the sums over non-zero cells, of the means over cells with n >= 1 and
n-hat >= 1, and the share of means moved by more than 5 %; Handbook on SDC v2, 5.8) as a table, and
a plot of each cell's relative deviation of the mean against its original count, where a reader
sees at once which cells' means to trust. Original values are internal, as the rest of the report.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from cubeguard.cubes.values import sum_name
from cubeguard.measures.magnitudes import KEYS, MOVED, mean_deviations
from cubeguard.report._markup import esc, image, table
from cubeguard.report.plots import DPI, _figure, _png

ANCHOR = "sums-section"
HEADINGS = {
    "sum_mean_rel_dev": "sums: mean relative deviation",
    "sum_max_rel_dev": "sums: largest relative deviation",
    "mean_mean_rel_dev": "means: mean relative deviation",
    "mean_max_rel_dev": "means: largest relative deviation",
    "mean_moved_share": f"means moved by more than {MOVED:.0%}",
    "mean_cells": "cells with a mean",
}
Pairs = Mapping[tuple[str, str], tuple[xr.Dataset, xr.Dataset]]


def loss_table(measures: pd.DataFrame, keys: list[tuple[str, str]]) -> pd.DataFrame:
    """One row per (cube, column) of ``keys`` with its loss measures from the measures table."""
    rows = {
        f"{cube} {column}": {HEADINGS[k]: measures.loc[cube, f"{k}@{sum_name(column)}"] for k in KEYS}
        for cube, column in keys
    }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "cube, column"
    return frame


def plot_mean_deviation(n: np.ndarray, deviation: np.ndarray, title: str, *, dpi: int = DPI) -> bytes:
    """Relative deviation of the mean per cell against the original count (log axes), with the 5 % line."""
    figure = _figure(6.0, 3.2, dpi, (0.11, 0.97, 0.15, 0.9))
    ax = figure.add_subplot()
    shown = deviation > 0
    ax.scatter(n[shown], deviation[shown], s=6, alpha=0.5, linewidths=0)
    ax.axhline(MOVED, color="0.3", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("original count n")
    ax.set_ylabel("|m̂/n̂ − m/n| / |m/n|")
    unchanged = int((~shown).sum())
    ax.set_title(f"{title} ({unchanged:,} cells with an unchanged mean not shown)", fontsize=9)
    return _png(figure)


def sums_section(measures: pd.DataFrame, pairs: Pairs) -> str:
    """HTML of the section for the (cube, column) ``pairs`` (original, protected); empty when there is none."""
    if not pairs:
        return ""
    parts = [
        f'<h2 id="{ANCHOR}">Sums and means</h2>',
        "<p>Cubes that publish the perturbed sums m̂ of a column beside the counts n̂ (cell key method for "
        "magnitudes) are read as means m̂ / n̂. The relative deviation of the sums is taken over cells with a "
        "non-zero original sum, that of the means over cells with n ≥ 1 and n̂ ≥ 1 (Handbook on SDC v2, "
        "5.8).</p>",
        table(loss_table(measures, list(pairs)), caption="Information loss of the published sums and means."),
    ]
    for (cube, column), (original, protected) in pairs.items():
        name = sum_name(column)
        n = np.asarray(original["count"].values, dtype=np.float64).ravel()
        dev, defined = mean_deviations(n, original[name].values, protected["count"].values, protected[name].values)
        keep = defined > 0
        png = plot_mean_deviation(n[keep], dev[keep], f"cube {cube}, mean {column}")
        parts.append(
            image(
                png,
                f"relative deviation of the mean of {column} in cube {cube}",
                f"Cube {esc(cube)}: each cell's relative deviation of the mean of {esc(column)} against its original "
                "count; the dashed line is 5 %.",
            )
        )
    return "".join(parts)
